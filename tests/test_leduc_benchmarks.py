"""benchmarks/leduc_tabular.py and leduc_card_use.py: the two figures behind "the policy never
read its card" (benchmarks/RESULTS.md). Skipped without the OpenSpiel extra."""

from __future__ import annotations

import argparse

import pytest
from project_scripts import load_script

pytest.importorskip("pyspiel")


tabular = load_script("benchmarks/leduc_tabular.py")
card_use = load_script("benchmarks/leduc_card_use.py")


def settings(blind: bool) -> argparse.Namespace:
    return argparse.Namespace(
        matches=512, iterations=15, minibatch=256, epochs=1, kl_coef=0.5,
        reference_update=0.05, report=[1, 15], blind=blind, start_probs=None,
    )  # fmt: skip


def test_the_table_learns_leduc_and_the_card_blind_table_cannot():
    full = tabular.run(0, 0.1, settings(blind=False))
    blind = tabular.run(0, 0.1, settings(blind=True))
    assert full[15] < 1.6 < tabular.UNIFORM - 0.5  # measured 1.38 on seed 0
    assert blind[15] > 2.0  # measured 2.08: the update leaves a card-blind table in the band
    assert full[1] > 2.2 and blind[1] > 2.2


def test_card_distance_and_the_table_with_the_card_taken_out():
    def key(card: int, history: str) -> str:
        return f"player_0|[Observer: 0][Private: {card}][Round 1]{history}"

    same = {key(c, h): {"Call": 0.7, "Raise": 0.3} for c in range(6) for h in ("a", "b")}
    assert card_use.card_distance(same) == (0.0, 0.0)
    assert all(card_use.without_card(same)[k] == pytest.approx(row) for k, row in same.items())
    split = dict(same)
    split[key(4, "a")] = split[key(5, "a")] = {"Call": 0.1, "Raise": 0.9}  # kings raise
    mean, largest = card_use.card_distance(split)
    assert largest == pytest.approx(0.6) and mean == pytest.approx(2 * 0.6 / 6)
    blinded = card_use.without_card(split)
    assert blinded[key(0, "a")] == pytest.approx({"Call": 0.5, "Raise": 0.5})
    assert blinded[key(0, "b")] == pytest.approx(same[key(0, "b")])


def test_kuhn_keys_read_their_card_and_history():
    blind = {key: {"bet": 0.8, "check": 0.2} for key in ("J:", "Q:", "K:")}
    blind |= {key: {"call": 0.9, "fold": 0.1} for key in ("J:bet", "Q:bet", "K:bet")}
    assert card_use.card_distance(blind) == (0.0, 0.0)
    assert all(card_use.without_card(blind)[k] == pytest.approx(row) for k, row in blind.items())
    reads = dict(blind) | {"J:bet": {"call": 0.0, "fold": 1.0}, "K:bet": {"call": 1.0, "fold": 0.0}}
    mean, largest = card_use.card_distance(reads)
    assert largest == pytest.approx(1.0)  # J against K facing a bet
    assert mean == pytest.approx((0.9 + 1.0 + 0.1) / 6)  # three pairs at each of two histories
    assert card_use.without_card(reads)["Q:bet"] == pytest.approx(
        {"call": 0.6333, "fold": 0.3667}, abs=1e-4
    )


def test_the_reference_kept_in_a_checkpoint_replaces_the_policy(tmp_path, monkeypatch):
    import torch

    from selfplay.core.commands import play

    monkeypatch.setattr(play, "find_checkpoint", lambda run: (run, run))
    policy = argparse.Namespace(model=torch.nn.Linear(3, 2))
    reference = torch.nn.Linear(3, 2).state_dict()
    torch.save(
        {"model": policy.model.state_dict(), "reference": reference}, tmp_path / "state.ckpt"
    )
    card_use.load_reference(policy, tmp_path)
    assert torch.equal(policy.model.weight, reference["weight"])

    torch.save({"model": policy.model.state_dict(), "reference": None}, tmp_path / "state.ckpt")
    with pytest.raises(SystemExit, match="keeps no full copy of the model"):
        card_use.load_reference(policy, tmp_path)


def test_the_table_starts_where_it_is_told():
    always_call = tabular.np.zeros((936, 3))
    always_call[:, tabular.ACTIONS["Call"]] = 1.0
    args = settings(blind=False)
    args.iterations, args.report, args.start_probs = 1, [0, 1], always_call
    curve = tabular.run(0, 0.1, args)
    assert curve[0] == pytest.approx(1.467, abs=0.002)  # always calling, as RESULTS.md says
    assert curve[1] != curve[0]
