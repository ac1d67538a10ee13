"""Leduc poker's self-play update on a table: how many matches must it see?

    python benchmarks/leduc_tabular.py --seeds 0 1 2 --matches 512 --iterations 200
    python benchmarks/leduc_tabular.py --lr 0.01 0.03 0.1 --seeds 0 1 2
    python benchmarks/leduc_tabular.py --start RUN --reference --matches 128 --iterations 20

The runs in RESULTS.md ("Leduc poker trained by self-play") train the tiny model with a policy
gradient: one shared policy plays both seats, each iteration plays ``--matches`` matches, each
move's advantage is its player's return, z-scored per seat over the batch
(``reward_mode=normalize``), and Adam takes a step per minibatch on the advantage-weighted
log-probability of the move plus a KL pull toward a magnet that moves part of the way toward
the policy after every iteration (``train.kl_coef``, ``train.reference_update``).

This script runs that same update on a table of logits, one row per information set (936),
with none of a language model's limits: no prompt to read, no sharing between rows, every
step landing where it is aimed. If the table's exploitability falls within the runs' budget
(15 iterations of 512 matches), the model is what holds Leduc back; if the table too needs
tens of thousands of matches, the budget is. Exact exploitability (OpenSpiel's) is printed at
the iterations in ``--report``, with the mean and spread over the seeds, beside the 2.374 of
uniform play. ``--start RUN`` starts the table (and its magnet) from a run's policy at its
newest checkpoint, or with ``--reference`` from the KL reference it kept (the cold start's
policy when the reference never moves), and reports iteration 0 too: does the update improve
on where the model began? Needs the ``openspiel`` extra. Runs in seconds to minutes; nothing
is written.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

import numpy as np

UNIFORM = 2.3736
PRIVATE = re.compile(r"\[Private: \d+\]")
OBSERVER = re.compile(r"\[Observer: (\d+)\]")
ACTIONS = {"Fold": 0, "Call": 1, "Raise": 2}  # leduc_poker's action ids, by the adapter's names


class Table:
    """Softmax logits per information set over the game's actions, illegal ones masked."""

    def __init__(self, game, policy, blind: bool = False) -> None:
        self.game, self.policy = game, policy
        # --blind: one row per betting history, the private card left out of the key, so the
        # table plays the same at every card (what a policy that ignores its card can reach)
        keys = [PRIVATE.sub("", k) if blind else k for k in policy.state_lookup]
        rows = {k: i for i, k in enumerate(dict.fromkeys(keys))}
        self.row_of = np.array([rows[k] for k in keys])
        self.index = {k: self.row_of[i] for k, i in policy.state_lookup.items()}
        self.legal = np.zeros((len(rows), policy.legal_actions_mask.shape[1]), dtype=bool)
        self.legal[self.row_of] = policy.legal_actions_mask.astype(bool)
        self.logits = np.zeros(self.legal.shape)
        self.magnet = self.logits.copy()
        self.m = np.zeros_like(self.logits)  # Adam's moments
        self.v = np.zeros_like(self.logits)
        self.steps = 0

    def probs(self, logits: np.ndarray) -> np.ndarray:
        masked = np.where(self.legal, logits, -np.inf)
        masked = masked - masked.max(axis=1, keepdims=True)
        e = np.exp(masked)
        return e / e.sum(axis=1, keepdims=True)

    def play(self, matches: int, rng: np.random.Generator) -> list[tuple[int, int, int, float]]:
        """(row, action, seat, return) for every decision of ``matches`` self-play matches."""
        p = self.probs(self.logits)
        moves = []
        for _ in range(matches):
            state, mine = self.game.new_initial_state(), []
            while not state.is_terminal():
                if state.is_chance_node():
                    actions, chances = zip(*state.chance_outcomes(), strict=True)
                    state.apply_action(int(rng.choice(actions, p=chances)))
                    continue
                seat = state.current_player()
                row = self.index[state.information_state_string(seat)]
                action = int(rng.choice(p.shape[1], p=p[row]))
                mine.append((row, action, seat))
                state.apply_action(action)
            returns = state.returns()
            moves += [(row, action, seat, returns[seat]) for row, action, seat in mine]
        return moves

    def update(self, moves, args, rng: np.random.Generator) -> None:
        rows = np.array([m[0] for m in moves])
        actions = np.array([m[1] for m in moves])
        seats = np.array([m[2] for m in moves])
        advantage = np.array([m[3] for m in moves], dtype=float)
        for seat in (0, 1):  # z-scored per seat, as reward_mode=normalize does
            mask = seats == seat
            if mask.sum() > 1:
                a = advantage[mask]
                advantage[mask] = (a - a.mean()) / (a.std() + 1e-8)
        for _ in range(args.epochs):
            order = rng.permutation(len(moves))
            for start in range(0, len(order), args.minibatch):
                pick = order[start : start + args.minibatch]
                self.step(rows[pick], actions[pick], advantage[pick], args)

    def step(self, rows, actions, advantage, args) -> None:
        p = self.probs(self.logits)[rows]
        q = self.probs(self.magnet)[rows]
        onehot = np.zeros_like(p)
        onehot[np.arange(len(rows)), actions] = 1.0
        # gradient of -A log p(a|s) + kl * KL(p || q), for the logits of each sampled row
        logs = np.where(p > 0, np.log(np.where(p > 0, p, 1)) - np.log(np.where(q > 0, q, 1)), 0)
        kl = (p * logs).sum(axis=1, keepdims=True)
        grad_rows = -advantage[:, None] * (onehot - p) + args.kl_coef * p * (logs - kl)
        grad = np.zeros_like(self.logits)
        np.add.at(grad, rows, grad_rows / len(rows))
        self.steps += 1
        b1, b2 = 0.9, 0.999
        self.m = b1 * self.m + (1 - b1) * grad
        self.v = b2 * self.v + (1 - b2) * grad**2
        m_hat = self.m / (1 - b1**self.steps)
        v_hat = self.v / (1 - b2**self.steps)
        self.logits -= args.lr * m_hat / (np.sqrt(v_hat) + 1e-8)

    def exploitability(self) -> float:
        from open_spiel.python.algorithms import exploitability

        self.policy.action_probability_array[:] = self.probs(self.logits)[self.row_of]
        return exploitability.exploitability(self.game, self.policy)


def run(seed: int, lr: float, args: argparse.Namespace) -> dict[int, float]:
    import pyspiel
    from open_spiel.python import policy as spiel_policy

    game = pyspiel.load_game("leduc_poker")
    table = Table(game, spiel_policy.TabularPolicy(game), blind=args.blind)
    if args.start_probs is not None:
        # floored: a move the model never makes gets a finite logit the update can still raise
        start = np.log(np.maximum(args.start_probs, 1e-6))
        table.logits[table.row_of] = np.where(table.legal[table.row_of], start, 0)
        table.magnet = table.logits.copy()
    rng = np.random.default_rng(seed)
    args.lr = lr
    curve = {0: table.exploitability()} if 0 in args.report else {}
    for iteration in range(1, args.iterations + 1):
        table.update(table.play(args.matches, rng), args, rng)
        table.magnet += args.reference_update * (table.logits - table.magnet)
        if iteration in args.report:
            curve[iteration] = table.exploitability()
    return curve


def start_probs(source: Path, reference: bool) -> np.ndarray:
    """The action probabilities of a run's policy (or reference) in OpenSpiel's table order."""
    import leduc_card_use  # this folder's; run as a script, it is on the path
    import pyspiel
    import torch
    from open_spiel.python import policy as spiel_policy

    torch.set_num_threads(1)
    model_table = leduc_card_use.checkpoint_table(source, reference)[0]
    order = spiel_policy.TabularPolicy(pyspiel.load_game("leduc_poker")).state_lookup
    probs = np.zeros((len(order), len(ACTIONS)))
    for key, i in order.items():
        row = model_table[f"player_{OBSERVER.search(key)[1]}|{key}"]
        for action, p in row.items():
            probs[i, ACTIONS[action]] = p
    return probs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--lr", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    parser.add_argument("--matches", type=int, default=512, help="matches an iteration")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--minibatch", type=int, default=256, help="moves an Adam step")
    parser.add_argument("--epochs", type=int, default=1, help="passes over each iteration")
    parser.add_argument("--kl-coef", type=float, default=0.5)
    parser.add_argument("--reference-update", type=float, default=0.05)
    parser.add_argument("--blind", action="store_true", help="one row per betting history")
    parser.add_argument("--report", type=int, nargs="+", default=[1, 5, 15, 50, 100, 200])
    parser.add_argument("--start", type=Path, help="a run or checkpoint to start the table from")
    parser.add_argument("--reference", action="store_true", help="from its KL reference")
    args = parser.parse_args()
    if args.start and args.blind:
        parser.error("--start keeps the model's rows card by card; it cannot be --blind")
    if args.reference and not args.start:
        parser.error("--reference reads a run's checkpoint: give the run with --start RUN")
    args.start_probs = start_probs(args.start, args.reference) if args.start else None
    args.report = sorted(
        {i for i in args.report if i <= args.iterations} | ({0} if args.start else set())
    )
    print(f"uniform play: {UNIFORM}; {args.matches} matches an iteration")
    print("lr      " + "".join(f"{f'it {i} ({i * args.matches} m.)':>26}" for i in args.report))
    for lr in args.lr:
        started = time.perf_counter()
        curves = [run(seed, lr, args) for seed in args.seeds]
        cells = []
        for i in args.report:
            values = [c[i] for c in curves]
            cells.append(f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})")
        seconds = time.perf_counter() - started
        print(f"{lr:<8g}" + "".join(f"{c:>26}" for c in cells) + f"   {seconds:.0f} s")


if __name__ == "__main__":
    main()
