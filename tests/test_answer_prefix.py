"""`game_options.answer_prefix`: the reply starts with the game's text; the policy continues it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from selfplay.api.game import InvalidMoveRules, answer_text
from selfplay.api.policy import MockPolicy, ScriptedPolicy
from selfplay.core.models.policy_table import policy_table
from selfplay.core.models.tiny import load_tiny_policy
from selfplay.core.rollout import play
from selfplay.core.train.cold_start import build_examples, scripted_transcripts
from selfplay.games.kuhn_poker import KuhnPoker


def test_the_prompt_ends_with_the_prefix_and_the_rules_read_prefix_plus_continuation():
    game = KuhnPoker({"answer_prefix": "["}, InvalidMoveRules(allowance=1))
    state = game.reset(3)
    messages = game.observe(state, "player_0")
    assert messages[-1].role == "assistant" and messages[-1].content == "["
    moved, action = game.judge(state, "player_0", "bet] because I hold a good card")
    assert action == "bet" and moved.error is None
    refused, none = game.judge(state, "player_0", "I would rather not say.")
    assert none is None and "no answer" in refused.error  # "[" + prose names no move
    # a retry keeps the prefix last, after the reason
    again = game.observe(refused, "player_0")
    assert again[-1].content == "[" and "Invalid move" in again[-2].content
    # no prefix: the prompt is the game's own and a bare continuation is refused
    plain = KuhnPoker()
    assert plain.observe(state, "player_0")[-1].role != "assistant"
    assert plain.judge(state, "player_0", "bet]")[1] is None


def test_every_seat_writes_a_continuation_and_matches_play_out():
    game = KuhnPoker({"answer_prefix": "["})
    learner = MockPolicy(lambda req: req.game.legal_actions(req.state, req.role)[-1][1:])
    seating = {"player_0": learner, "player_1": ScriptedPolicy("random")}
    episodes = play(game, [seating] * 6, list(range(6)))
    for episode in episodes:
        assert all(t.valid for t in episode.turns)
        assert not any(t.text.startswith("[") for t in episode.turns)  # scripted ones too
        assert episode.turns[0].action == "bet"
    # cold-start targets continue the prefix, so the model learns "check]" after "["
    transcripts = scripted_transcripts(game, ["random"], 4, seed=0)
    assert transcripts and all(not text.startswith("[") for _, text in transcripts)
    policy = load_tiny_policy()
    assert policy.render(transcripts[0][0]).endswith("[")
    example = build_examples(policy, game, transcripts[:1])[0]
    assert policy.tokenizer.decode(list(example.target_ids[:-1])) == transcripts[0][1]


def test_the_policy_table_scores_the_continuations():
    game = KuhnPoker({"answer_prefix": "["})
    assert answer_text(game, "bet") == "bet]" and answer_text(KuhnPoker(), "bet") == "[bet]"
    table = policy_table(load_tiny_policy(), game)
    assert len(table) == 12
    for probs in table.values():
        assert sum(probs.values()) == pytest.approx(1.0)
    assert table != policy_table(load_tiny_policy(), KuhnPoker())  # another prompt, other odds


def test_a_prefix_longer_than_an_answer_is_refused():
    with pytest.raises(ValidationError, match="answer_prefix"):
        KuhnPoker({"answer_prefix": "x" * 41})


def test_show_joins_the_prefix_to_the_continuation():
    from selfplay.core.commands.show import Entry, render

    game = KuhnPoker({"answer_prefix": "["})
    learner = MockPolicy(lambda req: req.game.legal_actions(req.state, req.role)[-1][1:])
    (episode,) = play(game, [{"player_0": learner, "player_1": learner}], [0])
    text = render(Entry(1, 1, episode)).plain
    first = episode.turns[0]
    assert f"text: [{first.text}\n" in text  # one reply, as the rules read it
    assert "[assistant]" not in text and f"[user] {first.prompt[-2].content}" in text
