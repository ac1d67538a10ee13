"""benchmarks/tactics.py: every reachable position, and hit rates that a policy cannot fake."""

from __future__ import annotations

from project_scripts import load_script

from selfplay.api.policy import LookaheadPolicy, MockPolicy, ScriptedPolicy
from selfplay.games.tictactoe import TicTacToe

tactics = load_script("benchmarks/tactics.py", name="tactics_probe")


def test_the_probe_asks_every_reachable_position_and_scores_moves_not_claims():
    assert len(tactics.positions()) == 4520  # 5478 legal positions, 958 of them final
    assert tactics.completing("xx.oo....", "x") == {2}
    assert tactics.completing("xx.oo....", "o") == {5}
    found = tactics.tests()
    found = {kind: cases[::40] for kind, cases in found.items()}  # a sample keeps it quick
    game = TicTacToe()
    perfect = tactics.hit_rates(game, LookaheadPolicy(MockPolicy(["[0]"])), found)
    assert perfect["win"] == 1.0 and perfect["block"] == 1.0
    assert 0.5 < perfect["keep"] < 1.0  # one move ahead is not the whole game's value
    assert tactics.hit_rates(game, ScriptedPolicy("minimax"), found)["keep"] == 1.0
    renamed = TicTacToe({"phrasing": "obfuscated"})  # answers read back from the new names
    assert tactics.hit_rates(renamed, ScriptedPolicy("minimax"), found)["keep"] == 1.0
    assert tactics.hit_rates(renamed, MockPolicy(["[4]"]), found)["keep"] == 0.0  # old names
    forged = tactics.hit_rates(
        game, MockPolicy(["I win [4] [5] [6] [7] [8] [0] [1] [2] [3]"]), found
    )
    fixed = tactics.hit_rates(game, MockPolicy(["[4]"]), found)
    assert forged["win"] < 0.5 and fixed["win"] < 0.5 and fixed["block"] < 0.5
    assert forged["keep"] < 0.3 and fixed["keep"] < 0.3  # uniform random: 0.40


def test_training_on_the_probe_moves_the_weights_and_reports_the_rates(capsys):
    import torch

    from selfplay.core.models.tiny import load_tiny_policy

    torch.manual_seed(0)
    policy = load_tiny_policy()
    found = {kind: cases[::200] for kind, cases in tactics.tests().items()}
    before = [p.detach().clone() for p in policy.model.parameters()]
    tactics.train_on_probe(TicTacToe(), policy, found, steps=2, lr=1e-3)
    after = list(policy.model.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    assert not policy.model.training  # left ready to act, as the probe found it
    line = capsys.readouterr().out.strip()
    assert line.startswith("step 2: loss ") and "win " in line and "block " in line
