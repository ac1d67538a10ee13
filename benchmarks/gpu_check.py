"""GPU check: the code paths that CI (a CPU machine) cannot run, run as a user runs them.

Each check is a `selfplay run` command line (or a benchmark) on a CUDA device: bf16 mixed
and true precision, resume, LoRA, a full fine-tune with its KL reference copy, the PSRO pool
with snapshots and exact exploitability, DeepSpeed ZeRO stage 2, FlashAttention-2, and the
update step's throughput against raw PyTorch, and the rollout decode loop's tokens/s against
``model.generate`` (benchmarks/decode_throughput.py, ~150M and ~1B shapes). A wider model
than ``tiny`` (about 150M parameters, random weights, the character tokenizer) is written to
a local folder first, so nothing is downloaded. The summary table goes to
``OUT/gpu_check.md`` and every command's output to ``OUT/gpu_check.log``, both rewritten
after each check, so a run stopped at a time limit still says how far it got.

    python benchmarks/gpu_check.py --out results/           # every check, about 8 minutes
    python benchmarks/gpu_check.py --out results/ --only tiny,deepspeed
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SELFPLAY = [sys.executable, "-m", "selfplay.core.commands.cli", "run"]
QUIET = ["--set", "eval.matches=20"]
# about 150M parameters: 12 layers of width 1024
WIDE = {
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "max_position_embeddings": 512,
}


@dataclass
class Check:
    name: str
    what: str
    command: list[str]
    timeout: int = 180
    expect_rc: tuple[int, ...] = (0,)
    run_name: str | None = None  # the run folder whose metrics.csv is summarised


def checks(out: Path, wide: Path) -> list[Check]:
    runs = out / "runs"
    common = ["--out", str(runs), "--accelerator", "cuda"]
    flash = importlib.util.find_spec("flash_attn") is not None
    deepspeed = importlib.util.find_spec("deepspeed") is not None
    return [
        Check(
            "tiny",
            "tiny model, tic-tac-toe, bf16-mixed, cold start, evals, checkpoints",
            [*SELFPLAY, *common, "--name", "tiny", "--precision", "bf16-mixed",
             "--iterations", "4", "--matches", "64", "--cold-start", "100", "--eval-every", "2",
             "--set", "checkpoint_every=2", *QUIET],
            run_name="tiny",
        ),
        Check(
            "tiny-resume",
            "resume the tiny run for 2 more iterations",
            [*SELFPLAY, "--resume", str(runs / "tiny"), "--iterations", "6"],
            run_name="tiny",
        ),
        Check(
            "kuhn-psro",
            "Kuhn poker, PSRO (Nash meta-solver), a snapshot every iteration, exploitability",
            [*SELFPLAY, *common, "--name", "kuhn", "--game", "kuhn-poker", "--opponent",
             "psro:nash", "--iterations", "3", "--matches", "64", "--cold-start", "50",
             "--set", "pool.snapshot_every=1", "--set", "pool.matches_per_pair=8", *QUIET],
            run_name="kuhn",
        ),
        Check(
            "lora",
            "150M model, LoRA adapters, bf16-true, reference = cold-start adapters swapped in",
            [*SELFPLAY, *common, "--name", "lora", "--model", str(wide), "--lora",
             "--precision", "bf16-true", "--iterations", "3", "--matches", "128",
             "--cold-start", "50", *QUIET],
            run_name="lora",
        ),
        Check(
            "full",
            "150M model, full fine-tune, bf16-mixed, KL to a frozen copy on the GPU",
            [*SELFPLAY, *common, "--name", "full", "--model", str(wide), "--precision",
             "bf16-mixed", "--iterations", "2", "--matches", "128", "--cold-start", "50",
             *QUIET],
            run_name="full",
        ),
        Check(
            "deepspeed",
            "150M model, DeepSpeed ZeRO stage 2, bf16-mixed, checkpoint and resume"
            + ("" if deepspeed else " (deepspeed not installed: expect exit 2)"),
            [*SELFPLAY, *common, "--name", "ds", "--model", str(wide), "--strategy",
             "deepspeed_stage_2", "--precision", "bf16-mixed", "--iterations", "2",
             "--matches", "64", "--cold-start", "20", "--set", "checkpoint_every=1", *QUIET],
            expect_rc=(0,) if deepspeed else (1, 2),
            run_name="ds",
        ),
        Check(
            "deepspeed-resume",
            "resume the DeepSpeed run for 1 more iteration",
            [*SELFPLAY, "--resume", str(runs / "ds"), "--iterations", "3"],
            expect_rc=(0,) if deepspeed else (1, 2),
            run_name="ds",
        ),
        Check(
            "deepspeed-lora",
            "150M model, DeepSpeed ZeRO stage 2 with LoRA adapters, bf16-mixed",
            [*SELFPLAY, *common, "--name", "dslora", "--model", str(wide), "--lora",
             "--strategy", "deepspeed_stage_2", "--precision", "bf16-mixed", "--iterations",
             "2", "--matches", "64", "--cold-start", "20", *QUIET],
            expect_rc=(0,) if deepspeed else (1, 2),
            run_name="dslora",
        ),
        Check(
            "flash-attention-2",
            "150M model with model_options.attn_implementation=flash_attention_2"
            + ("" if flash else " (flash-attn not installed: expect exit 2 naming it)"),
            [*SELFPLAY, *common, "--name", "flash", "--model", str(wide), "--precision",
             "bf16-true", "--iterations", "1", "--matches", "32", "--cold-start", "10",
             "--set", "model_options.attn_implementation=flash_attention_2", *QUIET],
            expect_rc=(0,) if flash else (2,),
            run_name="flash" if flash else None,
        ),
        Check(
            "throughput",
            "update step vs raw PyTorch, 150M-shaped model, bf16-mixed, tokens/s",
            [sys.executable, str(Path(__file__).with_name("update_throughput.py")),
             "--device", "cuda", "--precision", "bf16-mixed", "--width", "1024", "--layers",
             "12", "--samples", "2048", "--minibatch", "256", "--rounds", "2"],
        ),
        *[
            Check(
                f"decode-{shape}",
                f"rollout tokens/s, our decode loop vs model.generate, {shape}-shaped model, "
                "bf16, batch 64 and 256, 64 new tokens",
                [sys.executable, str(Path(__file__).with_name("decode_throughput.py")),
                 "--device", "cuda", "--shape", shape, "--batches", "64,256"],
                timeout=300,
            )
            for shape in ("150m", "1b")
        ],
    ]  # fmt: skip


def last_metrics(run: Path) -> str:
    path = run / "metrics.csv"
    if not path.exists():
        return "no metrics.csv"
    rows = list(csv.DictReader(path.open()))
    if not rows:
        return "metrics.csv is empty"
    row = rows[-1]
    keys = ("iteration", "mean_reward", "loss", "kl", "entropy", "exploitability/last")
    return ", ".join(f"{k}={row[k]}" for k in keys if row.get(k) not in (None, ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", help="comma-separated check names")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log, summary = args.out / "gpu_check.log", args.out / "gpu_check.md"
    import torch

    from selfplay.core.models.tiny import save_tiny

    if not torch.cuda.is_available():
        sys.exit("gpu_check: no CUDA device is visible; run this on a GPU machine.")
    wide = save_tiny(args.out / "wide-model", seed=0, **WIDE)
    header = [
        f"# GPU check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}",
        "",
        "| check | what | exit | expected | seconds | last metrics / output |",
        "|---|---|---:|---|---:|---|",
    ]
    rows: list[str] = []
    wanted = {n for n in args.only.split(",") if n}
    failed = 0
    with log.open("w") as stream:
        for check in checks(args.out, wide):
            if wanted and check.name not in wanted:
                continue
            stream.write(f"\n===== {check.name}: {' '.join(check.command)}\n")
            stream.flush()
            start = time.perf_counter()
            try:
                done = subprocess.run(
                    check.command, capture_output=True, text=True, timeout=check.timeout
                )
                rc, text = done.returncode, done.stdout + done.stderr
            except subprocess.TimeoutExpired as err:
                rc, text = -1, f"timed out after {check.timeout} s\n{err.stdout or ''}"
            seconds = time.perf_counter() - start
            stream.write(text if isinstance(text, str) else text.decode(errors="replace"))
            stream.flush()
            ok = rc in check.expect_rc
            failed += not ok
            if check.run_name and rc == 0:
                detail = last_metrics(args.out / "runs" / check.run_name)
            else:
                lines = [line for line in str(text).strip().splitlines() if line.strip()]
                detail = (lines[-1] if lines else "").replace("|", "/")[:200]
            mark = "ok" if ok else "FAILED"
            rows.append(
                f"| {check.name} | {check.what} | {rc} | {mark} {check.expect_rc} "
                f"| {seconds:.0f} | {detail} |"
            )
            summary.write_text("\n".join([*header, *rows]) + "\n")
            print(rows[-1], flush=True)
    print(f"gpu_check: {failed} check(s) failed; table in {summary}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
