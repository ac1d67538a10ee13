"""HFPolicy: left-padded batches, exact logprobs, stopping, prompt formats, reproducibility."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import DynamicCache

from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.models import hf_policy
from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.kv_cache import PreallocatedLayer, shared_prefix_length
from selfplay.core.models.sampling import top_p_filter
from selfplay.core.models.tiny import build_tiny, save_tiny
from selfplay.games.tictactoe import TicTacToe

GAME = TicTacToe()
BOARDS = ["x1o|345|678", "012|345|678", "xo2|x45|o78"]
SHORT_RULES = "Tic-tac-toe. Answer with an empty cell number in brackets, like [4]."


def request(user: str, seed: int = 0, system: str | None = SHORT_RULES) -> Request:
    messages = ([Message("system", system)] if system else []) + [Message("user", user)]
    state = GAME.reset(seed)
    return Request(GAME, state, "player_0", tuple(messages), random.Random(seed))


def varied_requests(seed: int = 0) -> list[Request]:
    """Prompts of different lengths, so the batch needs padding."""
    users = [f"Board {b}. You are x. Your move?" for b in BOARDS]
    users += ["Invalid move: cell 4 is already taken. Try again.\nBoard xo2|x45|o78. Your move?"]
    return [request(u, seed + i) for i, u in enumerate(users)]


@pytest.fixture(scope="module")
def lively():
    """A tiny model with large random weights, so different prompts give different outputs."""
    return build_tiny(seed=3, initializer_range=0.3)


def make_policy(lively, **options) -> HFPolicy:
    model, tokenizer = lively
    return HFPolicy(model, tokenizer, **{"max_new_tokens": 6, **options})


@pytest.fixture(params=[True, False], ids=["shared-prefix", "plain-padding"])
def share_prefix(request, monkeypatch):
    """Run a test with the shared-prefix prefill forced on, and with it off."""
    monkeypatch.setattr(hf_policy, "SHARED_PREFIX_MIN_SAVING", 0)
    return request.param


def recompute_logprobs(model, prompt_ids, token_ids, temperature=1.0) -> list[float]:
    ids = torch.tensor([list(prompt_ids) + list(token_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1] / temperature
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, torch.tensor(token_ids)[:, None]).squeeze(-1).tolist()


@pytest.mark.parametrize("include_system", [True, False])
def test_batched_greedy_equals_batch_of_one(lively, include_system, share_prefix):
    policy = make_policy(lively, include_system=include_system, share_prefix=share_prefix)
    batch = policy.act(varied_requests(), greedy=True)
    alone = [policy.act([r], greedy=True)[0] for r in varied_requests()]
    assert [c.token_ids for c in batch] == [c.token_ids for c in alone]
    assert len({c.text for c in batch}) > 1, "the outputs should differ between prompts"


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_match_a_plain_forward_pass(lively, temperature, share_prefix):
    policy = make_policy(lively, temperature=temperature, share_prefix=share_prefix)
    for completion in policy.act(varied_requests()):
        expected = recompute_logprobs(
            policy.model, completion.prompt_ids, completion.token_ids, temperature
        )
        assert completion.logprobs == pytest.approx(expected, abs=1e-4)


def test_token_ids_decode_to_the_text(lively):
    policy = make_policy(lively)
    for completion in policy.act(varied_requests()):
        decoded = policy.tokenizer.decode(completion.token_ids, skip_special_tokens=True)
        assert decoded == completion.text
        assert 1 <= len(completion.token_ids) <= policy.max_new_tokens
        assert len(completion.logprobs) == len(completion.token_ids)


def test_generation_stops_at_eos_and_keeps_it_in_token_ids():
    model, tokenizer = build_tiny(seed=3, initializer_range=0.3, tie_word_embeddings=False)
    policy = HFPolicy(model, tokenizer, max_new_tokens=6)
    first = policy.act([request("Board 012|345|678.")], greedy=True)[0].token_ids[0]
    eos = tokenizer.eos_token_id
    with torch.no_grad():  # make EOS ten times as likely as the greedy token, in logit
        model.lm_head.weight[eos] = 10 * model.lm_head.weight[first]
    completion = policy.act([request("Board 012|345|678.")], greedy=True)[0]
    assert completion.token_ids == (eos,)
    assert completion.text == ""


def test_a_row_stops_at_its_own_stop_token_while_others_go_on(lively):
    policy = make_policy(lively)
    free = policy.act(varied_requests(), greedy=True)
    policy.stop_ids = {free[0].token_ids[1]}
    stopped = policy.act(varied_requests(), greedy=True)
    assert stopped[0].token_ids == free[0].token_ids[:2]
    longest = max(len(c.token_ids) for c in stopped)
    assert longest == policy.max_new_tokens or all(
        c.token_ids[-1] in policy.stop_ids for c in stopped
    )


def test_include_system_false_drops_the_system_message(lively):
    req = request("Board 012|345|678. You are x. Your move?", system="Win.")
    with_rules = make_policy(lively).act([req])[0]
    without = make_policy(lively, include_system=False).act([req])[0]
    tokenizer = lively[1]
    assert tokenizer.decode(with_rules.prompt_ids).startswith("<bos><|system|>Win.\n<|user|>")
    prompt = tokenizer.decode(without.prompt_ids)
    assert prompt == "<bos><|user|>Board 012|345|678. You are x. Your move?\n<|assistant|>"


def test_chat_template_is_used_when_the_tokenizer_has_one():
    model, tokenizer = build_tiny(seed=3)
    tokenizer.chat_template = (
        "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    policy = HFPolicy(model, tokenizer, max_new_tokens=3)
    completion = policy.act([request("Board 012.", system="Rules.")])[0]
    assert (
        tokenizer.decode(completion.prompt_ids) == "[system]Rules.\n[user]Board 012.\n[assistant]"
    )


def test_requests_with_the_same_messages_are_rendered_once(lively, monkeypatch):
    policy = make_policy(lively, max_prompt_tokens=12)
    requests = varied_requests() + varied_requests(seed=7) + [request("Board 012|345|678.")]
    alone = [policy.encode([req])[0] for req in requests]
    rendered = []
    render = policy.render
    monkeypatch.setattr(policy, "render", lambda messages: rendered.append(1) or render(messages))
    together = policy.encode(requests)
    assert together == alone and len(rendered) == 5  # four distinct prompts and one more
    assert len({id(row) for row in together}) == len(requests)  # each request its own list
    assert all(len(row) == 12 for row in together)  # each cut to its tail


def test_sampling_is_reproducible_and_independent_of_batch_mates(lively):
    policy = make_policy(lively)
    batch = policy.act(varied_requests(seed=10))
    again = policy.act(varied_requests(seed=10))
    assert [c.token_ids for c in batch] == [c.token_ids for c in again]
    last = varied_requests(seed=10)[-1]
    assert policy.act([last])[0].token_ids == batch[-1].token_ids
    other_seed = make_policy(lively, seed=1).act(varied_requests(seed=10))
    assert [c.token_ids for c in other_seed] != [c.token_ids for c in batch]


def test_the_preallocated_cache_samples_what_a_growing_cache_samples(
    lively, share_prefix, monkeypatch
):
    policy = make_policy(lively, share_prefix=share_prefix, max_new_tokens=12)
    fast = policy.act(varied_requests(seed=4))
    monkeypatch.setattr(
        hf_policy, "preallocated_cache", lambda config, _: DynamicCache(config=config)
    )
    slow = policy.act(varied_requests(seed=4))
    assert [c.token_ids for c in fast] == [c.token_ids for c in slow]
    assert [c.logprobs for c in fast] == [c.logprobs for c in slow]  # bitwise
    assert max(len(c.token_ids) for c in fast) > 1  # the decode steps ran


def test_a_preallocated_layer_grows_past_its_capacity():
    layer = PreallocatedLayer(capacity=3)
    chunks = [torch.randn(2, 1, n, 4) for n in (2, 1, 3)]
    for chunk in chunks:
        keys, values = layer.update(chunk, -chunk)
    assert torch.equal(keys, torch.cat(chunks, dim=2)) and torch.equal(values, -keys)
    layer.batch_repeat_interleave(2)
    assert torch.equal(layer.keys, torch.cat(chunks, dim=2).repeat_interleave(2, dim=0))
    assert layer.get_seq_length() == 6


def test_a_forward_context_runs_sampling_in_bf16_with_fp32_logprobs():
    policy = HFPolicy(*build_tiny(seed=0), max_new_tokens=1)
    dtypes = []
    layer = policy.model.model.layers[0].mlp.down_proj
    handle = layer.register_forward_hook(lambda m, a, out: dtypes.append(out.dtype))
    try:
        plain = policy.act(varied_requests(seed=2), greedy=True)
        policy.forward_context = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
        mixed = policy.act(varied_requests(seed=2), greedy=True)
    finally:
        handle.remove()
    assert dtypes[0] == torch.float32 and dtypes[-1] == torch.bfloat16
    gaps = [abs(a.logprobs[0] - b.logprobs[0]) for a, b in zip(plain, mixed, strict=True)]
    assert 0 < max(gaps) < 0.05  # bf16 rounding shows, and stays small
    assert all(isinstance(lp, float) for c in mixed for lp in c.logprobs)


def test_shared_prefix_leaves_every_row_a_token_of_its_own():
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3]]) == 2
    assert shared_prefix_length([[1, 2], [1, 2]]) == 1
    assert shared_prefix_length([[7, 2], [1, 2]]) == 0
    assert shared_prefix_length([[5, 6, 7]]) == 2


def test_a_model_in_training_mode_samples_in_eval_mode_and_is_restored(lively):
    policy = make_policy(lively)
    policy.model.train()
    try:
        training = policy.act(varied_requests(), greedy=True)
        assert policy.model.training
    finally:
        policy.model.eval()
    assert training == policy.act(varied_requests(), greedy=True)


def test_top_p_keeps_only_the_nucleus():
    logp = torch.log_softmax(torch.tensor([[3.0, 2.0, 0.0, -1.0]]), dim=-1)
    kept = top_p_filter(logp, 0.8)
    assert torch.isfinite(kept).tolist() == [[True, True, False, False]]
    assert torch.isfinite(top_p_filter(logp, 0.01)).sum() == 1


def test_long_prompts_keep_their_tail(lively):
    policy = make_policy(lively, max_prompt_tokens=10)
    completion = policy.act([request("x" * 50 + "Board 012.")])[0]
    assert len(completion.prompt_ids) == 10
    assert lively[1].decode(completion.prompt_ids).endswith("<|assistant|>")


def test_from_pretrained_loads_a_local_folder(tmp_path):
    save_tiny(tmp_path / "my-model")
    policy = HFPolicy.from_pretrained(tmp_path / "my-model", max_new_tokens=2)
    assert policy.name == "my-model"
    assert len(policy.act([request("Board 012.")])[0].token_ids) <= 2


def test_bad_options_read_like_sentences(lively):
    with pytest.raises(ValueError, match="temperature must be > 0"):
        make_policy(lively, temperature=0)
    with pytest.raises(ValueError, match="top_p"):
        make_policy(lively, top_p=0)
