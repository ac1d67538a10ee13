"""`selfplay play`: a person plays a game in the terminal against a checkpoint or a scripted player.

The person sees exactly the prompt messages a model would see for their role (rules, the
board, and after an invalid move the reason, as the game's invalid-move rules put it), types
an answer, and the game judges it like any model output: the same parsing, the same retries
and the same forfeit. Only one convenience is added: a move typed without its brackets
(``4`` for ``[4]``) is wrapped in them when that makes it an answer.

The trained policy is rebuilt from a run folder's latest checkpoint, or from one checkpoint
folder inside it: the model named in the run's config.yaml, then the checkpoint's weights, or
for a LoRA run its adapters on the same base (one per role when ``lora.per_role``). It plays
greedily, its argmax answer, as in evaluation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.game import Game, GameState
from selfplay.api.policy import Policy, Request, ScriptedPolicy, has_player
from selfplay.api.types import Completion, Payoffs, Role
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import learner_config, learner_roles
from selfplay.core.plan.build import build_game, build_learner, split_spec
from selfplay.core.rollout import match_rng
from selfplay.core.run.folder import checkpoint
from selfplay.core.run.folder.run_folder import read_config
from selfplay.plugins.manager import registries

PROMPT = "your move> "


@dataclass(frozen=True)
class Opponent:
    """Who plays the other roles, and the rules and options the match is played with."""

    policy: Policy
    label: str
    config: RunConfig  # the run's config for a checkpoint; defaults for a scripted player
    roles: tuple[Role, ...] = ()  # a learner of its own: the roles it trained in (else all)


def run_config(folder: Path) -> RunConfig:
    return read_config(folder)


def find_checkpoint(source: Path) -> tuple[Path, Path]:
    """(run folder, checkpoint folder) for a run folder or one of its checkpoint folders.

    A run folder gives its newest complete checkpoint (damaged newer ones are named on
    stderr); a checkpoint folder must itself be complete.
    """
    source = Path(source)
    if (source / checkpoint.STATE).exists() or source.parent.name == "checkpoints":
        folder = source.parent.parent
        if not (folder / "config.yaml").is_file():
            raise ConfigError(
                f"The checkpoint {source} is not inside a run folder (no config.yaml in "
                f"{folder}); pass a checkpoint where `selfplay run` wrote it."
            )
        why = checkpoint.verify(source)
        if why is not None:
            raise checkpoint.CheckpointError(
                f"The checkpoint {source} is damaged ({why}); pass the run folder {folder} "
                "to use its newest complete checkpoint."
            )
        return folder, source
    if (source / "config.yaml").is_file():
        return source, _newest_complete(source)
    raise ConfigError(
        f"{source} is neither a run folder (with config.yaml) nor a checkpoint folder (with "
        "state.ckpt); pass e.g. runs/NAME or runs/NAME/checkpoints/iter-000010."
    )


def load_checkpoint_policy(source: Path, learner: str | None = None) -> Opponent:
    """The learner as saved in ``source`` (a run folder or a checkpoint folder); in a run of
    several learners, the one named ``learner``."""
    import torch

    folder, found = find_checkpoint(source)
    config, key, roles = _chosen_learner(run_config(folder), folder, learner)
    policy = build_learner(config)
    try:
        state = torch.load(found / "state.ckpt", map_location="cpu", weights_only=True)
        if config.lora.enabled:
            _load_adapters(policy, config, state[f"adapters{key}"])
        else:
            policy.model.load_state_dict(state[f"model{key}"])
    except Exception as err:  # EOFError, RuntimeError, UnpicklingError, KeyError, ...
        raise checkpoint.CheckpointError(
            f"Cannot read the checkpoint {found}: {type(err).__name__}: {err}."
        ) from None
    policy.model.eval()
    policy.name = f"checkpoint {found.name}" + (f" {learner}" if key else "")
    return Opponent(policy, f"the policy of {found}{key and f' ({learner})'}", config, roles)


def _chosen_learner(
    config: RunConfig, folder: Path, learner: str | None
) -> tuple[RunConfig, str, tuple[Role, ...]]:
    """The settings, checkpoint key and roles of the learner asked for (``""``: the shared
    policy's ``model``; ``/NAME``: learner NAME's ``model/NAME``)."""
    if not config.learners:
        if learner is not None:
            raise ConfigError(
                f"--learner {learner}: {folder} trained one shared policy, not several "
                "learners; drop --learner."
            )
        return config, "", ()
    names = ", ".join(config.learners)
    if learner not in config.learners:
        said = f"--learner {learner!r} is not one of them" if learner else "pick one"
        raise ConfigError(f"{folder} trained several learners ({names}); {said}: --learner NAME.")
    roles = tuple(learner_roles(learner, config.learners[learner]))
    return learner_config(config, learner), f"/{learner}", roles


def _newest_complete(folder: Path) -> Path:
    found = checkpoint.scan(folder)
    if found.complete:
        if found.damaged:
            print(
                f"note: passing over damaged checkpoints ({found.report()}); using "
                f"{found.complete[0].name}.",
                file=sys.stderr,
            )
        return found.complete[0]
    if found.never:
        raise checkpoint.CheckpointError(
            f"The run folder {folder} has no checkpoint yet; let the run reach its first "
            "checkpoint (checkpoint_every), or pass a checkpoint folder."
        )
    raise checkpoint.CheckpointError(
        f"The run folder {folder} has checkpoints, but none is complete ({found.report()}); "
        "restore one from a backup."
    )


def _load_adapters(policy: Any, config: RunConfig, adapters: dict[str, Any]) -> None:
    """The run's base model, wrapped as in training, with the saved adapters on top."""
    from selfplay.core.models.lora import apply_lora, load_adapter_state_dict, use_adapter

    roles = registries().games.get(config.game).roles
    policy.model = apply_lora(policy.model, config.lora, roles)
    load_adapter_state_dict(policy.model, adapters)
    if config.lora.per_role:
        policy.role_context = lambda role: use_adapter(policy.model, role)


def scripted_opponent(spec: str) -> Opponent:
    kind, player = split_spec(spec)
    if kind != "scripted" or not player:
        raise ConfigError(
            f"--opponent {spec!r}: expected scripted:<player>, e.g. scripted:random "
            "(`selfplay games` lists each game's players)."
        )
    return Opponent(ScriptedPolicy(player), f"the scripted player {player!r}", RunConfig())


class InputEnded(Exception):
    """The person's input ended (Ctrl-D, or piped moves ran out) before the match did."""


class Human(Policy):
    """A person at the terminal: shown each prompt, asked for one answer."""

    def __init__(self, say: Callable[..., None], read: Callable[[str], str]) -> None:
        self.name = "you"
        self.say, self.read = say, read

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        return [Completion(text=r.game.continuation(self._ask(r))) for r in requests]

    def _ask(self, request: Request) -> str:
        self.say(f"\n--- your turn: you are {request.role} ---", style="bold")
        for message in request.messages:
            self.say(f"[{message.role}] {message.content}")
        while True:
            try:
                text = self.read(PROMPT).strip()
            except EOFError:  # Ctrl-D, or the end of piped moves: a way to stop, not an error
                raise InputEnded from None
            if text:
                return bracketed(request.game, text)


def bracketed(game: Game, text: str) -> str:
    """``text``, or ``[text]`` when only the bracketed form is an answer the game can read."""
    if game.answer_pattern.search(text) is None and game.answer_pattern.search(f"[{text}]"):
        return f"[{text}]"
    return text


def play_in_terminal(
    *,
    game_name: str | None,
    source: Path | None = None,
    opponent: str | None = None,
    role: Role | None = None,
    seed: int = 0,
    console: Any,
    read: Callable[[str], str] | None = None,
    learner: str | None = None,
) -> Payoffs:
    """Play one match, the person against a checkpoint (``source``) or a scripted ``opponent``."""
    if (source is None) == (opponent is None):
        raise ConfigError(
            "Name one opponent: a run folder or checkpoint folder (selfplay play runs/NAME), "
            "or a scripted player (--opponent scripted:random)."
        )
    if source is not None:
        rival = load_checkpoint_policy(source, learner)
        game_name = game_name or rival.config.game
    else:
        rival = scripted_opponent(opponent or "")
        if game_name is None:
            raise ConfigError("--game is needed with --opponent, e.g. --game tictactoe.")
    game = _build_game(game_name, rival.config)
    if role is None and rival.roles:  # a learner of its own plays its roles; you, another one
        role = next((r for r in game.roles if r not in rival.roles), None)
    human_role = _human_role(game, role)
    _check_rival(game, rival)

    def say(text: str, style: str | None = None) -> None:
        console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)

    human = Human(say, read or console.input)
    seats = {r: human if r == human_role else rival.policy for r in game.roles}
    say(f"{game.name}: you are {human_role}, playing against {rival.label}.", style="bold")
    try:
        state = _play(game, seats, seed, say)
    except InputEnded:
        say("\nInput ended before the match did: no result.", style="bold")
        return {}
    return _show_result(game, state, human_role, say)


def _build_game(name: str, config: RunConfig) -> Game:
    options = config.game_options if name == config.game else {}
    return build_game(config.model_copy(update={"game": name, "game_options": options}))


def _human_role(game: Game, role: Role | None) -> Role:
    if role is None:
        return game.roles[0]
    if role not in game.roles:
        raise ConfigError(
            f"--as {role!r}: {game.name} has the roles {', '.join(game.roles)}; pick one of them."
        )
    return role


def _check_rival(game: Game, rival: Opponent) -> None:
    policy = rival.policy
    if isinstance(policy, ScriptedPolicy) and not has_player(game, policy.player):
        known = ", ".join(sorted(game.players)) or "none"
        raise ConfigError(
            f"{game.name} has no scripted player {policy.player!r}; its players are: {known}."
        )
    if getattr(policy, "role_context", None) is None:
        return
    trained = registries().games.get(rival.config.game).roles
    if not set(game.roles) <= set(trained):
        raise ConfigError(
            f"This checkpoint has one LoRA adapter per role of {rival.config.game} "
            f"{list(trained)}; it cannot play the roles of {game.name} {list(game.roles)}. "
            f"Play {rival.config.game} with it instead."
        )


def _play(game: Game, seats: dict[Role, Policy], seed: int, say: Callable[..., None]) -> GameState:
    state, rng = game.reset(seed), match_rng(seed)
    while (role := game.to_act(state)) is not None:
        policy = seats[role]
        request = Request(game, state, role, tuple(game.observe(state, role)), rng)
        text = policy.act([request], greedy=True)[0].text
        state, action = game.judge(state, role, text)
        who = "you" if isinstance(policy, Human) else f"{role} ({policy.name})"
        if action is not None:
            say(f"{who} played {action!r}.")
        else:
            say(f"Invalid move by {who}: {text!r}: {state.error}", style="red")
            if state.forfeit is None:
                left = game.rules.allowance - state.retries + 1
                say(f"{left} attempt(s) left at this move, then a forfeit.")
    return state


def _show_result(
    game: Game, state: GameState, human_role: Role, say: Callable[..., None]
) -> Payoffs:
    payoffs = game.outcome(state) or {}
    mine = payoffs.get(human_role, 0.0)
    others = max((v for r, v in payoffs.items() if r != human_role), default=0.0)
    verdict = "you win" if mine > others else "you lose" if mine < others else "a draw"
    if state.forfeit is not None:
        who = "you" if state.forfeit == human_role else state.forfeit
        verdict += f" ({who} forfeited after an invalid move)"
    scores = ", ".join(f"{r} {v:+g}" for r, v in payoffs.items())
    say(f"\nResult: {verdict}. Payoffs: {scores}.", style="bold")
    return payoffs
