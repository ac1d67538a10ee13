"""`selfplay eval`: measure a saved policy after the fact.

    selfplay eval RUN_DIR                          greedy matches against every scripted player
    selfplay eval RUN_DIR --metric exploitability  exact exploitability, for games that list
                                                   their information sets (kuhn-poker, rps,
                                                   openspiel:leduc_poker, openspiel:goofspiel
                                                   (num_cards=3): `TABULAR_GAMES`)

For exploitability the policy is the checkpoint's last iterate; when the run kept a pool, the
report adds the average policy of the pool as the run's opponent sampler mixed it. In a run of
several learners it is the joint policy's, each role played by its learner, as metrics.csv
logs ``exploitability/last``: one learner alone (``--learner``) has no exploitability of its
own, so that is refused rather than measured as another number under the same name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.commands.play import run_config
from selfplay.core.plan.build import build_game, build_sampler
from selfplay.core.run.folder.checkpoint import CheckpointError

# the games with exact exploitability, for messages (docs/games.md says the rule)
TABULAR_GAMES = (
    "kuhn-poker, rock-paper-scissors, and with the openspiel extra any two-player zero-sum "
    "OpenSpiel game of at most 1,000 information sets, e.g. openspiel:kuhn_poker, "
    "openspiel:leduc_poker, openspiel:goofspiel(num_cards=3)"
)


def evaluate_checkpoint(
    source: Path, metric: str, matches: int, learner: str | None = None
) -> dict[str, Any]:
    """``{"checkpoint": path, metric's results...}`` for a run folder or checkpoint folder (in a
    run of several learners, of ``learner``, in its own roles)."""
    from selfplay.core.commands.play import find_checkpoint, load_checkpoint_policy

    folder, found = find_checkpoint(source)
    if metric == "exploitability":
        names = list(run_config(folder).learners)
        if names and learner is not None:
            raise ConfigError(
                f"--learner {learner}: the exploitability of a run of several learners is the "
                f"joint policy's, each role played by its learner ({', '.join(names)}), as "
                "metrics.csv logs it; drop --learner to measure it (one learner has none of "
                "its own)."
            )
        if names:
            return _joint_exploitability(source, run_config(folder), found, names)
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


def _joint_exploitability(
    source: Path, config: Any, found: Path, names: list[str]
) -> dict[str, Any]:
    """A run of several learners: each learner's table in its own roles, measured as one
    (the league's `exploitability/last`)."""
    from selfplay.core.commands.play import load_checkpoint_policy
    from selfplay.core.models.policy_table import is_tabular, joint_table

    game = build_game(config)
    report: dict[str, Any] = {"checkpoint": str(found), "game": config.game}
    table = None
    if is_tabular(game):  # else _exploitability refuses, naming the games that have it
        loaded = [load_checkpoint_policy(source, name) for name in names]
        players = {role: one.policy for one in loaded for role in one.roles}
        table = joint_table(game, players, config.generation.temperature)
    report.update(_exploitability(game, None, config, found, table))
    return report


def _exploitability(
    game: Any, policy: Any, config: Any, found: Path, table: Any = None
) -> dict[str, float]:
    import torch

    from selfplay.core.league.exploitability import iterates_averages
    from selfplay.core.models.policy_table import is_tabular, policy_table

    if not is_tabular(game):
        raise ConfigError(
            f"{game.name} does not list its information sets, so its exploitability cannot be "
            f"computed exactly; games that can: {TABULAR_GAMES}."
        )
    if table is None:
        table = policy_table(policy, game, config.generation.temperature)
    report = {"exploitability/last": game.exploitability(table)}
    try:
        state = torch.load(found / "state.ckpt", map_location="cpu", weights_only=True)
    except Exception as err:  # the weights loaded, so this is rare: a file changed meanwhile
        raise CheckpointError(f"Cannot read the checkpoint {found}: {err}.") from None
    league = state.get("league") or {}
    if league.get("iterates"):
        report.update(iterates_averages(game, league["iterates"]))
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
