"""The code proposer's check of a proposal: its runs in the sandbox, and what makes it valid.

A proposed function runs ``CHECK_RUNS`` times, each under its own clock and hash seed drawn
from the match's seed (`check_runs`); it is valid when every run returns plain values the
solver can write as literals, equal in every run (`validity`), compared as the solvers'
answers are judged (`tagged`: nan equals nan, dicts in any order).
"""

from __future__ import annotations

import random
from typing import Any

from selfplay.api.game import InvalidAction
from selfplay.games.proposers.code_tasks import read_value
from selfplay.verifiers import code_values
from selfplay.verifiers.code_sandbox import RunResult

# The check's runs: (clock, hash seed), drawn from the match's seed, so that a proposer cannot
# choose a function of the time, or a set of strings, that agrees under moments and seeds it
# knows (both were fixed, and both were chosen), and a replay of the match draws the same.
# The clocks come in two pairs, each a moment between 2000 and 2020 and the moment GAP seconds
# later (4.4 years: every field of the date differs, and the whole seconds between leave 1 by
# every k up to 12, so int(t) % k differs within a pair). A function that flips with the time
# or a set's order passes all four about one time in eight; a rejected proposal costs the
# proposer ``invalid_proposal_payoff``, so on average it pays to be deterministic. Solvers are
# judged under the first run's clock and seed (docs/verifiers.md).
CHECK_RUNS = 4
GAP = 138_627_721
MOMENTS = (946_684_800, 1_577_836_800)  # 2000-01-01 and 2020-01-01 UTC


def check_runs(match_seed: int) -> tuple[tuple[float, int], ...]:
    """The check's ``CHECK_RUNS`` (clock, hash seed) pairs in a match, from its seed."""
    rng = random.Random(f"selfplay-code-check-{match_seed}")
    seeds = rng.sample(range(1, 2**32), CHECK_RUNS)
    clocks = []
    for _ in range(CHECK_RUNS // 2):
        moment = rng.randrange(*MOMENTS) + 0.25
        clocks += [moment, moment + GAP]
    return tuple(zip(clocks, seeds, strict=True))


def validity(runs: list[RunResult], timeout: float) -> tuple[str | None, tuple]:
    """(why the proposal is invalid or None, the outputs in tagged form)."""
    if any(run.status == "timeout" for run in runs):
        return f"f ran longer than {timeout:g} s on its input(s).", ()
    for run in runs:
        failed = next((o for o in run.outcomes if o.kind != "ok"), None)
        if failed is not None:
            return f"f did not return a plain value: {failed.detail}", ()
    if len(runs) < CHECK_RUNS or any(tagged(run) != tagged(runs[0]) for run in runs):
        return "f is not deterministic: two runs returned different values.", ()
    outputs = []
    for outcome in runs[0].outcomes:
        text = repr(outcome.value)
        try:
            writable = read_value(text) == outcome.value
        except InvalidAction:
            writable = False
        if not writable:
            return f"f returned a value the solver cannot write as a short literal: {text[:40]}", ()
        outputs.append(code_values.dumps(outcome.value))
    return None, tuple(outputs)


def tagged(run: RunResult) -> list[str | None]:
    """Each call's value in tagged form (None if it did not return), compared as values are
    judged: here nan equals nan, and dicts equal in any order (sets are already sorted)."""
    return [code_values.dumps(_ordered(o.value)) if o.kind == "ok" else None for o in run.outcomes]


def _ordered(value: Any) -> Any:
    """``value`` with every dict's items in one order (by their tagged form)."""
    if isinstance(value, dict):
        pairs = [(_ordered(k), _ordered(v)) for k, v in value.items()]
        return dict(sorted(pairs, key=lambda kv: code_values.dumps(kv[0])))
    if isinstance(value, list | tuple):
        return type(value)(_ordered(item) for item in value)
    return value


def same_values(run: RunResult, other: RunResult) -> bool:
    """Whether two runs returned the same values, as `validity` compares them."""
    return tagged(run) == tagged(other)
