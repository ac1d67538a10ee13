"""`selfplay eval`: measure a saved policy after the fact.

    selfplay eval RUN_DIR                          greedy matches against every scripted player
    selfplay eval RUN_DIR --metric exploitability  exact exploitability, for games that list
                                                   their information sets (kuhn-poker, rps,
                                                   openspiel:leduc_poker)

For exploitability the policy is the checkpoint's last iterate; when the run kept a pool, the
report adds the average policy of the pool as the run's opponent sampler mixed it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.run.build import build_game, build_sampler
from selfplay.core.run.checkpoint import CheckpointError


def evaluate_checkpoint(
    source: Path, metric: str, matches: int, learner: str | None = None
) -> dict[str, Any]:
    """``{"checkpoint": path, metric's results...}`` for a run folder or checkpoint folder (in a
    run of several learners, of ``learner``, in its own roles)."""
    from selfplay.core.commands.play import find_checkpoint, load_checkpoint_policy

    _, found = find_checkpoint(source)
    loaded = load_checkpoint_policy(source, learner)
    config = loaded.config
    game = build_game(config)
    report: dict[str, Any] = {"checkpoint": str(found), "game": config.game}
    if metric == "exploitability":
        report.update(_exploitability(game, loaded.policy, config, found))
    elif metric == "matches":
        from selfplay.core.evaluate import eval_seed, evaluate

        seed, roles = eval_seed(config.seed), loaded.roles or None
        results = evaluate(game, loaded.policy, matches=matches, seed=seed, roles=roles)
        report["opponents"] = {
            name: {key.rsplit("/", 1)[-1]: value for key, value in r.as_metrics().items()}
            for name, r in results.items()
        }
    else:
        raise ConfigError(f"Unknown --metric {metric!r}; choose matches or exploitability.")
    return report


def print_report(report: dict[str, Any]) -> None:
    """The report as `selfplay eval` prints it without --json."""
    print(f"{report['checkpoint']} ({report['game']})")
    for key, value in report.items():
        if key == "opponents":
            for name, numbers in value.items():
                shown = ("win_rate", "non_loss_rate", "mean_payoff", "invalid_rate")
                cells = ", ".join(f"{k} {numbers[k]:.3f}" for k in shown)
                print(f"  vs {name}: {cells}")
        elif key not in ("checkpoint", "game"):
            print(f"  {key}: {value:.4f}")


def _exploitability(game: Any, policy: Any, config: Any, found: Path) -> dict[str, float]:
    import torch

    from selfplay.core.models.policy_table import is_tabular, policy_table

    if not is_tabular(game):
        raise ConfigError(
            f"{game.name} does not list its information sets, so its exploitability cannot be "
            "computed exactly; games that can: kuhn-poker, rock-paper-scissors, and with the "
            "openspiel extra openspiel:kuhn_poker and openspiel:leduc_poker."
        )
    table = policy_table(policy, game, config.generation.temperature)
    report = {"exploitability/last": game.exploitability(table)}
    try:
        state = torch.load(found / "state.ckpt", map_location="cpu", weights_only=True)
    except Exception as err:  # the weights loaded, so this is rare: a file changed meanwhile
        raise CheckpointError(f"Cannot read the checkpoint {found}: {err}.") from None
    league = state.get("league") or {}
    tables = league.get("tables") or {}
    if tables:
        sampler = build_sampler(config)
        sampler.load_state_dict(state["sampler"])
        members = league["pool"]["snapshots"]
        mixture = sampler.mixture(members) or {}
        named = [(tables[m], w) for m, w in mixture.items() if m in tables and w > 0]
        if named:
            chosen, weights = zip(*named, strict=True)
            average = game.average_policy(list(chosen), list(weights))
            report["exploitability/pool_average"] = game.exploitability(average)
    return report
