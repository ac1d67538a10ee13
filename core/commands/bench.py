"""The `Bench` (api/tasks.py) a suite receives from `selfplay eval --suite NAME`: its games in
the phrasing measured, greedy seeded matches against scripted players, and the policy's table.

`check_phrasings` refuses a phrasing a suite's game does not ship before the policy loads, so a
misspelt ``--phrasings`` costs no model load and no match.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.game import DEFAULT_PHRASING, Game
from selfplay.api.policy import Policy, ScriptedPolicy
from selfplay.api.tasks import Suite
from selfplay.api.types import Episode, Role


class HostBench:
    """The `Bench` a suite receives: greedy, seeded matches as `selfplay eval` plays them."""

    def __init__(
        self,
        policy: Policy,
        temperature: float = 1.0,
        progress: Callable[[int, int, int], None] | None = None,
        config: Any = None,
        phrasing: str = DEFAULT_PHRASING,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.policy, self.temperature, self.progress = policy, temperature, progress
        self.config = config  # the run's settings, when the policy is a run's
        self.phrasing = phrasing  # every game's prompt wording (game_options.phrasing)
        self.say = say  # hears one line after each batch of matches
        self.notes: list[str] = []  # what the suite told the user (`note`), each once
        self.traces: Any = None  # a TraceWriter (core/commands/traces.py) when every match is kept

    def game(self, name: str) -> Game:
        """The suite's game in the bench's phrasing: with the run's options when the run
        trained on it (the prompt form it learned, e.g. tic-tac-toe's compact board), else
        with its defaults."""
        from selfplay.core.config import RunConfig
        from selfplay.core.plan.build import build_game

        options: dict[str, Any] = {}
        if self.config is not None and self.config.game == name:
            options = dict(self.config.game_options)
        options["phrasing"] = self.phrasing  # whichever wording the run trained under
        return build_game(RunConfig(game=name, game_options=options))

    def matches(
        self,
        game: Game,
        opponent: str,
        matches: int,
        seed: int,
        player: Policy | None = None,
    ) -> list[tuple[Role, Episode]]:
        from selfplay.core.evaluate import eval_seeds
        from selfplay.core.rollout import play, seatings_for

        me = self.policy if player is None else player
        started = time.perf_counter()
        seatings = seatings_for(game, me, ScriptedPolicy(opponent), matches)
        seeds = eval_seeds(game, matches, seed)
        episodes = play(game, seatings, seeds, greedy=True, progress=self.progress)
        roles = [next(r for r, p in s.items() if p is me) for s in seatings]
        played = list(zip(roles, episodes, strict=True))
        if self.traces is not None:
            self.traces.write(game, played, opponent, seed, self.phrasing)
        if self.say is not None:
            who = "the policy" if player is None else getattr(player, "name", "a player")
            self.say(
                f"{game.name} ({self.phrasing}), seed {seed}: {who} vs {opponent}, {matches} "
                f"matches, {time.perf_counter() - started:.1f} s"
            )
        return played

    def note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)
            if self.say is not None:
                self.say(f"note: {line}")

    def table(self, game: Game) -> dict[str, dict[str, float]] | None:
        from selfplay.core.models.policy_table import is_tabular, policy_table
        from selfplay.core.models.served.policy import ServedError, ServedPolicy, Unreachable

        if not is_tabular(game):
            return None
        if isinstance(self.policy, ServedPolicy):  # from the server's log-probabilities
            from selfplay.core.models.served.table import served_table

            try:
                return served_table(self.policy, game, self.temperature)
            except Unreachable:
                raise
            except ServedError as error:
                self.note(f"{game.name}: no policy table, so no exploitability: {error}")
                return None
        if not hasattr(self.policy, "encode"):
            return None
        return policy_table(self.policy, game, self.temperature)


def check_phrasings(suite: Suite, phrasings: Sequence[str]) -> None:
    """A ConfigError naming the game and its phrasings where a game of ``suite`` does not ship
    one of ``phrasings``. A game that cannot be built here (its optional extra missing) is left
    to the suite, which says what it plays without it."""
    from selfplay.core.config import RunConfig
    from selfplay.core.plan.build import build_game
    from selfplay.plugins.registry import PluginError

    for name in suite.games:
        try:
            known = (DEFAULT_PHRASING, *build_game(RunConfig(game=name)).phrasings)
        except PluginError:
            continue
        for phrasing in phrasings:
            if phrasing not in known:
                raise ConfigError(
                    f"{name} has no phrasing {phrasing!r}; its phrasings are: "
                    f"{', '.join(known)} (suite {suite.name}: --phrasings, --held-out)."
                )
