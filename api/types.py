"""The records every part of selfplay shares: messages, completions, turns and episodes.

They are frozen dataclasses because thousands of them are made in the rollout hot loop, and
they round-trip through JSON because every match is written to ``episodes.jsonl`` and must be
readable by a person and replayable from its seed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any

Role = str
Payoffs = dict[Role, float]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: ``role`` is the chat role (system/user/assistant), not the game role."""

    role: str
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class Completion:
    """What a policy returns for one prompt.

    ``token_ids`` and ``logprobs`` are those of the generated tokens (empty for scripted
    players); ``prompt_ids`` are the tokens the text was conditioned on, kept so a trainer can
    rescore exactly what was sampled. ``menu`` lists the answers the text was chosen from
    (itself included) when the policy chose among the legal answers (``generation.choice:
    legal``) instead of writing; it is empty otherwise.
    """

    text: str
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    prompt_ids: tuple[int, ...] = ()
    menu: tuple[str, ...] = ()
    # log q(text) over ``menu`` under the policy that chose it, when the chooser records it
    # (a served learner does: an overlapped run corrects for the version that chose)
    choice_logprob: float | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One attempt by one role. An invalid attempt is a turn too, with ``valid=False``."""

    role: Role
    seat: str  # name of the policy holding this role in this match
    prompt: tuple[Message, ...]
    text: str
    action: str | None
    valid: bool
    reason: str | None = None
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    prompt_ids: tuple[int, ...] = ()
    menu: tuple[str, ...] = ()  # the legal answers the text was chosen from (Completion.menu)
    choice_logprob: float | None = None  # Completion.choice_logprob

    def to_dict(self) -> dict[str, Any]:
        data = {
            "role": self.role,
            "seat": self.seat,
            "text": self.text,
            "action": self.action,
            "valid": self.valid,
            "reason": self.reason,
            "prompt": [m.as_dict() for m in self.prompt],
            "prompt_ids": list(self.prompt_ids),
            "token_ids": list(self.token_ids),
            "logprobs": list(self.logprobs),
        }
        if self.menu:  # only a chosen answer has one; written turns keep their old form
            data["menu"] = list(self.menu)
        if self.choice_logprob is not None:
            data["choice_logprob"] = self.choice_logprob
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(
            role=data["role"],
            seat=data["seat"],
            prompt=tuple(Message(**m) for m in data["prompt"]),
            text=data["text"],
            action=data["action"],
            valid=data["valid"],
            reason=data.get("reason"),
            token_ids=tuple(data.get("token_ids", ())),
            logprobs=tuple(data.get("logprobs", ())),
            prompt_ids=tuple(data.get("prompt_ids", ())),
            menu=tuple(data.get("menu", ())),
            choice_logprob=data.get("choice_logprob"),
        )


@dataclass(frozen=True, slots=True)
class Episode:
    """A finished match: who sat where, every turn, the payoffs and the game's signals.

    ``state`` is the final game state as JSON, so the match can be inspected or replayed.
    ``extra`` is the game's own data (a task's reference answer). ``record`` is what the run
    wrote about the match once it was scored (empty until then): ``iteration``, ``rewards``
    (each turn's share of every weighted reward term, undiscounted: ``turns`` is one
    ``{term: value}`` per turn, ``roles`` the per-role totals) and ``notes`` (what rewards
    read per term, e.g. a judge's raw answers: ``{term: [{"turn", "answer", "score"}]}``).
    """

    game: str
    seed: int
    seats: dict[Role, str]
    turns: tuple[Turn, ...]
    outcome: Payoffs
    signals: dict[str, float] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)

    def winner(self) -> Role | None:
        """The role with the strictly highest payoff, or None for a draw."""
        best = max(self.outcome.values())
        leaders = [r for r, v in self.outcome.items() if v == best]
        return leaders[0] if len(leaders) == 1 else None

    def to_dict(self) -> dict[str, Any]:
        """What ``dataclasses.asdict`` gives, built without deep-copying every turn twice.

        A run writes every match it plays, and ``asdict``'s deep copy of the turns (then
        thrown away for their own ``to_dict``) was most of that cost.
        """
        data = asdict(replace(self, turns=()))
        data["turns"] = [t.to_dict() for t in self.turns]
        return data

    def to_json(self) -> str:
        """``json.dumps(self.to_dict())``, without copying what the dump only reads.

        Every match a run plays is written, so the copy was most of an iteration's writing.
        """
        data = {name: getattr(self, name) for name in _EPISODE_FIELDS}
        data["turns"] = [t.to_dict() for t in self.turns]
        return json.dumps(data, ensure_ascii=False, default=_plain)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        fields = dict(data)
        fields["turns"] = tuple(Turn.from_dict(t) for t in data["turns"])
        return cls(**fields)

    @classmethod
    def from_json(cls, line: str) -> Episode:
        return cls.from_dict(json.loads(line))


_EPISODE_FIELDS = tuple(f.name for f in fields(Episode))


def _plain(value: Any) -> Any:
    """What ``asdict`` makes of a dataclass held in an episode's dicts (json's fallback)."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
