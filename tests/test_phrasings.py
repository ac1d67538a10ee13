"""Prompt phrasings that differ by construction: reworded, obfuscated and no-menu, rendered for
every game and game-option set an evaluation suite plays, and a suite that holds one out."""

from __future__ import annotations

import random
import re

import pytest

from selfplay.api.game import NO_MENU, OBFUSCATED, REWORDED, Game, InvalidMoveRules
from selfplay.api.policy import MockPolicy, ScriptedPolicy
from selfplay.core.commands.suites import HostBench, find_suite, run_suite
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import build_game
from selfplay.plugins.manager import registries
from selfplay.testing import check_game

pytest.importorskip("pyspiel")

VARIANTS = (REWORDED, OBFUSCATED, NO_MENU)


def suite_games() -> list[tuple[str, dict]]:
    """Every (game, options) a suite plays: each suite game with its defaults, and with the
    game options of every recipe that trains on it (a run's own options are kept when the
    suite plays the game the run trained on: tic-tac-toe's compact board)."""
    recipes = registries().recipes
    found: list[tuple[str, dict]] = []
    for suite in registries().suites:
        for name in suite.obj.games:
            option_sets: list[dict] = [{}]
            for entry in recipes:
                settings = entry.obj.resolved(recipes.get)
                if settings.get("game") == name:
                    option_sets.append(
                        {
                            k.removeprefix("game_options."): v
                            for k, v in settings.items()
                            if k.startswith("game_options.")
                        }
                    )
            found += [(name, o) for o in option_sets if (name, o) not in found]
    return found


CASES = suite_games()
IDS = [
    f"{name}{'-' + '-'.join(f'{k}={v}' for k, v in o.items()) if o else ''}" for name, o in CASES
]


def built(name: str, options: dict, phrasing: str) -> Game:
    return build_game(RunConfig(game=name, game_options={**options, "phrasing": phrasing}))


def playout(game: Game, actions: list[str] | None = None, seed: int = 3):
    """(prompts, actions, outcome) of a random legal match, or of ``actions`` replayed."""
    rng, state = random.Random(seed), game.reset(seed)
    prompts, played = [], []
    while (role := game.to_act(state)) is not None:
        prompts.append(game.observe(state, role))
        if actions is None:
            answer = rng.choice(game.legal_actions(state, role))
        else:
            answer = game.answer(actions[len(played)])
        state, action = game.judge(state, role, answer)
        assert action is not None, f"{game.name}: {answer!r} was not read as a move"
        played.append(action)
    return prompts, played, game.outcome(state)


def test_the_cases_cover_the_suites_games_and_the_compact_board():
    names = {name for name, _ in CASES}
    assert {"tictactoe", "kuhn-poker", "openspiel:connect_four", "openspiel:nim"} <= names
    assert ("tictactoe", {"compact": True}) in CASES


@pytest.mark.parametrize("phrasing", VARIANTS)
@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_each_phrasing_differs_from_default_in_every_prompt_a_model_reads(name, options, phrasing):
    """Also what a model that drops the system message reads (the tiny one): every user
    message differs; and the same moves, written in the phrasing, play the same match."""
    default, actions, outcome = playout(built(name, options, "default"))
    other, replayed, replayed_outcome = playout(built(name, options, phrasing), actions)
    assert replayed == actions and replayed_outcome == outcome
    for before, after in zip(default, other, strict=True):
        seen = [m.content for m in before if m.role != "system"]
        assert seen != [m.content for m in after if m.role != "system"], (phrasing, seen)


BRACKETED = re.compile(r"\[[^\[\]\n]+\]")


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_no_menu_shows_no_move_in_brackets_and_no_list_of_legal_moves(name, options):
    game = built(name, options, NO_MENU)
    prompts, _, _ = playout(game)
    for messages in prompts:
        text = "\n".join(m.content for m in messages)
        assert not BRACKETED.search(text), text
        assert "Legal" not in text and "legal actions:" not in text.lower()
    # nor does a retry's reason, for an answer without brackets or a wrong one
    lenient = type(game)(game.options, InvalidMoveRules.preset("lenient"))
    state = lenient.reset(3)
    role = lenient.to_act(state)
    for wrong in ("I pass", "[zz-not-a-move]"):
        retried = lenient.step(state, role, wrong)
        assert retried.error and not retried.forfeit
        text = "\n".join(m.content for m in lenient.observe(retried, role))
        assert not BRACKETED.search(text), text


FAMILIAR = {
    "tictactoe": ("tic-tac-toe", "tic tac toe", "noughts"),
    "kuhn-poker": ("kuhn", "poker", "check", "bet", "fold", "call", "card"),
    "openspiel:tic_tac_toe": ("tic-tac-toe", "tic tac toe"),
    "openspiel:connect_four": ("connect", "four in"),
    "openspiel:kuhn_poker": ("kuhn", "poker", "pass", "bet", "jack", "queen", "king"),
    "openspiel:leduc_poker": (
        "leduc",
        "poker",
        "card",
        "jack",
        "queen",
        "king",
        "call",
        "raise",
        "fold",
        "bet",
        "round",
    ),
    "openspiel:liars_dice": ("liar",),
    "openspiel:nim": ("nim", "pile"),
    "openspiel:bargaining": ("bargain", "book", "hat", "basketball", "offer"),
    "openspiel:first_sealed_auction": ("auction", "bid"),
    "openspiel:matrix_pd": ("prisoner", "cooperate", "defect", "dilemma"),
}


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_obfuscated_never_names_the_game_and_refuses_its_own_move_names(name, options):
    game, plain = built(name, options, OBFUSCATED), built(name, options, "default")
    prompts, _, _ = playout(game)
    words = FAMILIAR[name]
    for messages in prompts:
        text = " ".join(m.content for m in messages).lower()
        found = [w for w in words if re.search(rf"\b{re.escape(w)}\b", text)]
        assert not found, f"{name}: the obfuscated prompt says {found}"
    state = game.reset(3)
    role = game.to_act(state)
    for answer in plain.legal_actions(state, role):
        action = plain.action_of(answer, state, role)[0]
        if game.spelled(action) != action:  # the game's own name for it is not a move here
            assert game.action_of(answer, state, role)[0] is None, answer
            assert game.action_of(game.answer(action), state, role)[0] == action


@pytest.mark.parametrize("phrasing", (OBFUSCATED, NO_MENU))
@pytest.mark.parametrize(
    "name",
    [
        "tictactoe",
        "kuhn-poker",
        "openspiel:tic_tac_toe",
        "openspiel:kuhn_poker",
        "openspiel:bargaining",
    ],
)
def test_check_game_holds_under_the_phrasing(name, phrasing):
    options = {"phrasing": phrasing}
    if name.startswith("openspiel:"):
        options["mcts_simulations"] = 4
    check_game(name, matches=12, options=options)


def test_an_openspiel_game_without_a_disguise_refuses_obfuscated_naming_the_ones_it_has():
    from selfplay.api.errors import ConfigError

    with pytest.raises(
        ConfigError, match="no phrasing 'obfuscated'; its phrasings are: default, reworded"
    ):
        build_game(
            RunConfig(game="openspiel:nim(is_misere=false)", game_options={"phrasing": OBFUSCATED})
        )


def test_leduc_obfuscated_refuses_openspiels_own_string_whose_numbers_its_rules_never_explain():
    from selfplay.api.errors import ConfigError

    with pytest.raises(ConfigError, match=r"Leave game_options\.view at readable"):
        built("openspiel:leduc_poker", {"view": "spiel"}, OBFUSCATED)
    assert built("openspiel:leduc_poker", {"view": "spiel"}, REWORDED)  # the others keep it


def test_kuhn_exploitability_is_the_same_table_under_every_phrasing():
    """The table's keys and actions are the game's own, whatever the prompt calls them."""
    from selfplay.games.kuhn_poker import nash_probabilities, strategy_table

    table = {
        k: {a: float(p) for a, p in v.items()}
        for k, v in strategy_table(nash_probabilities).items()
    }
    for phrasing in (*VARIANTS, "default"):
        game = built("kuhn-poker", {}, phrasing)
        assert game.exploitability(table) == pytest.approx(0.0, abs=1e-12)
        assert {i.key for i in game.information_sets()} == set(table)


# ---- a suite holds a phrasing out --------------------------------------------------------------


def test_a_held_out_phrasing_is_reported_apart_with_its_gap():
    """A policy that copies the first move it is shown plays legally only where moves are
    listed: its held-out no-menu figures sit apart, every match forfeited."""

    def first_shown(request):
        shown = re.findall(r"\[[^\[\]]+\]", request.messages[-1].content)
        return shown[0] if shown else "no idea"

    bench = HostBench(MockPolicy(first_shown))
    suite = find_suite("solver")
    report = run_suite(suite, bench, [0], 4, "first shown", ("default", "reworded"), [NO_MENU])
    figures, held = report["figures"], report["held_out"][NO_MENU]
    payoff = "kuhn-poker/payoff_vs_nash"
    assert set(figures[payoff]["values"]) == {"default", "reworded"}
    assert set(held[payoff]["values"]) == {NO_MENU}
    assert held[payoff]["mean"] == -1.5  # nothing shown: every match forfeited
    assert figures[payoff]["mean"] > -1.5
    assert held[payoff]["gap"] == pytest.approx(figures[payoff]["mean"] + 1.5)


def test_a_held_out_phrasing_that_is_also_pooled_is_refused():
    from selfplay.api.errors import ConfigError

    bench = HostBench(ScriptedPolicy("random"))
    with pytest.raises(ConfigError, match="name each phrasing once"):
        run_suite(find_suite("solver"), bench, [0], 2, "x", ("default", "reworded"), ["reworded"])


def test_eval_prints_the_held_out_table(capsys):
    from selfplay.core.commands.cli import main

    args = "eval --suite solver --model tiny --matches 2 --seeds 0 --phrasings default"
    assert main([*args.split(), "--held-out", "obfuscated"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "held out: obfuscated" in out and "gap" in out
