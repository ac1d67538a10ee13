"""A character-level tokenizer for the embedded default model, built in process.

Why characters: the default model is tiny and trained from scratch on game prompts, so it
must never be downloaded and its vocabulary must make legality a copy-a-visible-token task
(the digit ``4`` in the board is the same token as the ``4`` in the answer ``[4]``).

It is an ordinary ``transformers`` fast tokenizer (a ``tokenizers.Tokenizer`` with a
word-level model over single characters), so it saves and reloads with ``save_pretrained`` /
``AutoTokenizer.from_pretrained`` offline like any other. Every character of Python's
``string.printable`` (printable ASCII, space, tab, newline, ...) is one token and round-trips
exactly; any other character becomes ``<unk>``.

The chat format. A tokenizer without a chat template (this one included) gets the plain
role-tagged format of `render_plain_chat`::

    <|system|>RULES\\n<|user|>Board 012|345|678. You are x. Your move?\\n<|assistant|>

Each message is its role tag, its content and a newline; the prompt ends with the assistant
tag, so the completion follows it directly. Here the three tags are single special tokens;
for other tokenizers they are ordinary text. The tiny model drops the system message (it
cannot read a rules paragraph), so its prompts are the compact state alone, ~60 characters.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from selfplay.api.types import Message

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
ROLE_TAGS = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK, *ROLE_TAGS.values())
CHARACTERS = string.printable  # digits, letters, punctuation, space, \t \n \r \x0b \x0c


def char_vocabulary() -> dict[str, int]:
    """Special tokens first (pad=0, bos=1, eos=2, unk=3, role tags), then one id per character."""
    tokens = [*SPECIAL_TOKENS, *CHARACTERS]
    return {token: i for i, token in enumerate(tokens)}


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    """The character tokenizer: ``<bos>`` is prepended on encode, decode concatenates."""
    core = Tokenizer(models.WordLevel(vocab=char_vocabulary(), unk_token=UNK))
    # Every character is its own piece; special tokens are matched before this split.
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A",
        pair=f"{BOS} $A $B",
        special_tokens=[(BOS, char_vocabulary()[BOS])],
    )
    core.add_special_tokens(list(SPECIAL_TOKENS))
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        extra_special_tokens=list(ROLE_TAGS.values()),
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=256,
    )


def render_plain_chat(messages: Iterable[Message], *, add_generation_prompt: bool = True) -> str:
    """The role-tagged prompt used when a tokenizer has no chat template (see module doc)."""
    parts = [f"{ROLE_TAGS.get(m.role, f'<|{m.role}|>')}{m.content}\n" for m in messages]
    if add_generation_prompt:
        parts.append(ROLE_TAGS["assistant"])
    return "".join(parts)
