"""`selfplay export`: a trained policy as a plain Hugging Face folder, or its turns as PRM data.

    selfplay export RUN_DIR OUT_DIR                 the model of the newest checkpoint
    selfplay export RUN_DIR OUT_DIR --merge-lora    a LoRA run's adapters merged into the base
    selfplay export RUN_DIR OUT.jsonl --format prm  turns with their rewards, as step/label lines

The model folder holds ``config.json``, the weights as safetensors, the tokenizer and a chat
template, so ``AutoModelForCausalLM.from_pretrained(OUT_DIR)`` and
``AutoTokenizer.from_pretrained(OUT_DIR)`` load it with nothing of selfplay installed. A
tokenizer without a chat template (the ``tiny`` model's) gets one that renders prompts exactly
as the run did (`chat_template`), system messages left out when the run left them out.

A LoRA run exports, without ``--merge-lora``, a PEFT adapter folder: ``adapter_config.json``
and ``adapter_model.safetensors`` in OUT_DIR (one subfolder per role when ``lora.per_role``)
and the base model it was trained on in ``OUT_DIR/base``; ``adapter_config.json`` names that
base folder, so ``peft.AutoPeftModelForCausalLM.from_pretrained(OUT_DIR)`` loads both.
``--merge-lora`` writes one plain model instead (with per-role adapters, ``--role`` picks one).

The PRM data (`selfplay.core.commands.prm`) is read from ``episodes.jsonl`` alone.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError

FORMATS = ("model", "prm")


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("source", type=Path, metavar="RUN_DIR|CHECKPOINT", help="the run (or checkpoint) to export")
    add("out", type=Path, metavar="OUT", help="folder to write (a .jsonl file for --format prm)")
    add(
        "--format",
        choices=FORMATS,
        default="model",
        help="model: a Hugging Face model folder (default); prm: process-reward JSONL",
    )
    add("--merge-lora", action="store_true", help="merge a LoRA run's adapters into the base")
    add("--role", help="with --merge-lora and per-role adapters: the role whose adapter to merge")
    add("--force", action="store_true", help="write into OUT even when it is not empty")
    add("--learner", metavar="NAME", help="in a run of several learners: which one")


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "prm":
        from selfplay.core.commands.prm import export_prm

        if args.merge_lora or args.role:
            raise ConfigError("--merge-lora and --role belong to --format model, not prm.")
        path, count, skipped = export_prm(args.source, args.out, force=args.force)
        note = f" ({skipped} turns without a reward left out)" if skipped else ""
        print(f"Wrote {count} steps to {path}{note}.")
        return 0
    out = export_model(
        args.source, args.out, args.merge_lora, args.role, force=args.force, learner=args.learner
    )
    print(f"Wrote a Hugging Face model folder: {out}")
    print("Load it with AutoModelForCausalLM.from_pretrained and AutoTokenizer.from_pretrained.")
    return 0


def export_model(
    source: Path,
    out: Path,
    merge_lora: bool = False,
    role: str | None = None,
    force: bool = False,
    learner: str | None = None,
) -> Path:
    """Write the policy of ``source`` (a run or checkpoint folder; in a run of several
    learners, ``learner``'s) to ``out``; returns ``out``."""
    from selfplay.core.commands.play import load_checkpoint_policy

    loaded = load_checkpoint_policy(source, learner)
    policy, config = loaded.policy, loaded.config
    if not hasattr(policy, "model") or not hasattr(policy, "tokenizer"):
        raise ConfigError(
            f"The model {config.model!r} of this run is not a Hugging Face model in memory, "
            "so there is no folder to export."
        )
    if (merge_lora or role) and not config.lora.enabled:
        raise ConfigError(
            f"{source} is not a LoRA run (lora.enabled is false): its checkpoint is the whole "
            "model already; drop --merge-lora/--role."
        )
    _check_out(out, force)
    tokenizer = policy.tokenizer
    if not tokenizer.chat_template:
        tokenizer.chat_template = chat_template(tokenizer, policy.include_system)
    model = policy.model
    if config.lora.enabled:
        model = _lora_model(model, config, merge_lora, role, out, tokenizer)
    if model is not None:
        _save(model, tokenizer, out)
    readable(out)
    return out


def readable(folder: Path) -> None:
    """Every file written gets the mode the umask gives a new file (0644 under 022).

    The weights file is written through a private temporary file (mode 0600) and renamed, so
    it alone came out readable by its owner only, unlike the folder's other files.
    """
    umask = os.umask(0)
    os.umask(umask)
    for path in Path(folder).rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(0o666 & ~umask)


def chat_template(tokenizer: Any, include_system: bool = True) -> str:
    """A Jinja chat template that renders messages as selfplay's plain role-tagged format
    (`selfplay.core.models.tokenizer.render_plain_chat`), starting with the BOS token when the
    tokenizer adds one by itself (Hugging Face's chat templates add their own).

    A chat closed by the assistant's reply (no generation prompt) ends that reply with the
    end-of-sequence token, where its generation stops, as `selfplay serve` reads it: a server
    that scores each legal answer's closed chat (a policy table on vLLM) then scores what the
    run scores, not the newline that ends a turn in the history."""
    bos = tokenizer.bos_token_id
    ids = tokenizer("x", add_special_tokens=True)["input_ids"]
    start = "{{ bos_token }}" if bos is not None and ids and ids[0] == bos else ""
    keep = "" if include_system else "{% if message['role'] != 'system' %}"
    end = "" if include_system else "{% endif %}"
    closed = "loop.last and message['role'] == 'assistant' and not add_generation_prompt"
    return (
        f"{start}{{% for message in messages %}}{keep}"
        "{{ '<|' + message['role'] + '|>' + message['content'] }}"
        f"{{% if {closed} %}}{{{{ eos_token }}}}{{% else %}}{{{{ '\\n' }}}}{{% endif %}}"
        f"{end}{{% endfor %}}"
        "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
    )


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} is a file; pass a folder to write the model into.")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(
            f"{out} is not empty; pass an empty or new folder, or --force to write into it."
        )


def _lora_model(
    model: Any, config: Any, merge: bool, role: str | None, out: Path, tokenizer: Any
) -> Any:
    """The merged model to save, or None once the adapter folder (and base) are written."""
    adapters = list(getattr(model, "peft_config", {}))
    if config.lora.per_role and merge and role not in adapters:
        raise ConfigError(
            f"This run trained one LoRA adapter per role ({', '.join(adapters)}); "
            + ("pass --role with one of them" if role is None else f"--role {role!r} is not one")
            + " to merge that role's adapter."
        )
    if not config.lora.per_role and role is not None:
        raise ConfigError("--role is for runs with one adapter per role (lora.per_role).")
    if merge:
        chosen = [role] if role is not None else adapters
        return model.merge_and_unload(adapter_names=chosen)
    base = (out / "base").resolve()
    base.mkdir(parents=True, exist_ok=True)
    model.get_base_model().config.save_pretrained(base)  # peft reads it while saving
    for name in adapters:
        model.peft_config[name].base_model_name_or_path = str(base)
    model.save_pretrained(out, selected_adapters=adapters)
    tokenizer.save_pretrained(out)
    _save(model.unload(), tokenizer, base)
    return None


def _save(model: Any, tokenizer: Any, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.model_max_length = getattr(model.config, "max_position_embeddings", None) or (
        tokenizer.model_max_length
    )
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
