"""What a tic-tac-toe policy has learned, move by move: does it take a win, does it block one?

    python benchmarks/tactics.py RUN_OR_CHECKPOINT [RUN_OR_CHECKPOINT ...]

Greedy matches against `minimax` swing by up to 0.45 between evaluations, because a few key
positions decide them. This probe asks the checkpoint's greedy move at every reachable
position instead (all of them, so it has no sampling noise):

- win: the player to move can complete a line now; a hit takes such a win;
- block: it cannot, and the opponent threatens exactly one line; a hit blocks it;
- keep: the legal moves differ in exact value (minimax); a hit keeps the position's value,
  what the ``move-value`` reward scores (every such position: the two kinds above among them).

A uniformly random legal move hits with the share printed as "random" (the mean of winning or
blocking cells over empty cells).

    python benchmarks/tactics.py RUN --train 600 --lr 5e-4
    python benchmarks/tactics.py RUN --phrasing obfuscated --every 4    # other names, a quarter
    python benchmarks/tactics.py RUN --untrained                        # its model before training

``--train STEPS`` asks how fast the model *can* learn these tactics: it trains a copy of the
checkpoint by plain supervised steps (batches of 64, AdamW, the cold start's loss) on the
probe's own positions, every winning or blocking cell a target, and prints the hit rates every
100 steps. A policy gradient sees these positions only as often as its matches reach them, so
this is roughly the most that an update of that many steps could teach.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

from selfplay.api.policy import Request
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.plan.build import build_game, build_learner
from selfplay.core.run.folder.run_folder import read_config
from selfplay.core.train.cold_start import build_examples, collate, target_loss
from selfplay.games.tictactoe import LINES, TicTacToe, TicTacToeState, winner

ROLES = {"x": "player_0", "o": "player_1"}


def positions() -> list[str]:
    """Every board reachable from the empty one on which the game is not over."""
    seen: set[str] = set()
    todo = ["........."]
    while todo:
        board = todo.pop()
        if board in seen or winner(board) or "." not in board:
            continue
        seen.add(board)
        mark = _to_move(board)
        todo.extend(board[:i] + mark + board[i + 1 :] for i, c in enumerate(board) if c == ".")
    return sorted(seen)


def _to_move(board: str) -> str:
    return "x" if board.count("x") == board.count("o") else "o"


def completing(board: str, mark: str) -> set[int]:
    """Empty cells that complete a line of ``mark``."""
    cells = set()
    for line in LINES:
        marks = [board[i] for i in line]
        if marks.count(mark) == 2 and marks.count(".") == 1:
            cells.add(line[marks.index(".")])
    return cells


def tests() -> dict[str, list[tuple[str, set[int]]]]:
    found: dict[str, list[tuple[str, set[int]]]] = {"win": [], "block": [], "keep": []}
    game = TicTacToe()
    for board in positions():
        mark = _to_move(board)
        wins, threats = completing(board, mark), completing(board, "o" if mark == "x" else "x")
        if wins:
            found["win"].append((board, wins))
        elif len(threats) == 1:
            found["block"].append((board, threats))
        values = game.move_values(TicTacToeState(seed=0, board=board), ROLES[mark])
        best = max(values.values())
        if min(values.values()) < best:
            found["keep"].append((board, {int(a) for a, v in values.items() if v == best}))
    return found


def hit_rates(
    game: Any, policy: Any, found: dict[str, list[tuple[str, set[int]]]]
) -> dict[str, float]:
    """The share of ``found``'s positions of each kind where ``policy``'s greedy move hits."""
    rates = {}
    for kind, cases in found.items():
        requests = []
        for board, _ in cases:
            state, role = TicTacToeState(seed=0, board=board), ROLES[_to_move(board)]
            messages = tuple(game.observe(state, role))
            requests.append(Request(game, state, role, messages, random.Random(0)))
        hits = 0
        for start in range(0, len(requests), 512):
            chunk = requests[start : start + 512]
            for request, answer, (_, good) in zip(
                chunk,
                policy.act(chunk, greedy=True),
                cases[start : start + 512],
                strict=True,
            ):
                action, _ = game.action_of(answer.text, request.state, request.role)
                hits += action is not None and int(action) in good
        rates[kind] = hits / len(cases)
    return rates


def train_on_probe(
    game: Any, policy: Any, found: dict[str, list[tuple[str, set[int]]]], steps: int, lr: float
) -> None:
    """Supervised steps on every probe position's good cells; hit rates every 100 steps."""
    transcripts = []
    for kind in ("win", "block"):
        cases = found[kind]
        for board, good in cases:
            state, role = TicTacToeState(seed=0, board=board), ROLES[_to_move(board)]
            messages = tuple(game.observe(state, role))
            transcripts.extend((messages, f"[{cell}]") for cell in sorted(good))
    examples = build_examples(policy, game, transcripts)
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.0)
    started = time.perf_counter()
    for step in range(1, steps + 1):
        rows = torch.randint(len(examples), (64,), generator=generator).tolist()
        batch = collate([examples[i] for i in rows], policy.pad_id)
        policy.model.train()
        loss = target_loss(policy.model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optimizer.step()
        policy.model.eval()
        if step % 100 == 0 or step == steps:
            rates = hit_rates(game, policy, found)
            print(
                f"  step {step}: loss {loss.item():.3f}, {_rates(rates)} "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )


def _rates(rates: dict[str, float]) -> str:
    return ", ".join(f"{kind} {rate:.2f}" for kind, rate in rates.items())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", type=Path, help="run folders or checkpoints")
    parser.add_argument(
        "--train", type=int, default=0, metavar="STEPS", help="then train on the probe (0: no)"
    )
    parser.add_argument("--lr", type=float, default=5e-4, help="learning rate of --train")
    parser.add_argument(
        "--phrasing",
        default=None,
        help="ask in this phrasing (game_options.phrasing: reworded, obfuscated, no-menu)",
    )
    parser.add_argument(
        "--every",
        type=int,
        default=1,
        metavar="N",
        help="ask every N-th position of each kind only (1: all of them)",
    )
    parser.add_argument(
        "--untrained",
        action="store_true",
        help="the runs' models as they were before training (their settings, no checkpoint)",
    )
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error(f"--every {args.every}: give 1 (every position) or more (every N-th).")
    found = {kind: cases[:: args.every] for kind, cases in tests().items()}
    chance = {
        kind: sum(len(good) / board.count(".") for board, good in cases) / len(cases)
        for kind, cases in found.items()
    }
    print(
        "positions: "
        + ", ".join(f"{kind} {len(cases)}" for kind, cases in found.items())
        + f"; random: {_rates(chance)}"
    )
    for source in args.sources:
        if args.untrained:
            config = read_config(source)
            policy = build_learner(config)
            policy.model.eval()
        else:
            loaded = load_checkpoint_policy(source)
            config, policy = loaded.config, loaded.policy
        if args.phrasing:
            options = {**config.game_options, "phrasing": args.phrasing}
            config = config.model_copy(update={"game_options": options})
        rates = hit_rates(build_game(config), policy, found)
        said = " (untrained)" if args.untrained else ""
        said += f" ({args.phrasing})" if args.phrasing else ""
        print(f"{source}{said}: {_rates(rates)}")
        if args.train:
            train_on_probe(build_game(config), policy, found, args.train, args.lr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
