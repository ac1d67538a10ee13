"""OpenSpiel games played through the adapter (skipped when the extra is absent)."""

from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import sys
from fractions import Fraction

import pytest

pytest.importorskip("pyspiel")

from selfplay.api.errors import ConfigError
from selfplay.api.game import InvalidMoveRules, TabularGame, answer_text
from selfplay.core.commands.cli import main
from selfplay.games import kuhn_poker as kuhn
from selfplay.games.openspiel.adapter import DOCUMENTED, OpenSpielState, game_class
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.manager import registries
from selfplay.plugins.registry import PluginError
from selfplay.testing import check_game, scripted_playout

CARD = {"J": 0, "Q": 1, "K": 2}


def make(name: str, rules: InvalidMoveRules | None = None, **options):
    return registries().games.get(f"openspiel:{name}")(options, rules)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_documented_games_keep_the_game_contract(name):
    report = check_game(f"openspiel:{name}", matches=40, seed=1, options={"mcts_simulations": 8})
    assert report.game == f"openspiel:{name}" and report.matches == 40
    assert report.forfeits < 30  # random legal play mostly ends by the rules


def test_which_games_are_tabular_and_which_general_sum():
    tabular = {name for name in DOCUMENTED if isinstance(make(name), TabularGame)}
    assert tabular == {"kuhn_poker", "leduc_poker"}
    assert len(make("kuhn_poker").information_sets()) == 12
    assert len(make("leduc_poker").information_sets()) == 936
    assert not make("bargaining").zero_sum and make("kuhn_poker").zero_sum
    assert "mcts" not in make("liars_dice").players  # cannot resample hidden dice
    assert {"random", "mcts"} <= set(make("tic_tac_toe").players)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_legal_action_has_an_answer_text_for_choosing_among_them(name):
    """generation.choice=legal and objective=legal-pg score each legal answer's text."""
    game = make(name)
    state = game.reset(0)
    role = game.to_act(state)
    for move in game.legal_actions(state, role):
        action = game.action_of(move, state, role)[0]
        assert answer_text(game, action) == move


def _kuhn_state(game, cards):
    return game._after_chance(OpenSpielState(seed=0, history=(CARD[cards[0]], CARD[cards[1]])))


def _spiel_action(history, move):
    return {"check": "Pass", "fold": "Pass", "bet": "Bet", "call": "Bet"}[move]


def test_kuhn_payoffs_agree_with_ours_for_every_deal_and_betting_line():
    game = make("kuhn_poker")
    lines = [("check", "check"), ("check", "bet", "call"), ("check", "bet", "fold")]
    lines += [("bet", "call"), ("bet", "fold")]
    for cards in itertools.permutations(kuhn.CARDS, 2):
        for line in lines:
            state = _kuhn_state(game, cards)
            for k, move in enumerate(line):
                role = kuhn.role_to_act(line[:k])
                assert game.to_act(state) == role
                assert len(game.legal_actions(state, role)) == len(kuhn.legal_moves(line[:k]))
                state = game.step(state, role, f"[{_spiel_action(line[:k], move)}]")
            assert game.to_act(state) is None
            assert game.outcome(state) == kuhn.payoffs(cards, line), (cards, line)


def _ours_history(actions):
    history: list[str] = []
    for action in actions:
        after_bet = history[-1:] == ["bet"]
        history.append(("fold" if after_bet else "check") if action == "Pass" else "")
        if action == "Bet":
            history[-1] = "call" if after_bet else "bet"
    return tuple(history)


def _as_adapter_table(game, strategy):
    """``strategy`` (ours) as a table over the adapter's information sets."""
    table = {}
    for info in game.information_sets():
        role_index = int(info.role[-1])
        card = kuhn.CARDS[info.state.history[role_index]]
        names = {0: "Pass", 1: "Bet"}
        history = _ours_history([names[a] for a in info.state.history[2:]])
        probs = strategy(card, history, info.role)
        bet = "call" if history[-1:] == ("bet",) else "bet"
        table[info.key] = {"Bet": float(probs.get(bet, 0)), "Pass": 1 - float(probs.get(bet, 0))}
    return table


@pytest.mark.parametrize("alpha", [None, Fraction(0), Fraction(1, 6), Fraction(1, 3)])
def test_kuhn_exploitability_matches_ours(alpha):
    if alpha is None:
        strategy = kuhn.uniform_probabilities
    else:
        strategy = lambda card, history, role: kuhn.nash_probabilities(card, history, role, alpha)  # noqa: E731
    ours = kuhn.KuhnPoker().exploitability(kuhn.strategy_table(strategy))
    game = make("kuhn_poker")
    theirs = game.exploitability(_as_adapter_table(game, strategy))
    assert theirs == pytest.approx(ours, abs=1e-9)
    if alpha is not None:
        assert theirs == pytest.approx(0, abs=1e-9)


def test_tictactoe_agrees_with_ours():
    """Same player to move, same legal cells and the same outcome on random move sequences."""
    ours, theirs = TicTacToe(), make("tic_tac_toe")
    rng = random.Random(7)
    for seed in range(100):
        a, b = ours.reset(seed), theirs.reset(seed)
        while (role := ours.to_act(a)) is not None:
            assert theirs.to_act(b) == role
            mark = ours_mark = "x" if role == "player_0" else "o"
            cells = [int(m.strip("[]")) for m in ours.legal_actions(a, role)]
            spelled = [f"[{mark}({i // 3},{i % 3})]" for i in cells]
            assert spelled == theirs.legal_actions(b, role), (seed, a.board)
            cell = rng.choice(cells)
            a = ours.step(a, role, f"[{cell}]")
            b = theirs.step(b, role, f"[{ours_mark}({cell // 3},{cell % 3})]")
        assert theirs.to_act(b) is None
        assert theirs.outcome(b) == ours.outcome(a), (seed, a.board)


def test_a_malformed_reply_goes_through_the_invalid_move_rules():
    game = make("kuhn_poker", InvalidMoveRules(allowance=1, penalty=-2.0, bonus=0.5))
    state = game.reset(0)
    retry = game.step(state, "player_0", "I think I will bet here")
    assert (retry.turn, retry.retries, game.to_act(retry)) == (0, 1, "player_0")
    assert "no answer in the form" in retry.error
    assert game.observe(retry, "player_0")[-1].content.startswith("Invalid move:")
    lost = game.step(retry, "player_0", "[Raise]")
    assert lost.forfeit == "player_0" and "[Pass] [Bet]" in lost.error
    assert game.outcome(lost) == {"player_0": -2.0, "player_1": 0.5}
    # case and spacing do not matter; the last bracketed span counts
    assert game.action_of("[pass] no, [ BET ]", state, "player_0") == ("Bet", None)


def test_the_prompt_shows_rules_information_state_and_legal_actions():
    game = make("leduc_poker")
    system, user = game.observe(game.reset(4), "player_0")
    assert system.content.startswith("Leduc poker.") and "square brackets" in system.content
    assert "Round 1 bets: none yet\nPublic card: not dealt yet\nYour card: " in user.content
    assert "number // 2" not in system.content  # the note on OpenSpiel's string: not shown
    assert user.content.endswith("Legal actions: [Call] [Raise]")
    spiel = make("leduc_poker", view="spiel")
    system, user = spiel.observe(spiel.reset(4), "player_0")
    assert "[Observer: 0][Private:" in user.content and "number // 2" in system.content
    board = make("tic_tac_toe").observe(make("tic_tac_toe").reset(0), "player_0")[-1].content
    assert "...\n...\n..." in board  # a perfect-information game shows its observation


@pytest.mark.parametrize("name", ["leduc_poker", "leduc_poker(players=3)"])
def test_the_readable_view_is_the_information_state_in_words(name):
    """One prompt per information set, a different one for each up to the cards' suits (which
    Leduc's rules never read): nothing hidden is shown, nothing the player knows is lost."""
    game = make(name)
    prompt_of: dict[str, str] = {}
    for seed in range(300):
        state = game.reset(seed)
        while (role := game.to_act(state)) is not None:
            position, player = game.position(state), game.roles.index(role)
            key = position.information_state_string(player)
            shown = game.observe(state, role)[-1].content
            assert prompt_of.setdefault(key, shown) == shown, key
            state = game.step(
                state, role, random.Random(seed).choice(game.legal_actions(state, role))
            )
    by_rank = {re.sub(r"(Private|Public): (\d+)", suitless, k) for k in prompt_of}
    assert len(set(prompt_of.values())) == len(by_rank) > 70
    cards = {p.rsplit("Your card: ", 1)[1].split("\n")[0] for p in prompt_of.values()}
    assert cards == (
        {"Jack", "Queen", "King", "Ace"} if "players=3" in name else {"Jack", "Queen", "King"}
    )


def suitless(card: re.Match) -> str:
    return f"{card[1]}: rank {int(card[2]) // 2}"


def test_chance_replays_from_the_seed_and_leaves_the_global_rng_alone():
    first, second = make("leduc_poker"), make("leduc_poker")
    random.seed(11)
    before = random.getstate()
    deals = {seed: first.reset(seed).history for seed in range(12)}
    assert random.getstate() == before
    assert len(set(deals.values())) > 1
    assert all(second.reset(seed).history == deal for seed, deal in deals.items())
    # the public card, drawn mid-match, replays too
    one = scripted_playout(first, dict.fromkeys(first.roles, "random"), seed=3)
    two = scripted_playout(second, dict.fromkeys(second.roles, "random"), seed=3)
    assert one.snapshots == two.snapshots


def test_leducs_rank_player_plays_its_hand():
    game = make("leduc_poker")
    rank = game.players["rank"]

    def move(*history: int) -> str:  # cards: player 0's, player 1's, then the bets
        state = OpenSpielState(seed=0, history=history)
        return rank(game, state, game.to_act(state), random.Random(0))

    assert move(4, 0) == "[Raise]"  # a King before the public card
    assert move(2, 0) == "[Call]"  # a Queen
    assert move(0, 4) == "[Call]"  # a Jack checks when nobody has raised
    assert move(4, 0, 2) == "[Fold]"  # and folds to a raise (player 1 holds the Jack)
    # round 2, the public card a Queen (3): a Jack checks, a King that missed calls, a pair raises
    assert move(0, 2, 1, 1, 3) == "[Call]"
    assert move(4, 0, 1, 1, 3) == "[Call]"
    assert move(0, 2, 1, 1, 3, 2) == "[Raise]"  # player 1's Queen pairs it, facing a raise
    table = {}
    for info in game.information_sets():
        answer = rank(game, info.state, info.role, random.Random(0)).strip("[]")
        table[info.key] = {a: float(a == answer) for a in info.actions}
    assert game.exploitability(table) == pytest.approx(2 / 3)


def test_mcts_beats_random_at_tictactoe():
    game = make("tic_tac_toe", mcts_simulations=60)
    results = [
        scripted_playout(game, {"player_0": "mcts", "player_1": "random"}, seed).outcome
        for seed in range(6)
    ]
    assert all(r["player_0"] >= 0 for r in results)


def test_simultaneous_games_play_turn_by_turn_hiding_the_first_move():
    game = make("matrix_pd")
    assert not game.zero_sum and game.roles == ("player_0", "player_1")
    state = game.step(game.reset(0), "player_0", "[Defect]")
    assert "Defect" not in game.observe(state, "player_1")[-1].content.split("Legal")[0]
    done = game.step(state, "player_1", "[Cooperate]")
    assert game.outcome(done) is not None and game.to_act(done) is None


def test_parameters_in_openspiels_syntax():
    game = make("leduc_poker(players=3)")
    assert game.roles == ("player_0", "player_1", "player_2")
    assert game.name == "openspiel:leduc_poker(players=3)"
    assert not isinstance(game, TabularGame)


def test_bad_names_exit_2_naming_them(capsys, tmp_path):
    assert main(["run", "--game", "openspiel:kuhn_pokr", "--out", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no game 'kuhn_pokr'" in err and "kuhn_poker" in err
    assert "selfplay games --openspiel" in err
    assert main(["run", "--game", "openspiel:leduc_poker(players=x)", "--out", str(tmp_path)]) == 2
    assert "could not load 'leduc_poker(players=x)'" in capsys.readouterr().err


def test_openspiels_own_error_lines_stay_off_the_terminal(capfd, tmp_path):
    """A probe that expects OpenSpiel to refuse (goofspiel cannot resample, so it has no
    `mcts`), and a game string it cannot load, print nothing of OpenSpiel's own C++ text."""
    game_class.cache_clear()
    game = make("goofspiel(num_cards=3)")
    assert "mcts" not in game.players and isinstance(game, TabularGame)  # exact exploitability
    assert main(["run", "--game", "openspiel:goofspiel(bogus=3)", "--out", str(tmp_path)]) == 2
    err = capfd.readouterr().err
    assert "OpenSpiel exception" not in err
    assert err.startswith("error: OpenSpiel could not load 'goofspiel(bogus=3)'")


def test_a_game_without_exact_exploitability_names_those_with_it():
    from selfplay.core.commands.checkpoint_eval import _exploitability

    with pytest.raises(ConfigError, match=r"goofspiel\(num_cards=3\)"):
        _exploitability(make("liars_dice"), None, None, None)


def test_a_prompt_over_the_limit_stops_the_run_naming_the_sizes(capsys, tmp_path):
    with pytest.raises(ConfigError, match=r"is \d+ characters .*max_prompt_chars=200"):
        make("bargaining", max_prompt_chars=200)
    args = ["run", "--game", "openspiel:bargaining", "--out", str(tmp_path)]
    assert main([*args, "--set", "game_options.max_prompt_chars=300"]) == 2
    assert "max_prompt_chars=300" in capsys.readouterr().err


def test_games_lists_openspiel(capsys):
    assert main(["games", "--openspiel", "--json"]) == 0
    names = json.loads(capsys.readouterr().out)
    assert {f"openspiel:{name}" for name in DOCUMENTED} <= set(names)
    assert main(["games"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "openspiel:kuhn_poker" in out and "selfplay games --openspiel" in out
    # a script reading the JSON finds them too, marked with their family
    assert main(["games", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {f"openspiel:{name}" for name in DOCUMENTED} <= set(rows)
    assert rows["openspiel:kuhn_poker"]["family"] == "openspiel"
    assert rows["openspiel:kuhn_poker"]["roles"] is None  # read when the game is loaded
    assert rows["tictactoe"]["family"] is None and rows["tictactoe"]["roles"]


def test_missing_extra_names_the_pip_command(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # import pyspiel now fails
    game_class.cache_clear()  # forget classes made by earlier tests
    assert main(["games", "--openspiel"]) == 2
    assert 'pip install "selfplay-rl[openspiel]"' in " ".join(capsys.readouterr().err.split())
    with pytest.raises(PluginError, match="optional extra"):
        registries().games.get("openspiel:kuhn_poker")
    assert main(["games"]) == 0
    assert "selfplay-rl[openspiel]" in " ".join(capsys.readouterr().out.split())
    assert main(["games", "--json"]) == 0  # the other games still listed, none of OpenSpiel's
    names = [row["name"] for row in json.loads(capsys.readouterr().out)]
    assert "tictactoe" in names and not any(n.startswith("openspiel:") for n in names)
    game_class.cache_clear()


def test_openspiel_is_imported_only_when_such_a_game_is_used():
    code = (
        "import sys; from selfplay.plugins.manager import registries; "
        "games = registries().games; assert 'tictactoe' in games.entries; "
        "print('pyspiel' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_short_training_run(tmp_path):
    args = ["run", "--game", "openspiel:kuhn_poker", "--cold-start", "0"]
    args += ["--set", "eval.matches=2", "--iterations", "1", "--matches", "4"]
    assert main([*args, "--out", str(tmp_path), "--name", "osp", "--seed", "2"]) == 0
    lines = (tmp_path / "osp" / "episodes.jsonl").read_text().splitlines()
    episodes = [json.loads(line) for line in lines]
    assert len(episodes) == 4
    assert {ep["game"] for ep in episodes} == {"openspiel:kuhn_poker"}
    metrics = (tmp_path / "osp" / "metrics.csv").read_text()
    assert "exploitability/last" in metrics  # the league measures the tabular game exactly
