"""An LLM judge: a model reads a match and scores it.

Modes:
- ``pointwise``, ``scope=transcript``: the whole match is rated 0..scale; every role gets
  ``score / scale`` (a role suffix keeps it to one role).
- ``pointwise``, ``scope=turn``: each turn is rated on its own (what its player was asked and
  what it answered): per-turn scores ``score / scale``, a judge-made process reward.
- ``pairwise``: the judge compares the two roles of ``pair`` (default: the game's two roles)
  and names a winner: +1 to it, -1 to the other, 0 to both on a tie (zero-sum, as in
  debate training).

The judge model is ``reference`` (the learner's frozen starting point; the default, so the
learner cannot talk its own judge up), ``learner`` (the model judges itself, as in
Self-Rewarding LMs), a registered model name, local model folder or hub id, or a served model
(``openai:http://HOST:PORT/v1#MODEL``: any OpenAI-compatible server). An answer the parser
cannot read is masked (``None``) and counted (``unparsable``), never scored 0.

Judges can be played (benchmarks/judge_probe.py measures it): an answer that tells the judge
what to score, a longer answer, a copy of the task. Three options guard against that, each
off by default:
- ``strip_self_assessment``: sentences that address the judge or claim a score or their own
  correctness are removed from every answer before the judge reads it (counted: ``stripped``);
- ``max_prompt_overlap``: an answer whose word trigrams are at least this share copies of its
  task is not judged: in ``scope=turn`` it scores 0, elsewhere the judge reads a note that
  the answer repeated the task (counted: ``copies``);
- ``length_penalty``: each score loses this much per 100 characters that the scored role's
  text (its turn, or its turns in the match) runs beyond ``length_free`` characters, so length
  alone buys nothing.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from typing import Any

from selfplay.api.reward import (
    Reward,
    RewardContext,
    RewardError,
    RoleScores,
    TurnScores,
)
from selfplay.api.types import Episode, Message, Role, Turn
from selfplay.plugins.hookspecs import hookimpl
from selfplay.rewards import judge_prompts as prompts
from selfplay.rewards.judge_options import JudgeOptions

COPY_NOTE = "(no answer: this text repeated the task it was given)"
DEFAULT_TEMPLATES = {
    ("pointwise", "transcript"): "judge_transcript",
    ("pointwise", "turn"): "judge_turn",
    ("pairwise", "transcript"): "judge_pairwise",
}


class Judge(Reward):
    """An LLM judge scores a match or each turn (0..scale), or picks the better of two roles."""

    name = "judge"
    Options = JudgeOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        opts = self.options
        self.mode, self.scope, self.scale = opts.mode, opts.scope, opts.scale
        self._setup()

    def _setup(self) -> None:
        """What follows from mode, scope and scale (Quality fixes those three)."""
        opts = self.options
        self.template = prompts.load_template(
            opts.template or DEFAULT_TEMPLATES[(self.mode, self.scope)]
        )
        self.per_turn = self.scope == "turn"
        self.models = frozenset([opts.model])
        self.verdicts: tuple[str, ...] = ()  # answer=choose: the lines the judge picks among
        if opts.answer == "choose":
            self.verdicts = (
                prompts.WINNER_LINES
                if self.mode == "pairwise"
                else tuple(f"Score: {n}" for n in range(self.scale + 1))
            )
        self._counts = dict.fromkeys(("asked", "unparsable", "stripped", "copies"), 0)

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores] | list[TurnScores]:
        self._counts = dict.fromkeys(self._counts, 0)
        self._notes: list[list[dict[str, Any]]] = [[] for _ in episodes]
        self._where = {id(ep): k for k, ep in enumerate(episodes)}
        if self.scope == "turn":
            return self._turns(episodes)
        if self.mode == "pairwise":
            return self._pairwise(episodes)
        answers = self._ask([(ep, self._transcript_prompt(ep), 0) for ep in episodes])
        scores = [self._score(text) for text in answers]
        for ep, text, score in zip(episodes, answers, scores, strict=True):
            self._note(ep, None, text, score)
        return [
            {role: self._penalised(score, ep, role) for role in ep.seats}
            for ep, score in zip(episodes, scores, strict=True)
        ]

    def counters(self) -> dict[str, float]:
        return {key: float(value) for key, value in self._counts.items()}

    def bind(self, context: RewardContext) -> None:
        super().bind(context)
        self._fit_template()

    def _fit_template(self) -> None:
        """Check that the prompt, before any match text, and the answer fit the judge model's
        context; a default template too long for it gives way to its ``_compact`` version."""
        used = self._measure(self.template)
        if used is None:
            return
        tokens, room = used
        answer = self.options.max_new_tokens
        if tokens + answer <= room:
            return
        default = self.Options.model_fields["template"].default
        name = self.options.template or DEFAULT_TEMPLATES[(self.mode, self.scope)]
        # a game's own choice (reward_defaults) is a default too: the user chose nothing
        game = getattr(self.context, "game", None)
        by_game = getattr(game, "reward_defaults", {}).get(self.name, {}).get("template")
        if self.options.template in (default, by_game) and f"{name}_compact" in prompts.shipped():
            compact = prompts.load_template(f"{name}_compact")
            fits = self._measure(compact)
            if fits is not None and fits[0] + answer <= room:
                self.template = compact
                self.notices.append(
                    f"{self.name}: the {name} prompt takes {tokens} tokens before any match "
                    f"text, more than the judge model {self.options.model!r} reads ({room} "
                    f"positions, {answer} of them for the answer); judging with "
                    f"{name}_compact ({fits[0]} tokens) instead."
                )
                return
        raise RewardError(
            f"{self.name}: the {name} prompt takes {tokens} tokens before any match text and "
            f"the answer {answer} more, but the judge model {self.options.model!r} reads at "
            f"most {room} positions. Pass a shorter template (reward_options.{self.name}."
            f"template=FILE.txt), fewer max_new_tokens, or a judge model with a longer "
            f"context (reward_options.{self.name}.model=NAME)."
        )

    def _measure(self, template: Any) -> tuple[int, int] | None:
        """(tokens, context) of ``template`` with empty fields, as the judge model reads it."""
        if self.context.measure is None:
            return None
        text = template.substitute(dict.fromkeys(prompts.PLACEHOLDERS, ""), scale=str(self.scale))
        return self.context.measure(self.options.model, self._messages(text))

    def notes(self) -> list[list[dict[str, Any]]]:
        """The judge's raw answers of the last call, with what was read from them."""
        return getattr(self, "_notes", [])

    def _note(self, episode: Episode, turn: int | None, answer: str, score: Any) -> None:
        self._notes[self._where[id(episode)]].append(
            {"turn": turn, "answer": answer, "score": score}
        )

    # ---- the three ways of judging --------------------------------------------------------

    def _turns(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        """Each turn of the judged role(s); a copy of its task scores 0 unasked."""
        judged = [
            [self.applies_to(t.role) and not self._copies(t) for t in ep.turns] for ep in episodes
        ]
        asks = [
            (ep, self._turn_prompt(ep, i), i + 1)
            for ep, asked in zip(episodes, judged, strict=True)
            for i, ask in enumerate(asked)
            if ask
        ]
        answers = iter(self._ask(asks))
        results: list[TurnScores] = []
        for ep, asked in zip(episodes, judged, strict=True):
            row: TurnScores = []
            for turn, ask in zip(ep.turns, asked, strict=True):
                if not self.applies_to(turn.role):
                    row.append(None)
                    continue
                score = 0.0
                if ask:
                    text = next(answers)
                    score = self._score(text)
                    self._note(ep, len(row), text, score)
                row.append(self._penalised(score, ep, turn.role, [turn]))
            results.append(row)
        return results

    def _pairwise(self, episodes: Sequence[Episode]) -> list[RoleScores]:
        """Which side is "A" is drawn per match from its seed: judges favour a position."""
        pair = self._pair()
        sides = [
            pair if random.Random(f"judge-sides-{ep.seed}").random() < 0.5 else pair[::-1]
            for ep in episodes
        ]
        answers = self._ask(
            [
                (ep, self._transcript_prompt(ep, first=a, second=b), 0)
                for ep, (a, b) in zip(episodes, sides, strict=True)
            ]
        )
        results: list[RoleScores] = []
        for ep, (a, b), text in zip(episodes, sides, answers, strict=True):
            winner = prompts.parse_winner(text)
            named = {"A": a, "B": b}.get(winner or "", winner)
            self._note(ep, None, text, None if named is None else f"winner: {named}")
            scores: RoleScores = dict.fromkeys(ep.seats)
            if winner is None:
                self._counts["unparsable"] += 1
            else:
                sign = {"A": 1.0, "B": -1.0, "tie": 0.0}[winner]
                scores.update({a: self._penalised(sign, ep, a), b: self._penalised(-sign, ep, b)})
            results.append(scores)
        return results

    def _pair(self) -> tuple[Role, Role]:
        roles = tuple(self.game().roles)
        pair = tuple(self.options.pair or roles)
        if len(pair) != 2 or not set(pair) <= set(roles):
            raise RewardError(
                f"judge: pairwise needs two of {self.game().name}'s roles ({', '.join(roles)}); "
                f"set reward_options.judge.pair, e.g. [{', '.join(roles[:2])}]."
            )
        return pair[0], pair[1]

    # ---- prompts and answers --------------------------------------------------------------

    def _transcript_prompt(self, episode: Episode, **extra: str) -> str:
        limit = self.options.max_chars
        return self.template.substitute(
            dict.fromkeys(prompts.PLACEHOLDERS, ""),
            game=episode.game,
            task=prompts.task_of(episode.turns[0], limit) if episode.turns else "",
            transcript=prompts.transcript(episode, limit, self._shown),
            scale=str(self.scale),
            **extra,
        )

    def _turn_prompt(self, episode: Episode, index: int) -> str:
        turn, limit = episode.turns[index], self.options.max_chars
        return self.template.substitute(
            dict.fromkeys(prompts.PLACEHOLDERS, ""),
            game=episode.game,
            role=turn.role,
            task=prompts.task_of(turn, limit),
            response=prompts.clip(self._shown(turn), limit),
            scale=str(self.scale),
        )

    # ---- the guards (see the module doc) ---------------------------------------------------

    def _shown(self, turn: Turn) -> str:
        """The text of ``turn`` as the judge reads it."""
        if self._copies(turn):
            return COPY_NOTE
        text = turn.text
        if self.options.strip_self_assessment:
            stripped = prompts.strip_self_assessment(text)
            self._counts["stripped"] += stripped != text.rstrip()
            text = stripped
        return text

    def _copies(self, turn: Turn) -> bool:
        """Whether the turn is (mostly) a copy of what it was asked; counted once per turn."""
        limit = self.options.max_prompt_overlap
        if limit is None or not turn.prompt:
            return False
        copied = prompts.prompt_overlap(turn.text, turn.prompt[-1].content) >= limit
        self._counts["copies"] += copied
        return copied

    def _penalised(
        self, score: float | None, episode: Episode, role: Role, turns: list[Turn] | None = None
    ) -> float | None:
        """``score`` less the length penalty of ``role``'s text (its turns, or ``turns``)."""
        if score is None or not self.options.length_penalty:
            return score
        chosen = turns if turns is not None else [t for t in episode.turns if t.role == role]
        excess = max(0, sum(len(t.text) for t in chosen) - self.options.length_free)
        return score - self.options.length_penalty * excess / 100

    def _ask(self, asks: list[tuple[Episode, str, int]]) -> list[str]:
        """One batched call to the judge model; ``asks`` are (episode, prompt, sub-seed)."""
        if not asks:
            return []
        if self.context.policy is None:
            raise RuntimeError(f"The {self.name!r} reward needs a model: call bind() first.")
        from selfplay.api.policy import Request

        policy = self.context.policy(self.options.model, max_new_tokens=self.options.max_new_tokens)
        game = self.game()
        requests = [
            Request(
                game=game,
                state=game.State.model_validate(ep.state) if ep.state else game.reset(ep.seed),
                role="judge",
                messages=self._messages(prompt),
                rng=random.Random(ep.seed * 1_000_003 + sub),
                menu=self.verdicts,
            )
            for ep, prompt, sub in asks
        ]
        self._counts["asked"] += len(requests)
        start, size = self.options.prefill or "", self.options.batch_size or len(requests)
        answers: list[str] = []
        shown = self.context.phase(self.name) if self.context.phase else None
        with shown or contextlib.nullcontext() as told:
            for first in range(0, len(requests), size):
                batch = requests[first : first + size]
                answers += [start + c.text for c in policy.act(batch, greedy=self.options.greedy)]
                if told is not None:
                    told(len(answers), len(requests))
        return answers

    def _messages(self, prompt: str) -> tuple[Message, ...]:
        """The judge's prompt, and the start of its reply when ``prefill`` is set."""
        if self.options.prefill:
            return (Message("user", prompt), Message("assistant", self.options.prefill))
        return (Message("user", prompt),)

    def _score(self, text: str) -> float | None:
        score = prompts.parse_score(text, self.scale)
        if score is None:
            self._counts["unparsable"] += 1
            return None
        return score / self.scale


@hookimpl
def register_rewards(register):
    register("judge", Judge)
