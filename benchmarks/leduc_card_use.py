"""Does a trained Leduc or Kuhn poker policy play its card? Read from a run's newest checkpoint.

    python benchmarks/leduc_card_use.py RUN [RUN ...]
    python benchmarks/leduc_card_use.py runs/kuhn-s0 runs/kuhn-s1   # Kuhn poker runs too
    python benchmarks/leduc_card_use.py --view spiel RUN   # a run made before the readable view
    python benchmarks/leduc_card_use.py --imitate 100 RUN  # can the model learn to read it?
    python benchmarks/leduc_card_use.py --reference RUN    # the KL reference the run kept

For each run (a run folder of ``--game openspiel:leduc_poker`` or ``--game kuhn-poker``) the
policy's table is scored
as exact exploitability scores it, and three figures printed:

- the exploitability of that table (the run's ``exploitability/last`` at its newest checkpoint);
- the exploitability of the same table with the card taken out: at each betting history, every
  card's row replaced by the mean of the rows (a policy that plays the same whatever it holds);
- how far apart the rows of different ranks are at one betting history: the total-variation
  distance between the action probabilities of two ranks, averaged over the histories and pairs
  of ranks (0: the card changes nothing; 1: it decides every action), and its largest value.

``--reference`` scores the checkpoint's KL reference instead of its policy. With
``train.reference_update=0`` that reference is the policy the cold start left, which no
iteration's figures show.

A policy whose two exploitabilities agree and whose distance is about 0 ignores its card; the
self-play update leaves such a policy at 2.05-2.4 (`leduc_tabular.py --blind`), though a
card-blind policy can score lower (always calling: 1.467).

``--imitate STEPS`` then asks whether the model can learn to read its card at all: it trains
the checkpoint's policy (in memory; nothing is written) to imitate a player that raises a
King, calls a Queen and folds a Jack (calls where it cannot), by cross-entropy on that answer
at 64 information sets drawn at random per step, AdamW at 3e-4, and prints the figures above,
with the mean probability of that player's answer, after every quarter of the steps.
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from selfplay.core.models.policy_table import policy_table

PRIVATE = re.compile(r"\[Private: (\d+)\]")  # Leduc poker's card, in OpenSpiel's key
KUHN = re.compile(r"([JQK]):(.*)")  # Kuhn poker's key: card, then the betting history


def split(key: str) -> tuple[str, str]:
    """(betting history, card) of an information set's key."""
    if found := KUHN.fullmatch(key):
        return found[2], found[1]
    return PRIVATE.sub("", key), PRIVATE.search(key)[1]


def rank(card: str) -> int:
    """A card's rank: Kuhn's J < Q < K; Leduc's card number // 2 (two suits play alike)."""
    return "JQK".index(card) if card in "JQK" else int(card) // 2


def histories(table: dict[str, dict[str, float]]) -> dict[str, dict[str, dict[str, float]]]:
    """{betting history (the key without the card): {card: row}}."""
    grouped: dict[str, dict[str, dict[str, float]]] = {}
    for key, row in table.items():
        history, card = split(key)
        grouped.setdefault(history, {})[card] = row
    return grouped


def card_distance(table: dict[str, dict[str, float]]) -> tuple[float, float]:
    distances = []
    for by_card in histories(table).values():
        by_rank = {rank(card): row for card, row in by_card.items()}
        for a, b in itertools.combinations(sorted(by_rank), 2):
            ra, rb = by_rank[a], by_rank[b]
            distances.append(0.5 * sum(abs(ra[k] - rb[k]) for k in ra))
    return statistics.mean(distances), max(distances)


def without_card(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    grouped = histories(table)
    out = {}
    for key, row in table.items():
        rows = list(grouped[split(key)[0]].values())
        out[key] = {k: sum(r[k] for r in rows) / len(rows) for k in row}
    return out


def figures(table: dict[str, dict[str, float]], game: Any) -> str:
    mean, largest = card_distance(table)
    return (
        f"exploitability {game.exploitability(table):.3f}, "
        f"with the card taken out {game.exploitability(without_card(table)):.3f}; "
        f"distance between ranks {mean:.3f} on average, {largest:.3f} at most"
    )


def by_rank(game: Any, info: Any) -> str:
    """The imitated player's answer: raise a King, call a Queen, fold a Jack; else call."""
    card = game.position(info.state).private_card(game.roles.index(info.role))
    wanted = ("Fold", "Call", "Raise")[min(card // 2, 2)]
    return wanted if wanted in info.actions else "Call"


def imitate(policy: Any, game: Any, steps: int, temperature: float) -> None:
    import torch

    from selfplay.api.game import answer_text
    from selfplay.api.policy import Request
    from selfplay.core.models.scoring import eos_id
    from selfplay.core.train.cold_start import Example, collate, target_loss

    infos = game.information_sets()
    rng = random.Random(0)
    requests = [
        Request(game, i.state, i.role, tuple(game.observe(i.state, i.role)), rng) for i in infos
    ]
    tokens = policy.tokenizer
    examples = [
        Example(
            tuple(prompt),
            (
                *tokens(answer_text(game, by_rank(game, i)), add_special_tokens=False)["input_ids"],
                eos_id(policy),
            ),
        )
        for prompt, i in zip(policy.encode(requests), infos, strict=True)
    ]
    model = policy.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.0)
    for step in range(1, steps + 1):
        model.train()
        batch = rng.sample(examples, 64)
        loss = target_loss(model, collate(batch, policy.pad_id))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % max(1, steps // 4) == 0 or step == steps:
            table = policy_table(policy, game, temperature)
            hit = statistics.mean(table[i.key][by_rank(game, i)] for i in infos)
            print(
                f"  imitation step {step}: its answer's probability {hit:.3f}; "
                f"{figures(table, game)}",
                flush=True,
            )


def load_reference(policy: Any, run: Path) -> None:
    """Put the checkpoint's KL reference (a copy of the model's weights) into ``policy``."""
    import torch

    from selfplay.core.commands.play import find_checkpoint

    found = find_checkpoint(run)[1] / "state.ckpt"
    reference = torch.load(found, map_location="cpu", weights_only=True).get("reference")
    if not isinstance(reference, dict) or set(reference) != set(policy.model.state_dict()):
        raise SystemExit(f"{found} keeps no full copy of the model as its reference policy.")
    policy.model.load_state_dict(reference)


def checkpoint_table(run: Path, reference: bool = False, view: str | None = None) -> tuple:
    """(policy table, game, policy, config) of a run's newest checkpoint or of a checkpoint:
    its policy's, or its KL reference's; ``view`` where the run's config names none."""
    from selfplay.api.errors import ConfigError
    from selfplay.core.commands.play import load_checkpoint_policy
    from selfplay.core.plan.build import build_game
    from selfplay.core.run.folder.checkpoint import CheckpointError

    try:
        loaded = load_checkpoint_policy(run, None)
    except (ConfigError, CheckpointError) as err:
        print(err, file=sys.stderr)
        raise SystemExit(2) from None
    config = loaded.config
    if reference:
        load_reference(loaded.policy, run)
    if view and "view" not in config.game_options:
        config = config.model_copy(update={"game_options": {**config.game_options, "view": view}})
    game = build_game(config)
    table = policy_table(loaded.policy, game, config.generation.temperature)
    return table, game, loaded.policy, config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--imitate", type=int, metavar="STEPS", default=0)
    parser.add_argument(
        "--reference",
        action="store_true",
        help="score the KL reference kept in the checkpoint (a full fine-tuning run's)",
    )
    parser.add_argument(
        "--view",
        choices=["readable", "spiel"],
        help="the prompt's view of the state (game_options.view) when the run's config does "
        "not say: spiel for runs made before the readable view was the default",
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    for run in args.runs:
        table, game, policy, config = checkpoint_table(run, args.reference, args.view)
        print(f"{run}: {figures(table, game)}", flush=True)
        if args.imitate and game.name == "kuhn-poker":
            sys.exit("--imitate reads Leduc poker's moves; a Kuhn poker run has no imitation here.")
        if args.imitate:
            imitate(policy, game, args.imitate, config.generation.temperature)


if __name__ == "__main__":
    main()
