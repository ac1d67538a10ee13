"""vLLM's answers as vLLM 0.32 gives them, read without a server: the prompt's
log-probabilities with ``max_tokens: 0`` (a drawn token rides along in ``token_ids``); a
policy table asked one row per request of any server but `selfplay serve` (a LoRA-enabled
vLLM CPU engine dies on a batch of them), each answer scored to the end of its turn and not
past it (ChatML's newline); and the chat template `selfplay export` writes, which vLLM reads
chats with. The same against a real vLLM: test_vllm_server.py."""

from __future__ import annotations

import pytest

from selfplay.core.models.served import policy as served
from selfplay.core.models.served.table import served_table
from selfplay.core.serving.rollout_client import Worker
from selfplay.games.kuhn_poker import KuhnPoker

# vLLM 0.32.0's reply to {"prompt": [1, 2, 3, 4, 5], "echo": true, "max_tokens": 0,
# "logprobs": 0, "return_token_ids": true} on SmolLM2-135M (fields it adds left out)
ECHOED = {
    "object": "text_completion",
    "choices": [
        {
            "index": 0,
            "text": "",
            "logprobs": {
                "token_logprobs": [None, -18.0357, -23.2666, -21.6053, -24.9226],
                "tokens": ["<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>", "<file_sep>"],
            },
            "finish_reason": "length",
            "token_ids": [8345],
            "prompt_token_ids": [1, 2, 3, 4, 5],
        }
    ],
    "usage": {"prompt_tokens": 5, "total_tokens": 6, "completion_tokens": 1},
}


def test_an_echo_without_new_tokens_reads_the_prompts_scores_as_vllm_gives_them(monkeypatch):
    worker = Worker("openai:http://127.0.0.1:9/v1#smol")
    monkeypatch.setattr(worker.client, "post", lambda endpoint, body: ECHOED)
    ((prompt, logprobs),) = worker.echo([([1, 2, 3, 4, 5], 0)], {"temperature": 1.0})
    assert prompt == [1, 2, 3, 4, 5]
    assert logprobs == [-18.0357, -23.2666, -21.6053, -24.9226]


class Server:
    """A chat server's answers in memory: its tokenizer spells each message out, each turn
    closed by ``|`` (its end-of-turn token), then a newline when ``chatml``, as ChatML writes
    one after ``<|im_end|>``; an echo of several prompts at once fails as a LoRA-enabled vLLM
    CPU engine does."""

    def __init__(self, owner: str, chatml: bool = False) -> None:
        self.owner, self.echoes = owner, []
        self.end = "|\n" if chatml else "|"

    def request(self, policy, method, endpoint, body=None):
        if endpoint == "models":
            return {"data": [{"id": "smol", "owned_by": self.owner}]}
        if endpoint == "tokenize":
            text = "".join(f"<{m['role']}>{m['content']}{self.end}" for m in body["messages"])
            text = text + "<assistant>" if body["add_generation_prompt"] else text
            text = text.removesuffix(self.end) if body["continue_final_message"] else text
            return {"tokens": [ord(c) for c in text]}
        prompts = body["prompt"]
        self.echoes.append(len(prompts))
        if len(prompts) > 1 and self.owner == "vllm":
            raise served.Unreachable("the engine died: einsum(): subscript b has size 2")
        scores = [
            [None, *(logprob(t, b, len(row)) for t, b in zip(row[1:], row[:-1], strict=True))]
            for row in prompts
        ]
        choices = [{"index": i, "logprobs": {"token_logprobs": s}} for i, s in enumerate(scores)]
        return {"choices": choices}


def logprob(token: int, before: int, length: int) -> float:
    """A token's log-probability; a newline after the end of a turn gets one that differs
    from answer to answer (by the chat's length), as nothing the model says decides it."""
    if (chr(before), chr(token)) == ("|", "\n"):
        return -(0.3 * length % 1.7)
    return -0.01 * (token % 7)


def table_of(monkeypatch, server: Server):
    monkeypatch.setattr(
        served.ServedPolicy, "request", lambda self, *args: server.request(self, *args)
    )
    return served_table(served.ServedPolicy("openai:http://127.0.0.1:9/v1#smol"), KuhnPoker())


@pytest.mark.parametrize("owner", ["vllm", "selfplay"])
def test_a_served_table_asks_one_row_per_request_of_any_server_but_ours(monkeypatch, owner):
    server = Server(owner)
    table = table_of(monkeypatch, server)
    rows = sum(len(info.actions) for info in KuhnPoker().information_sets())
    assert server.echoes == ([1] * rows if owner == "vllm" else [rows])
    assert len(table) == 12
    assert all(sum(row.values()) == pytest.approx(1.0) for row in table.values())


def test_a_served_table_scores_each_answer_to_the_end_of_its_turn_not_past_it(monkeypatch):
    """ChatML closes a turn with <|im_end|> then a newline; the model stops at <|im_end|>,
    so the newline's log-probability is no part of the answer's (SmolLM2 on vLLM: 0.011 off
    the in-memory table with it)."""
    plain = table_of(monkeypatch, Server("vllm"))
    chatml = table_of(monkeypatch, Server("vllm", chatml=True))
    for key, row in plain.items():
        assert chatml[key] == pytest.approx(row, abs=1e-12), key


@pytest.mark.parametrize("turn", ["open", "continue", "close"])
def test_an_exported_plain_chat_template_reads_a_chat_as_selfplay_serve_does(turn):
    """vLLM reads a chat through the exported template; `selfplay serve` through the policy.
    A closed reply ends with the end-of-sequence token, where generation stops (a policy
    table scores each answer so), not with the newline that ends a turn in the history."""
    from selfplay.core.commands.export import chat_template
    from selfplay.core.models.tiny import load_tiny_policy
    from selfplay.core.serving.completions import TokenizeRequest, chat_ids

    policy = load_tiny_policy(seed=0)
    chat = [
        {"role": "system", "content": "Kuhn poker."},
        {"role": "user", "content": "You hold K."},
        {"role": "assistant", "content": "[bet]"},
        {"role": "user", "content": "They call. Your card?"},
        {"role": "assistant", "content": "[" if turn == "continue" else "[check]"},
    ]
    chat = chat[:-1] if turn == "open" else chat
    flags = {"add_generation_prompt": turn == "open", "continue_final_message": turn == "continue"}
    theirs = chat_ids(policy, TokenizeRequest(messages=chat, **flags))
    tokenizer = policy.tokenizer
    tokenizer.chat_template = chat_template(tokenizer, policy.include_system)
    mine = tokenizer.apply_chat_template(chat, tokenize=True, return_dict=False, **flags)
    assert list(mine["input_ids"] if hasattr(mine, "keys") else mine) == theirs


def test_the_legal_choice_at_a_temperature_is_refused_on_vllm_before_asking(monkeypatch):
    """vLLM's prompt log-probabilities are the model's own whatever the temperature (0.32:
    "prompt tokens skip sampling processors"), so a tempered choice cannot be scored there."""
    worker = Worker("openai:http://127.0.0.1:9/v1#smol")
    worker.vllm = True
    monkeypatch.setattr(worker.client, "post", lambda endpoint, body: pytest.fail("asked"))
    with pytest.raises(served.ConfigError, match=r"generation\.temperature=0\.7 cannot be scored"):
        worker.echo([([1, 2, 3, 4, 5], 0)], {"temperature": 0.7})
    monkeypatch.setattr(worker.client, "post", lambda endpoint, body: ECHOED)
    assert worker.echo([([1, 2, 3, 4, 5], 0)], {"temperature": 1.0})


def test_a_served_table_at_a_temperature_is_refused_on_vllm_before_asking(monkeypatch):
    server = Server("vllm")
    monkeypatch.setattr(
        served.ServedPolicy, "request", lambda self, *args: server.request(self, *args)
    )
    policy = served.ServedPolicy("openai:http://127.0.0.1:9/v1#smol")
    with pytest.raises(served.ServedError, match=r"table at temperature 0\.7 cannot be read"):
        served_table(policy, KuhnPoker(), 0.7)
    assert server.echoes == []
