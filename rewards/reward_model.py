"""A reward model as a reward: a local sequence-classification model scores (prompt, answer).

The RLHF signal of seed 000, and what Language Self-Play used as its judge: a model with a
classification head (``AutoModelForSequenceClassification``) saved in a local folder
(``save_pretrained``) reads what a player was asked and what it answered and gives one
number. Unlike an LLM judge it writes nothing, so nothing is unreadable: every scored turn
gets a score, and the same text always gets the same score.

- ``scope=turn`` (the default): each turn is scored on its own, (its prompt, its text): a
  per-turn reward.
- ``scope=transcript``: the match is scored once, (the first turn's prompt, every turn as
  ``[role] text``), and every role gets that score.

How the pair is shown to the model: through the tokenizer's chat template when it has one
(the prompt's messages, then the answer as the assistant's message), else as a text pair
(prompt, answer), the way BERT-style classifiers are trained. Sequences longer than
``max_length`` tokens (or the model's positions, if fewer) lose their start, never the
answer's end: the prompt is cut first, then the answer from its beginning, because what a
reward model must see is how the answer ends. The score is the logit ``label`` (0 for the
usual one-logit reward model), optionally through a sigmoid. With ``strip_self_assessment``
the answer loses its sentences that speak to a judge or claim a score before it is scored
(see `selfplay.rewards.judge`). Texts are scored ``batch_size`` at a time, right-padded, on
the run's device (`RewardContext.device`; the CPU when None).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from selfplay.api.reward import (
    Reward,
    RewardContext,
    RewardError,
    RewardOptions,
    RoleScores,
    TurnScores,
)
from selfplay.api.types import Episode, Message
from selfplay.plugins.hookspecs import hookimpl
from selfplay.rewards import judge_prompts as prompts

# Each text is clipped to its last N characters before it is tokenised: token truncation
# decides what the model sees, this only bounds the tokeniser's work on runaway outputs.
MAX_CHARS = 20_000
Pair = tuple[tuple[Message, ...], str]  # (the prompt's messages, the answer)


class RewardModelOptions(RewardOptions):
    model: str = Field(
        description="A local folder holding a sequence-classification model and its tokenizer."
    )
    scope: Literal["turn", "transcript"] = Field(
        default="turn", description="Score each turn (prompt, answer) or the whole match."
    )
    batch_size: int = Field(default=8, ge=1, description="Texts scored in one forward pass.")
    max_length: int = Field(
        default=512, ge=8, description="Longest input in tokens; the start is cut, never the end."
    )
    label: int = Field(default=0, ge=0, description="Which logit is the score (0 for one logit).")
    sigmoid: bool = Field(default=False, description="Pass the logit through a sigmoid (0..1).")
    strip_self_assessment: bool = Field(
        default=False, description="Drop sentences that address a judge or claim a score."
    )


class RewardModel(Reward):
    """A local Hugging Face sequence-classification model scores each answer (or the match)."""

    name = "reward-model"
    Options = RewardModelOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        model = self.options.model
        # ``Org/Name`` that is no local folder is a hub id: the run resolves it through the
        # Hugging Face cache when it binds this reward (RewardContext.folder).
        self.hub_id = _looks_like_hub_id(model)
        self.folder = model if self.hub_id else _checked_folder(model)
        self.per_turn = self.options.scope == "turn"
        self._loaded: tuple[Any, Any, Any] | None = None  # (model, tokenizer, device)
        self._limit = self.options.max_length  # and no more than the model's positions
        self._counts = {"scored": 0, "truncated": 0}

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores] | list[TurnScores]:
        self._counts = dict.fromkeys(self._counts, 0)
        if self.options.scope == "transcript":
            scores = iter(self.score([_transcript_pair(ep) for ep in episodes if ep.turns]))
            return [dict.fromkeys(ep.seats, next(scores) if ep.turns else None) for ep in episodes]
        pairs = [
            (turn.prompt, turn.text)
            for ep in episodes
            for turn in ep.turns
            if self.applies_to(turn.role)
        ]
        scores = iter(self.score(pairs))
        return [
            [next(scores) if self.applies_to(turn.role) else None for turn in ep.turns]
            for ep in episodes
        ]

    def counters(self) -> dict[str, float]:
        return {key: float(value) for key, value in self._counts.items()}

    def bind(self, context: RewardContext) -> None:
        super().bind(context)
        if self.hub_id:
            if context.folder is None:
                raise RewardError(
                    f"reward-model: {self.options.model!r} is not a local folder, and nothing "
                    "here resolves hub ids; pass a folder saved with save_pretrained."
                )
            where = "reward_options.reward-model.model"
            self.folder = _checked_folder(str(context.folder(self.options.model, where)))

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        """One score per (prompt messages, answer), ``batch_size`` pairs per forward pass."""
        if not pairs:
            return []
        import torch

        model, tokenizer, device = self._model()
        encoded = [self._encode(tokenizer, messages, answer) for messages, answer in pairs]
        scores: list[float] = []
        size = self.options.batch_size
        with torch.inference_mode():
            for start in range(0, len(encoded), size):
                batch = _padded(encoded[start : start + size], _pad_id(tokenizer), device)
                logits = model(**batch).logits.float()
                column = logits[:, self.options.label]
                if self.options.sigmoid:
                    column = torch.sigmoid(column)
                scores.extend(float(x) for x in column.cpu())
        self._counts["scored"] += len(scores)
        return scores

    # ---- the model and its inputs ---------------------------------------------------------

    def _model(self) -> tuple[Any, Any, Any]:
        """Loaded on first use, on the bound device, in eval mode."""
        if self._loaded is None:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            device = torch.device(self.context.device or "cpu")
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.folder)
                model = AutoModelForSequenceClassification.from_pretrained(self.folder)
            except (OSError, ValueError) as err:
                raise RewardError(
                    f"reward-model: {self.folder} holds no loadable sequence-classification "
                    f"model and tokenizer ({err}); save one there with save_pretrained."
                ) from None
            labels = model.config.num_labels
            if self.options.label >= labels:
                raise RewardError(
                    f"reward-model: label={self.options.label}, but {self.folder} has "
                    f"{labels} logit(s); set reward_options.reward-model.label to 0..{labels - 1}."
                )
            positions = getattr(model.config, "max_position_embeddings", None)
            self._limit = min(self.options.max_length, positions or self.options.max_length)
            if model.config.pad_token_id is None:
                model.config.pad_token_id = _pad_id(tokenizer)  # the head finds the last token
            self._loaded = (model.to(device).eval(), tokenizer, device)
        return self._loaded

    def _encode(
        self, tokenizer: Any, messages: tuple[Message, ...], answer: str
    ) -> dict[str, list[int]]:
        """Token ids (and type ids where the model takes them), at most ``max_length``."""
        answer = answer[-MAX_CHARS:]
        if self.options.strip_self_assessment:
            answer = prompts.strip_self_assessment(answer)
        limit = self._limit
        if getattr(tokenizer, "chat_template", None):
            chat = [m.as_dict() for m in messages] + [{"role": "assistant", "content": answer}]
            text = tokenizer.apply_chat_template(chat, tokenize=False)
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            self._counts["truncated"] += len(ids) > limit
            return {"input_ids": ids[-limit:]}
        prompt = "\n\n".join(m.content for m in messages)[-MAX_CHARS:]
        return self._encode_pair(tokenizer, prompt, answer)

    def _encode_pair(self, tokenizer: Any, prompt: str, answer: str) -> dict[str, list[int]]:
        """A text pair cut from the left: the prompt first, then the answer's beginning."""
        backend = getattr(tokenizer, "_tokenizer", None)
        if backend is None:
            raise RewardError(
                f"reward-model: the tokenizer in {self.folder} is not a fast (tokenizers) one "
                "and has no chat template; save the model with a fast tokenizer."
            )
        first = backend.encode(prompt, add_special_tokens=False)
        second = backend.encode(answer, add_special_tokens=False)
        budget = self._limit - backend.num_special_tokens_to_add(True)
        if len(first) + len(second) > budget:
            self._counts["truncated"] += 1
            kept = min(len(second), budget)
            second.truncate(kept, direction="left")
            first.truncate(budget - kept, direction="left")
        pair = backend.post_process(first, second, add_special_tokens=True)
        encoded = {"input_ids": list(pair.ids)}
        if "token_type_ids" in tokenizer.model_input_names:
            encoded["token_type_ids"] = list(pair.type_ids)
        return encoded


def _looks_like_hub_id(model: str) -> bool:
    parts = model.split("@")[0].split("/")
    local = model.startswith((".", "/", "~")) or Path(model).expanduser().exists()
    return len(parts) == 2 and all(parts) and not local


def _checked_folder(model: str) -> str:
    folder = Path(model).expanduser()
    if not folder.is_dir():
        raise RewardError(
            f"reward-model: the model folder {model!r} does not exist; set "
            "reward_options.reward-model.model to a local folder saved with save_pretrained, "
            "or a hub id (Org/Name)."
        )
    if not (folder / "config.json").is_file():
        raise RewardError(
            f"reward-model: {model!r} has no config.json; it must be a folder written by "
            "save_pretrained (a sequence-classification model and its tokenizer)."
        )
    return str(folder)


def _transcript_pair(episode: Episode) -> Pair:
    return episode.turns[0].prompt, prompts.transcript(episode, MAX_CHARS)


def _pad_id(tokenizer: Any) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def _padded(rows: list[dict[str, list[int]]], pad: int, device: Any) -> dict[str, Any]:
    """Right padding with an attention mask: every real token keeps its position."""
    import torch

    width = max(len(row["input_ids"]) for row in rows)
    batch: dict[str, Any] = {}
    for key in rows[0]:
        fill = pad if key == "input_ids" else 0
        batch[key] = torch.tensor([row[key] + [fill] * (width - len(row[key])) for row in rows])
    batch["attention_mask"] = torch.tensor(
        [[1] * len(row["input_ids"]) + [0] * (width - len(row["input_ids"])) for row in rows]
    )
    return {key: value.to(device) for key, value in batch.items()}


@hookimpl
def register_rewards(register):
    register("reward-model", RewardModel)
