"""TextArena environments played through the adapter (skipped when the extra is absent)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from selfplay.api.game import InvalidMoveRules
from selfplay.core.commands.cli import main
from selfplay.games.textarena.adapter import game_class
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.manager import registries
from selfplay.plugins.registry import PluginError, UnknownName
from selfplay.testing import check_game, random_playout


@pytest.fixture
def textarena():
    return pytest.importorskip("textarena")


def make(env_id: str, rules: InvalidMoveRules | None = None, **options):
    return registries().games.get(f"textarena:{env_id}")(options, rules)


@pytest.mark.parametrize(
    ("env_id", "matches"),
    [("TicTacToe-v0", 60), ("KuhnPoker-v0", 60), ("IteratedRockPaperScissors-v0", 20)],
)
def test_two_player_games_keep_the_game_contract(textarena, env_id, matches):
    report = check_game(f"textarena:{env_id}", matches=matches, seed=1)
    assert report.game == f"textarena:{env_id}"
    assert report.matches == matches
    assert report.forfeits < matches // 2  # random legal play mostly ends by the rules


def test_invalid_move_gets_textarenas_reason_then_our_retry_and_forfeit(textarena):
    game = make("TicTacToe-v0", InvalidMoveRules(allowance=1, penalty=-2.0, bonus=0.5))
    state = game.step(game.reset(0), "player_0", "I take the centre: [4]")
    retry = game.step(state, "player_1", "[4]")
    assert (retry.turn, retry.retries, game.to_act(retry)) == (1, 1, "player_1")
    assert retry.error == "cell 4 is already occupied."
    assert game.observe(retry, "player_1")[-1].content.startswith("Invalid move: cell 4")
    lost = game.step(retry, "player_1", "no brackets at all")
    assert lost.forfeit == "player_1"
    assert game.outcome(lost) == {"player_0": 0.5, "player_1": -2.0}


def test_options_reach_the_environment_and_the_prompt(textarena):
    poker = make("KuhnPoker-v0", env_options={"max_rounds": 1})
    assert "in a 1 round game of Kuhn Poker" in poker.observe(poker.reset(0), "player_0")[0].content
    game = make("TicTacToe-v0", last_messages=1)
    state = game.step(game.reset(0), "player_0", "[4]")
    user = game.observe(state, "player_1")[-1].content
    assert user.startswith("GAME: Current Board") and "Player 0: [4]" not in user
    assert "Player 0: [4]" in make("TicTacToe-v0").observe(state, "player_1")[-1].content


def test_chance_replays_from_the_seed_and_leaves_the_global_rng_alone(textarena):
    first, second = make("KuhnPoker-v0"), make("KuhnPoker-v0")
    random.seed(11)
    before = random.getstate()
    deals = {seed: first.observe(first.reset(seed), "player_0")[-1].content for seed in range(8)}
    assert random.getstate() == before
    assert len(set(deals.values())) > 1  # the deal depends on the seed ...
    for seed, seen in deals.items():  # ... and a fresh game object deals the same cards
        assert second.observe(second.reset(seed), "player_0")[-1].content == seen


def test_a_state_replays_on_a_game_that_never_saw_it(textarena):
    played = random_playout(make("KuhnPoker-v0"), seed=5)
    stranger = make("KuhnPoker-v0")
    stranger.envs.size = 1  # every position must be rebuilt by replaying its actions
    for state in played.states:
        again = stranger.state_from_json(state.to_json())
        assert stranger.outcome(again) == make("KuhnPoker-v0").outcome(state)
    assert stranger.outcome(played.states[-1]) == played.outcome


def test_games_for_other_player_counts_are_refused_by_name(textarena):
    with pytest.raises(PluginError, match=r"'GuessTheNumber-v0' is not a 2-player .* accepts 1 "):
        registries().games.get("textarena:GuessTheNumber-v0")
    with pytest.raises(PluginError, match=r"'Taboo-v0' is not a 2-player .* accepts 4"):
        registries().games.get("textarena:Taboo-v0")


def test_unknown_id_suggests_the_close_ones(textarena):
    with pytest.raises(UnknownName, match=r"no environment 'TicTacToe'. Did you mean TicTacToe-v0"):
        registries().games.get("textarena:TicTacToe")


def test_games_lists_textarena_ids(textarena, capsys):
    assert main(["games", "--textarena", "--json"]) == 0
    names = json.loads(capsys.readouterr().out)
    assert {"textarena:TicTacToe-v0", "textarena:KuhnPoker-v0"} <= set(names)
    assert len(names) > 100
    # one-player environments, which a run refuses, are not offered
    assert not {"textarena:GuessTheNumber-v0", "textarena:2048-v0"} & set(names)
    assert main(["games", "--json"]) == 0  # in the whole listing too, marked with the family
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(names) <= set(rows) and rows["textarena:TicTacToe-v0"]["family"] == "textarena"
    assert main(["games"]) == 0  # the text listing says how many and where to find them
    out = " ".join(capsys.readouterr().out.split())
    assert f"any of TextArena's {len(names)} two-player environments" in out
    assert "selfplay games --textarena" in out


def test_missing_extra_names_the_pip_command(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textarena", None)  # import textarena now fails
    game_class.cache_clear()  # forget classes made by earlier tests
    assert main(["games", "--textarena"]) == 2
    assert "pip install 'selfplay-rl[textarena]'" in " ".join(capsys.readouterr().err.split())
    with pytest.raises(PluginError, match="optional extra"):
        registries().games.get("textarena:TicTacToe-v0")


def test_textarena_is_imported_only_when_such_a_game_is_used():
    code = (
        "import sys; from selfplay.plugins.manager import registries; "
        "games = registries().games; assert 'tictactoe' in games.entries; "
        "print('textarena' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_short_training_run(textarena, tmp_path):
    args = ["run", "--game", "textarena:TicTacToe-v0", "--cold-start", "0"]
    args += ["--set", "eval.matches=2", "--iterations", "1", "--matches", "4"]
    assert main([*args, "--out", str(tmp_path), "--name", "ta", "--seed", "2"]) == 0
    lines = (tmp_path / "ta" / "episodes.jsonl").read_text().splitlines()
    episodes = [json.loads(line) for line in lines]
    assert len(episodes) == 4
    assert {ep["game"] for ep in episodes} == {"textarena:TicTacToe-v0"}


def test_our_tictactoe_agrees_with_textarenas(textarena):
    """Same legality, same player to move and the same winner on random move sequences."""
    rules = InvalidMoveRules(allowance=100)
    ours, theirs = TicTacToe(rules=rules), make("TicTacToe-v0", rules)
    rng = random.Random(7)
    for seed in range(300):
        a, b = ours.reset(seed), theirs.reset(seed)
        while (role := ours.to_act(a)) is not None:
            assert theirs.to_act(b) == role
            text = f"[{rng.choice(range(-1, 11))}]"
            valid_ours = ours.action_of(text, a, role)[0] is not None
            valid_theirs = theirs.action_of(text, b, role)[0] is not None
            assert valid_ours == valid_theirs, (seed, a.board, text)
            if valid_ours:
                a, b = ours.step(a, role, text), theirs.step(b, role, text)
        assert theirs.to_act(b) is None
        assert theirs.outcome(b) == ours.outcome(a), (seed, a.board)


def test_a_long_history_keeps_only_its_most_recent_messages_in_the_prompt(textarena):
    from selfplay.games.textarena.adapter import _recent

    lines = [f"GAME: round {i} " + "x" * 40 for i in range(100)]
    kept = _recent(lines, 500)
    assert kept[0] == "(the 92 earlier game messages are left out)" and kept[-1] == lines[-1]
    assert kept[1:] == lines[-8:] and sum(len(line) + 1 for line in kept[1:]) <= 500  # 56 each
    assert _recent(lines[:3], 500) == lines[:3]
    cut = _recent(["y" * 900], 500)
    assert cut[0] == "(the 0 earlier game messages and the start of this one are left out)"
    assert cut[1:] == ["y" * 500]

    everything, bounded = make("Poker-v0", history_chars=0), make("Poker-v0")
    state = random_playout(everything, seed=3).states[-2]  # the last position with a move
    role = everything.to_act(state) or "player_0"
    full = everything.observe(state, role)[-1].content
    short = bounded.observe(state, role)[-1].content
    assert len(full) > 2000 >= len(short.split("\n", 1)[1]) and full.endswith(short[-500:])
