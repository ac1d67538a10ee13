"""Several rewards as one: the ``--reward`` grammar, weights, role suffixes and aggregation.

Grammar: terms joined by ``+``; a term is ``NAME[@ROLE][=WEIGHT]``::

    outcome                         one reward, weight 1
    outcome=1+format=0.1            a weighted sum
    judge+quality@challenger=0.5    quality scores the challenger only

In YAML, ``reward`` is that string, a list of terms (strings, or mappings with ``name`` and
optional ``weight``, ``role``, ``options``), or a mapping of term to weight
(``{outcome: 1, format: 0.1}``). Options of a reward otherwise come from ``reward_options``.

Aggregation (``reward_mode``): ``sum`` adds ``weight * score``; ``normalize`` first turns each
component into a z-score within its group (its role, over the whole batch and every process)
and then adds ``weight * z``. Summing first lets the component with the largest spread decide
the sign of every advantage and collapses different mixes of components onto the same total;
normalising first keeps each one's distinctions (the GDPO argument).

Every component's mean raw score is reported per role (``reward/<term>/<role>``), whatever
its weight: weight 0 makes a reward a pure metric (it never turns a missing score into a 0).
``None`` scores are left out of sums, means and normalisation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from selfplay.api.errors import blame
from selfplay.api.estimator import Reduce
from selfplay.api.reward import EpisodeScores, Reward, RewardContext, RewardError
from selfplay.api.types import Episode, Role

GRAMMAR = (
    "a reward expression is NAME[@ROLE][=WEIGHT] terms joined by '+', "
    "e.g. 'outcome=1+format=0.1' or 'judge+quality@challenger=0.5'"
)
TERM_KEYS = ("name", "weight", "role", "options")
EPS = 1e-6
MAX_WEIGHT = 1e6  # larger weights are refused when the expression is read
Mode = Literal["sum", "normalize"]


@dataclass(frozen=True)
class Term:
    name: str
    weight: float = 1.0
    role: Role | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.name}@{self.role}" if self.role else self.name


def parse_terms(spec: str | Sequence[Any] | dict[str, Any]) -> list[Term]:
    """Terms from a ``--reward`` string or its YAML list / mapping forms."""
    if isinstance(spec, str):
        terms = [parse_term(token, spec) for token in spec.split("+")]
    elif isinstance(spec, dict):
        terms = [_with_weight(parse_term(key, key), value, key) for key, value in spec.items()]
    else:
        terms = [_term_of(item) for item in spec]
    if not terms:
        raise RewardError(f"The reward expression is empty; {GRAMMAR}.")
    labels = [t.label for t in terms]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise RewardError(
            f"Reward term {', '.join(twice)} appears twice; give each reward (and role) once."
        )
    return terms


def parse_term(token: str, spec: str) -> Term:
    text = token.strip()
    if not text:
        raise RewardError(f"The reward expression {spec!r} has an empty term; {GRAMMAR}.")
    head, has_weight, weight_text = text.partition("=")
    name, has_role, role = (part.strip() for part in head.partition("@"))
    if not name or not name.replace("-", "").isalnum() or name != name.lower():
        raise RewardError(
            f"Reward term {text!r}: {name!r} is not a reward name (lowercase, e.g. 'outcome'); "
            f"{GRAMMAR}."
        )
    if has_role and not role:
        raise RewardError(f"Reward term {text!r} has no role after '@'; {GRAMMAR}.")
    term = Term(name, role=role or None)
    return _with_weight(term, weight_text.strip(), text) if has_weight else term


def _with_weight(term: Term, value: Any, text: str) -> Term:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        weight = math.nan
    if isinstance(value, bool) or not math.isfinite(weight):
        raise RewardError(f"Reward term {text!r}: weight {value!r} is not a number; {GRAMMAR}.")
    if abs(weight) > MAX_WEIGHT:
        raise RewardError(
            f"Reward term {text!r}: weight {value!r} is too large (at most {MAX_WEIGHT:g} either "
            "way): rewards are about ±1, and a return this size overflows the loss. Use a "
            "weight such as 0.1 or 10."
        )
    return Term(term.name, weight, term.role, term.options)


def _term_of(item: Any) -> Term:
    if isinstance(item, str):
        return parse_term(item, item)
    if not isinstance(item, dict) or "name" not in item:
        raise RewardError(
            f"Reward list item {item!r} is neither a term string nor a mapping with 'name' "
            f"(keys: {', '.join(TERM_KEYS)})."
        )
    unknown = sorted(set(item) - set(TERM_KEYS))
    if unknown:
        raise RewardError(
            f"Reward list item {item!r} has unknown key {', '.join(map(repr, unknown))}; "
            f"keys: {', '.join(TERM_KEYS)}."
        )
    head = item["name"] + (f"@{item['role']}" if item.get("role") else "")
    term = parse_term(head, head)
    if not isinstance(item.get("options", {}), dict):
        raise RewardError(f"Reward {head!r}: options must be a mapping, got {item['options']!r}.")
    term = Term(term.name, term.weight, term.role, dict(item.get("options") or {}))
    return _with_weight(term, item["weight"], head) if "weight" in item else term


@dataclass
class Component:
    term: Term
    reward: Reward


class RewardPipeline:
    """Calls every component on a batch and combines them into per-episode scores."""

    def __init__(self, components: Sequence[Component], roles: Sequence[Role], mode: Mode = "sum"):
        if mode not in ("sum", "normalize"):
            raise RewardError(f"reward_mode {mode!r} is not one of: sum, normalize.")
        self.components, self.roles, self.mode = list(components), tuple(roles), mode
        for component in self.components:
            component.reward.role = component.term.role
        self._metrics: dict[str, float] = {}

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels of the weighted terms: the keys a sample's ``parts`` may hold."""
        return tuple(c.term.label for c in self.components if c.term.weight != 0)

    @property
    def models(self) -> frozenset[str]:
        return frozenset().union(*(c.reward.models for c in self.components))

    def bind(self, context: RewardContext) -> None:
        for component in self.components:
            component.reward.bind(context)

    def __call__(
        self, episodes: Sequence[Episode], reduce: Reduce | None = None
    ) -> list[EpisodeScores]:
        raw = [self._scores(c, episodes) for c in self.components]
        self._notes = [_notes_of(c, len(episodes)) for c in self.components]
        stats = self._statistics(raw, episodes, reduce)
        weighted = [
            (component.term.label, self._shares(k, raw[k], episodes, stats))
            for k, component in enumerate(self.components)
            if component.term.weight != 0
        ]
        return [
            _combined(ep, {label: shares[e] for label, shares in weighted})
            for e, ep in enumerate(episodes)
        ]

    def metrics(self) -> dict[str, float]:
        """Means per component and role, and each component's counters, of the last call."""
        return dict(self._metrics)

    def notices(self) -> list[str]:
        """Every component's lines for the person starting the run (see `Reward.notices`)."""
        return [line for c in self.components for line in getattr(c.reward, "notices", [])]

    def notes(self) -> list[dict[str, list[dict[str, Any]]]]:
        """Per episode of the last call: ``{term label: that reward's notes}`` (see
        `Reward.notes`; a judge's raw answers), terms without notes left out."""
        notes = getattr(self, "_notes", [])
        count = max((len(n) for _, n in notes), default=0)
        return [{label: n[e] for label, n in notes if n and n[e]} for e in range(count)]

    def state_dict(self) -> dict[str, Any]:
        return {c.term.label: c.reward.state_dict() for c in self.components}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for component in self.components:
            component.reward.load_state_dict(state.get(component.term.label, {}))

    # ---- pieces ---------------------------------------------------------------------------

    def _scores(self, component: Component, episodes: Sequence[Episode]) -> list[Any]:
        """The component's scores, checked for shape and kept to the term's role."""
        reward, role = component.reward, component.term.role
        with blame(f"Reward {component.term.name!r}, scoring {len(episodes)} matches,"):
            scores = list(reward(episodes))
        if len(scores) != len(episodes):
            raise RuntimeError(
                f"Reward {component.term.name!r} returned {len(scores)} scores for "
                f"{len(episodes)} episodes."
            )
        checked = []
        for ep, item in zip(episodes, scores, strict=True):
            if reward.per_turn:
                if len(item) != len(ep.turns):
                    raise RuntimeError(
                        f"Reward {component.term.name!r} returned {len(item)} turn scores for "
                        f"an episode with {len(ep.turns)} turns."
                    )
                pairs = zip(ep.turns, item, strict=True)
                checked.append([_number(s) if role in (None, t.role) else None for t, s in pairs])
            else:
                unknown = set(item) - set(ep.seats)
                if unknown:
                    raise RuntimeError(
                        f"Reward {component.term.name!r} scored {sorted(unknown)}, which are "
                        f"not roles of {ep.game} ({', '.join(ep.seats)})."
                    )
                checked.append({r: _number(s) for r, s in item.items() if role in (None, r)})
        return checked

    def _statistics(
        self, raw: list[list[Any]], episodes: Sequence[Episode], reduce: Reduce | None
    ) -> torch.Tensor:
        """(components, roles, [count, sum, sum of squares]), summed over processes; also
        records the metrics of this call."""
        index = {role: j for j, role in enumerate(self.roles)}
        sums = [[[0.0, 0.0, 0.0] for _ in self.roles] for _ in self.components]
        for k, (component, scores) in enumerate(zip(self.components, raw, strict=True)):
            for role, value in _values(component.reward.per_turn, scores, episodes):
                if role not in index:
                    raise RuntimeError(f"Role {role!r} is not one of {self.roles}.")
                cell = sums[k][index[role]]
                cell[0], cell[1], cell[2] = cell[0] + 1, cell[1] + value, cell[2] + value * value
        stats = torch.tensor(sums, dtype=torch.float64).reshape(len(sums), len(self.roles), 3)
        counters = [(c, key, v) for c in self.components for key, v in c.reward.counters().items()]
        counts = torch.tensor([v for _, _, v in counters], dtype=torch.float64)
        flat = torch.cat([stats.flatten(), counts])
        if reduce is not None:
            flat = reduce(flat)
        stats = flat[: stats.numel()].reshape(stats.shape)
        self._metrics = {
            f"reward/{c.term.label}/{role}": (stats[k, j, 1] / stats[k, j, 0]).item()
            for k, c in enumerate(self.components)
            for j, role in enumerate(self.roles)
            if stats[k, j, 0] > 0
        }
        for (c, key, _), total in zip(counters, flat[stats.numel() :].tolist(), strict=True):
            self._metrics[f"reward/{c.term.label}/{key}"] = total
        return stats

    def _shares(
        self, k: int, scores: list[Any], episodes: Sequence[Episode], stats: torch.Tensor
    ) -> list[EpisodeScores]:
        """Component ``k``'s weighted (or normalised) share of every episode."""
        shares = []
        for ep, item in zip(episodes, scores, strict=True):
            if self.components[k].reward.per_turn:
                pairs = zip(ep.turns, item, strict=True)
                turns = tuple(self._scaled(k, t.role, s, stats) for t, s in pairs)
                shares.append(EpisodeScores(dict.fromkeys(ep.seats), turns))
            else:
                roles = {r: self._scaled(k, r, item.get(r), stats) for r in ep.seats}
                shares.append(EpisodeScores(roles, (None,) * len(ep.turns)))
        return shares

    def _scaled(self, k: int, role: Role, score: float | None, stats: torch.Tensor) -> float | None:
        if score is None:
            return None
        weight = self.components[k].term.weight
        if self.mode == "sum" or not math.isfinite(score):
            return weight * score
        n, total, squares = stats[k, self.roles.index(role)].tolist()
        mean = total / n
        std = math.sqrt(max(squares / n - mean * mean, 0.0))
        return weight * (score - mean) / (std + EPS)


def _notes_of(component: Component, count: int) -> tuple[str, list[list[dict[str, Any]]]]:
    """A component's notes of the last call; none when they do not match the batch."""
    notes = list(component.reward.notes() or [])
    return component.term.label, notes if len(notes) == count else []


def _values(per_turn: bool, scores: list[Any], episodes: Sequence[Episode]):
    """(role, score) for every score that applies."""
    for ep, item in zip(episodes, scores, strict=True):
        pairs = zip((t.role for t in ep.turns), item, strict=True) if per_turn else item.items()
        # a non-finite score stays out of the statistics; its sample is dropped later
        yield from ((role, value) for role, value in pairs if _finite(value))


def _combined(episode: Episode, parts: dict[str, EpisodeScores]) -> EpisodeScores:
    """The sum of the components' shares, keeping each share by its term label."""
    roles: dict[Role, float | None] = dict.fromkeys(episode.seats)
    turns: list[float | None] = [None] * len(episode.turns)
    for part in parts.values():
        for role, value in part.roles.items():
            roles[role] = _add(roles[role], value)
        turns = [_add(total, value) for total, value in zip(turns, part.turns, strict=True)]
    return EpisodeScores(roles, tuple(turns), parts)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _number(score: Any) -> float | None:
    return None if score is None else float(score)


def _add(total: float | None, value: float | None) -> float | None:
    if value is None:
        return total
    return value if total is None else total + value
