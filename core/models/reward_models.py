"""The policies model-based rewards (judges) ask for by name.

- ``learner``: the model being trained, judging itself (Self-Rewarding LMs).
- ``reference``: the run's reference policy (core/train/update/reference.py; as the cold start left
  it), the default judge. Without LoRA it is the loop's frozen copy of the model (kept, saved
  and restored with checkpoints whenever a reward, the objective or the KL term needs it);
  with LoRA it is the same base with the reference's adapter weights swapped in, so no second
  copy of the weights exists.
- ``learner:NAME``, ``reference:NAME``: in a run of several learners, which one (a judge
  must name it there).
- anything else: a registered model name, a local model folder, a Hugging Face hub id
  (``Org/Name``, through the Hugging Face cache), loaded once, or a served model
  (``openai:http://HOST:PORT/v1#MODEL``, core/models/served/policy.py), asked over HTTP.

A judge writes its own number of tokens (``max_new_tokens``) and shares the learner's
tokenizer and sampling settings; the learner's and the reference's weights are shared, never
copied here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy
from selfplay.api.types import Message
from selfplay.core.config import RunConfig


class RewardModels:
    """``models(name, max_new_tokens=None) -> Policy``, each made once."""

    def __init__(
        self,
        config: RunConfig,
        learner: Policy,
        reference: Any = None,
        learners: Sequence[Any] = (),
    ) -> None:
        self.config, self.learner, self.reference = config, learner, reference
        # several learners (core/train/learners.py): a judge names which one, learner:NAME
        self.learners = {x.name: x for x in learners} if len(learners) > 1 else {}
        self._made: dict[tuple[str, int | None], Policy] = {}

    def __call__(self, name: str, *, max_new_tokens: int | None = None) -> Policy:
        key = (name, max_new_tokens)
        if key not in self._made:
            twin = next((p for (n, _), p in self._made.items() if n == name), None)
            if twin is not None and hasattr(twin, "model") and hasattr(twin, "max_new_tokens"):
                # the same weights with another answer length: never a second copy in memory
                twin = copy.copy(twin)
                twin.max_new_tokens = max_new_tokens or self.config.generation.max_new_tokens
                self._made[key] = twin
            else:
                self._made[key] = self._make(name, max_new_tokens)
        return self._made[key]

    def measure(self, name: str, messages: Sequence[Message]) -> tuple[int, int] | None:
        """(prompt tokens, context positions) of model ``name`` for ``messages``; None for a
        model that is not a Hugging Face model in memory (a served or scripted one)."""
        policy: Any = self(name)
        tokenizer, model = getattr(policy, "tokenizer", None), getattr(policy, "model", None)
        context = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        if tokenizer is None or not context or not hasattr(policy, "render"):
            return None
        special = not tokenizer.chat_template
        ids = tokenizer(policy.render(messages), add_special_tokens=special, verbose=False)
        return len(ids["input_ids"]), int(context)

    def _make(self, name: str, max_new_tokens: int | None) -> Policy:
        kind, _, which = name.partition(":")
        if self.learners and kind in ("learner", "reference"):
            return self._of_learner(kind, which, max_new_tokens)
        if name == "learner":
            return self._sharing(self._learner_model(name), name, max_new_tokens)
        if name == "reference":
            reference = self.reference
            if reference is None or not reference.exists:
                raise ConfigError(
                    "A reward asks for the 'reference' model, but this run keeps no reference "
                    "policy; the loop must be given one (RewardModels(reference=...))."
                )
            if reference.copy is not None:
                return self._sharing(reference.copy, name, max_new_tokens)
            model = self._learner_model(name)
            policy = self._sharing(model, name, max_new_tokens)
            policy.role_context = lambda _role: _scoring(reference)
            return policy
        from selfplay.core.models.loading import build_model

        generation = self.config.generation.model_copy(
            update={"max_new_tokens": max_new_tokens or self.config.generation.max_new_tokens}
        )
        other = self.config.model_copy(
            update={"model": name, "model_options": {}, "generation": generation}
        )
        policy = build_model(other, what="The judge model")
        policy.name = f"judge:{name}"
        return policy

    def _of_learner(self, kind: str, which: str, max_new_tokens: int | None) -> Policy:
        """``learner:NAME`` or ``reference:NAME`` in a run of several learners."""
        if which not in self.learners:
            names = ", ".join(f"{kind}:{n}" for n in self.learners)
            said = f"{kind}:{which}" if which else kind
            raise ConfigError(
                f"A judge asks for the {said!r} model, but this run has several learners: "
                f"name which one ({names})."
            )
        learner = self.learners[which]
        alone = RewardModels(self.config, learner.policy, learner.reference)
        policy = alone(kind, max_new_tokens=max_new_tokens)
        policy.name = f"judge:{kind}:{which}"
        return policy

    def _learner_model(self, name: str) -> Any:
        model = getattr(self.learner, "model", None)
        if model is None or not hasattr(self.learner, "tokenizer"):
            raise ConfigError(
                f"The {name!r} judge needs a Hugging Face learner, but the learner "
                f"{type(self.learner).__name__} has no model and tokenizer; name a model "
                "folder as the judge instead."
            )
        return model

    def _sharing(self, model: Any, name: str, max_new_tokens: int | None) -> Policy:
        """A policy on ``model`` with the learner's tokenizer and settings (weights shared)."""
        from selfplay.core.models.hf_policy import HFPolicy

        learner = self.learner
        return HFPolicy(
            model,
            learner.tokenizer,
            name=f"judge:{name}",
            max_new_tokens=max_new_tokens or learner.max_new_tokens,
            temperature=learner.temperature,
            top_p=learner.top_p,
            include_system=learner.include_system,
            seed=learner.seed,
            share_prefix=learner.share_prefix,
        )


@contextmanager
def _scoring(reference: Any) -> Iterator[None]:
    """The reference's adapters swapped in while the judge generates (LoRA)."""
    with reference.scoring():
        yield
