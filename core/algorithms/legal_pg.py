"""``legal-pg``: the policy gradient of the policy that plays under ``generation.choice: legal``.

Under the legal choice a move is not written: the policy scores each legal answer b (its
tokens, then end-of-sequence) and plays one with probability

    q(b) = exp(y_b) / sum_b' exp(y_b'),    y_b = log pi(b | x) / T   (summed over b's tokens)

The ``pg`` objective raises or lowers y_a, the chosen answer's log-probability under the whole
vocabulary. That moves q only through the normaliser's share, and part of each step goes to
answers nobody plays (on the tiny Kuhn model its last iterate cycled far more under the legal
choice than when writing). This objective scores every legal answer of each decision in the
update (the ``menu`` the choice recorded) and takes the gradient of q itself:

    softmax:  L = -w A log q(a)                                   (exact softmax policy gradient)
    neurd:    L = -w A / q(a) * (y_a - mean_b y_b),  q(a) detached  (NeuRD, Hennes et al. 2020)

NeuRD moves the logits by the (importance-sampled) advantage without the softmax's q(a)
factor, so a rarely played answer that would pay is not starved of gradient; its importance
weight 1/q(a) is capped at ``max_weight``. Subtracting the menu's mean logit leaves q unchanged
and keeps the step off the answers' common share of the vocabulary.

``all-answers`` values every answer of the menu (a table of the run's own returns after each
(position, answer); core/algorithms/state_values.py) and takes the expected gradient over the
menu, ``all-answers-neurd`` the same values without the softmax's factor (NeuRD's all-actions
form; no importance weight, nothing is sampled):

    all-answers:        grad y_b = -q(b) (v_b - q . v)
    all-answers-neurd:  grad y_b = -(A_b - mean_b' A_b'),  A_b = v_b - q . v

The softmax's factor q(b) (1 - q(b)) near a pure choice makes its step vanish there (a
plateau where the policy plays one answer whatever it holds); NeuRD's step does not fade. Its
logits are held within ``logit_threshold`` of the menu's mean: an answer already that far
ahead (behind) is pushed no further up (down), so no answer's logit runs off.

Both regularisers are exact over the menu, not per token: the KL pull toward the reference
(``objective_options.kl_coef``; with ``train.reference_update`` the magnet of magnetic mirror
descent)

    KL(q || q_ref) = sum_b q(b) (log q(b) - log q_ref(b))

and the entropy bonus ``objective_options.entropy_coef * H(q)``. ``kl_direction=reverse`` takes
KL(q_ref || q) = sum_b q_ref(b) (log q_ref(b) - log q(b)) instead: its gradient on the answers'
logits is q - q_ref, which does not fade as q turns pure (the forward KL's and the entropy's
vanish there, and an answer no longer sampled is never learned again). With ``uniform_magnet`` w the
magnet is the mixture (1 - w) q_ref + w u of the reference's choice and the uniform choice u
over the menu; at w = 1 (no reference is scored) KL(q || u) = log n - H(q), magnetic mirror
descent's magnet for a quantal response equilibrium (Sokota et al. 2023), whose policy stays
mixed where the game's equilibrium mixes. A pretrained model's reference is nearly
deterministic over a menu (SmolLM2 checks with 0.995 at Kuhn poker, whatever its card), and a
pull toward it keeps the policy pure. The loss of a minibatch is the
mean over its decisions. One update epoch only: the rollout did not record the other answers'
scores, so a PPO ratio of q is not available.

A decision's rows share its prompt: the update reads it once, with gradients, and every
answer after it from its key-value cache (core/models/prefix_scoring.py), as play does, so a
menu of nine answers costs about one prompt and nine short rows, not nine prompts.

Served (``rollout.workers`` / ``servers``), each choice records log q_b(a), the chosen
answer's probability under the version that chose it (`Sample.choice_logprob`). A decision
played by older weights (overlapped: ``rollout.max_staleness`` > 0) is corrected by the
truncated importance weight of the choice, min(q(a) / q_b(a), C), detached, with C the
served cap (``rollout.importance_cap``, 2.0 when served); under ``rollout.stale: reweight``
its loss is scaled by its age weight too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
from pydantic import Field

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import (
    EntropyCoef,
    IterationData,
    KLCoef,
    Loss,
    Objective,
    RoleLRScale,
    Scored,
    UpdateEpochs,
)
from selfplay.api.options import Options
from selfplay.core.algorithms.state_values import StateValues, answer_slot


class LegalPGOptions(Options):
    update_epochs: UpdateEpochs = 1
    kl_coef: KLCoef = 0.05
    entropy_coef: EntropyCoef = 0.0
    role_lr_scale: RoleLRScale = {}  # noqa: RUF012 (pydantic copies it per instance)
    update: Literal["softmax", "neurd", "all-answers", "all-answers-neurd"] = Field(
        default="softmax",
        description="softmax: the exact policy gradient of the legal choice; neurd: the "
        "logits moved by the importance-weighted advantage (NeuRD, Hennes et al. 2020); "
        "all-answers: every legal answer moved by the mean return seen after it from the same "
        "position (a table of the run's own returns), not only the one played; "
        "all-answers-neurd: the same values moving the logits without the softmax's factor "
        "q(b), whose step vanishes as the choice turns pure.",
    )
    logit_threshold: float = Field(
        default=3.0,
        gt=0,
        description="all-answers-neurd: an answer's logit this far above (below) its menu's "
        "mean is pushed no further up (down).",
    )
    value_decay: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="all-answers: per-iteration decay of each answer's record of returns.",
    )
    value_prior: float = Field(
        default=1.0,
        gt=0,
        description="all-answers: visits of the position's mean an answer's value starts from "
        "(an answer seen rarely is valued near its position's mean).",
    )
    value_bonus: float = Field(
        default=0.0,
        ge=0,
        description="all-answers: optimism for answers seldom played, c / sqrt(1 + visits) "
        "added to each answer's value, so an answer the policy never samples is tried "
        "(0: none).",
    )
    value_bonus_iterations: int = Field(
        default=0,
        ge=0,
        description="all-answers: the iterations over which value_bonus falls linearly to 0, "
        "then stays off (optimism to leave a pure start, not after; 0: held for the whole run).",
    )
    value_buckets: int = Field(
        default=65536, ge=1, description="all-answers: hashed (position, answer) slots."
    )
    max_weight: float = Field(
        default=20.0,
        gt=0,
        description="neurd: the cap on the importance weight 1 / q(chosen answer).",
    )
    kl_direction: Literal["forward", "reverse"] = Field(
        default="forward",
        description="forward: KL(q || magnet), magnetic mirror descent's; reverse: "
        "KL(magnet || q), whose pull does not fade as the choice turns pure (no answer's "
        "probability reaches 0).",
    )
    uniform_magnet: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="The uniform choice's share in the KL magnet: 0 pulls toward the "
        "reference's choice, 1 toward uniform over the legal answers (a policy that stays "
        "mixed; no reference is scored), between them toward their mixture.",
    )


_VALUED = ("all-answers", "all-answers-neurd")
_READERS = {  # an option only some updates read: those updates
    "max_weight": ("neurd",),
    "value_decay": _VALUED,
    "value_prior": _VALUED,
    "value_buckets": _VALUED,
    "value_bonus": _VALUED,
    "value_bonus_iterations": _VALUED,
    "logit_threshold": ("all-answers-neurd",),
}


@dataclass(frozen=True)
class Decision:
    """One choice: every legal answer as a row (``samples``, menu order) and which was played."""

    samples: tuple[Sample, ...]
    chosen: int
    advantage: float
    values: tuple[float, ...] = ()  # all-answers: each answer's value from this position


class LegalPolicyGradient(Objective):
    """Policy gradient of the choice among legal answers (generation.choice=legal), exact
    over each move's menu, or NeuRD; KL and entropy exact over the menu too."""

    name = "legal-pg"
    Options = LegalPGOptions
    needs = "advantages"
    generation_choice = "legal"
    stale = "corrects"
    metric_names = ("policy", "kl", "entropy", "chosen_prob")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options.update_epochs != 1:
            raise ConfigError(
                f"objective legal-pg takes one update epoch (objective_options.update_epochs="
                f"{self.options.update_epochs}): the rollout keeps only the chosen answer's "
                "scores, so there is no PPO ratio of the choice. Leave update_epochs at 1."
            )
        update = self.options.update
        unread = [
            n
            for n in sorted(self.options.model_fields_set)
            if update not in _READERS.get(n, (update,))
            # a copy of the options passes every default: only a value set away from it counts
            and getattr(self.options, n) != LegalPGOptions.model_fields[n].default
        ]
        if unread:
            raise ConfigError(
                f"objective legal-pg's update={update!r} does not read objective_options."
                + ", ".join(unread)
                + ": "
                + "; ".join(f"{n} is read by update={' or '.join(_READERS[n])}" for n in unread)
                + ". Set the update that reads it, or leave it out."
            )
        if self.options.value_bonus_iterations and not self.options.value_bonus:
            raise ConfigError(
                "objective legal-pg's objective_options.value_bonus_iterations="
                f"{self.options.value_bonus_iterations} sets how fast value_bonus falls, and "
                "value_bonus is 0: set value_bonus too (for instance 0.5), or leave "
                "value_bonus_iterations out."
            )
        self.values: StateValues | None = None
        if self.options.update in _VALUED:
            options = self.options
            self.values = StateValues(
                options.value_buckets, options.value_decay, options.value_prior
            )
            self.values.bind(["answers"])  # one block: the role is in each slot's key

    def prepare(self, data: IterationData) -> list[Decision]:
        advantages = data.advantages or [None] * len(data.samples)
        decisions = []
        encoded: dict[str, tuple[int, ...]] = {}  # a game has a few answers: tokenise each once
        for sample, advantage in zip(data.samples, advantages, strict=True):
            if advantage is None:
                continue
            if not sample.menu or data.encode is None:
                raise ConfigError(
                    "objective legal-pg trains the choice among legal answers, but this "
                    f"{sample.role!r} move was written, not chosen. Run it with "
                    "--set generation.choice=legal, on a game that lists every legal move."
                )
            rows = [
                encoded[a] if a in encoded else encoded.setdefault(a, data.encode(a))
                for a in sample.menu
            ]
            if sample.token_ids not in rows:
                raise ValueError(
                    f"a legal-choice sample's answer {sample.token_ids} is not one of its "
                    f"menu's {sample.menu}"
                )
            chosen = rows.index(sample.token_ids)
            samples = tuple(
                sample if i == chosen else replace(sample, token_ids=ids, logprobs=())
                for i, ids in enumerate(rows)
            )
            decisions.append(Decision(samples, chosen, advantage))
        if self.values is not None:
            return self._valued(decisions, data.reduce or self.reduce, data.iteration)
        return decisions

    def bonus_at(self, iteration: int) -> float:
        """``value_bonus`` at ``iteration`` (1-based; 0 counts as the first): c, falling
        linearly to 0 over ``value_bonus_iterations`` N when set: c * max(0, 1 - (i - 1) / N)."""
        bonus, span = self.options.value_bonus, self.options.value_bonus_iterations
        if not span:
            return bonus
        return bonus * max(0.0, 1.0 - (max(iteration, 1) - 1) / span)

    def _valued(self, decisions: list[Decision], reduce: Any, iteration: int) -> list[Decision]:
        """Adds each played answer's return to the table, then values every answer of each
        menu: (S_b + k V) / (C_b + k), V the position's mean over its answers' records."""
        table = self.values
        menus = [
            torch.tensor([answer_slot(s, s.token_ids, table.buckets) for s in d.samples])
            for d in decisions
        ]
        played = torch.tensor([int(m[d.chosen]) for m, d in zip(menus, decisions, strict=True)])
        returns = [d.samples[d.chosen].reward for d in decisions]
        table.add(played.long(), torch.tensor(returns, dtype=torch.float64), reduce)
        valued, bonus = [], self.bonus_at(iteration)
        for decision, menu in zip(decisions, menus, strict=True):
            sums, counts = table.sums[menu], table.counts[menu]
            mean = sums.sum() / counts.sum() if counts.sum() > 0 else torch.zeros(())
            values = (sums + table.prior * mean) / (counts + table.prior)
            if bonus > 0:  # optimism in the face of few visits
                values = values + bonus / torch.sqrt(1.0 + counts)
            valued.append(replace(decision, values=tuple(values.tolist())))
        return valued

    def wants_reference(self) -> bool:
        return self.options.kl_coef > 0 and self.options.uniform_magnet < 1

    def state_dict(self) -> dict[str, Any]:
        return {} if self.values is None else {"answer_values": self.values.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.values is not None and "answer_values" in state:
            self.values.load_state_dict(state["answer_values"])

    def weight(self, items: Sequence[Any]) -> float:
        return float(len(items))  # a mean over decisions

    def loss(self, items: Sequence[Any], current: Scored, reference: Scored | None) -> Loss:
        totals = (current.logp * current.mask).sum(-1)
        ref_totals = None if reference is None else (reference.logp * reference.mask).sum(-1)
        options = self.options
        scale = options.role_lr_scale
        parts: dict[str, list[torch.Tensor]] = {name: [] for name in self.metric_names}
        losses, k = [], 0
        for item in items:
            n = len(item.samples)
            logits = totals[k : k + n]
            logq = torch.log_softmax(logits, dim=0)
            q = logq.exp()
            a = item.chosen
            played = item.samples[a]
            weight = scale.get(played.role, 1.0) * item.advantage
            weight *= played.sampling.age_weight(played.staleness)
            cap = played.sampling.importance_cap
            if cap is not None and played.choice_logprob is not None:  # served: q / q_b
                weight = weight * torch.exp(logq[a].detach() - played.choice_logprob).clamp(max=cap)
            if options.update in _VALUED:
                values = torch.tensor(item.values, dtype=logits.dtype, device=logits.device)
            if options.update == "all-answers":
                # its gradient on the logits is q * (value - q . value): the expected policy
                # gradient over the whole menu, with the table's values for the returns
                expected = (q.detach() * values).sum()
                policy = -scale.get(played.role, 1.0) * (q * (values - expected)).sum()
            elif options.update == "all-answers-neurd":
                policy = -scale.get(played.role, 1.0) * self._neurd(logits, q, values)
            elif options.update == "neurd":
                importance = (1.0 / q[a].detach()).clamp(max=options.max_weight)
                policy = -weight * importance * (logits[a] - logits.mean())
            else:
                policy = -weight * logq[a]
            entropy = -(q * logq).sum()
            loss = policy - options.entropy_coef * entropy
            kl = torch.zeros((), device=logits.device)
            magnet = self._magnet(None if ref_totals is None else ref_totals[k : k + n], logq)
            if magnet is not None:
                if options.kl_direction == "reverse":
                    kl = (magnet.exp() * (magnet - logq)).sum()
                else:
                    kl = (q * (logq - magnet)).sum()
                loss = loss + options.kl_coef * kl
            losses.append(loss)
            for name, value in zip(parts, (policy, kl, entropy, q[a]), strict=True):
                parts[name].append(value.detach())
            k += n
        metrics = {name: torch.stack(v).mean().item() for name, v in parts.items()}
        return Loss(torch.stack(losses).mean(), metrics)

    def _neurd(self, logits: torch.Tensor, q: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """sum_b A_b (y_b - mean y), A_b = v_b - q . v detached, each term held at the threshold."""
        advantage = values - (q.detach() * values).sum()
        centred = logits - logits.mean()
        beyond = self.options.logit_threshold
        held = ((centred.detach() >= beyond) & (advantage > 0)) | (
            (centred.detach() <= -beyond) & (advantage < 0)
        )
        return (advantage.masked_fill(held, 0.0) * centred).sum()

    def _magnet(self, ref_totals: torch.Tensor | None, logq: torch.Tensor) -> torch.Tensor | None:
        """log of the KL magnet over a menu (``logq``'s); None without a KL term."""
        share = self.options.uniform_magnet
        if self.options.kl_coef <= 0 or (ref_totals is None and share < 1):
            return None
        uniform = torch.full_like(logq, -math.log(len(logq))).detach()
        if ref_totals is None or share >= 1:
            return uniform
        ref_logq = torch.log_softmax(ref_totals, dim=0)
        if share <= 0:
            return ref_logq
        mix = torch.stack([ref_logq + math.log1p(-share), uniform + math.log(share)])
        return torch.logsumexp(mix, dim=0)
