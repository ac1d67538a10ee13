"""What a run prints around its progress: the pointer to docs/troubleshooting.md, log lines."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from selfplay.core.run.display import RunDisplay
from selfplay.core.run.progress import EVERY_VARIABLE, PlainLines, Ticker

ROOT = Path(__file__).resolve().parents[1]


def display(out: io.StringIO) -> RunDisplay:
    config = SimpleNamespace(
        game="tictactoe", model="tiny", opponent="latest", estimator="rae", objective="pg",
        matches=4, iterations=2, resume=None,
    )  # fmt: skip
    folder = SimpleNamespace(path=Path("runs/x"), metrics=Path("/nonexistent/metrics.csv"))
    console = Console(file=out, width=200, force_terminal=False)
    return RunDisplay(config, folder, console)


def row(iteration: int, **extra: float) -> dict:
    return {"iteration": iteration, "mean_reward": 0.0, "invalid_rate": 0.0, **extra}


def closing_text(*rows: dict) -> str:
    out = io.StringIO()
    with display(out) as shown:
        for r in rows:
            shown.update(r)
        shown.summary({}, {})
    return out.getvalue()


def test_an_evaluation_of_several_learners_shows_each_learners_rates():
    learners = {"eval/solver/random/win_rate": 0.25, "eval/solver/random/non_loss_rate": 0.5}
    learners |= {"eval/solver/random/win_rate/solver": 0.25, "solver/loss": 0.125}
    with display(io.StringIO()) as shown:
        shown.update(row(1, **learners))  # eval/LEARNER/OPPONENT/... keys
        assert shown.last_eval == "solver/random 0.25/0.50"


def test_the_summary_names_the_troubleshooting_guide_when_a_monitor_fired():
    text = closing_text(row(1, **{"monitor/hacking": 0.0}), row(2, **{"monitor/hacking": 1.0}))
    from selfplay.core.run.display import docs_page

    named = docs_page("troubleshooting.md")
    assert named.is_file()  # the docs ship with the package: the path named exists
    assert str(named) in "".join(text.split())
    assert "monitor/hacking at iteration 2" in text


def test_the_summary_stays_quiet_when_no_monitor_fired():
    text = closing_text(row(1, **{"monitor/hacking": 0.0}), row(2))
    assert "troubleshooting" not in text


def test_the_guide_covers_every_monitor_column_and_exists():
    guide = (ROOT / "docs" / "troubleshooting.md").read_text()
    columns = ("monitor/hacking", "invalid_rate", "reward/judge/unparsable")
    columns += ("exploitability/last", "diversity/", "eval/held_out/accuracy")
    for column in columns:
        assert column in guide, column


# ---- progress when the output is not a terminal ----------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_come_every_n_seconds_with_an_eta_and_once_at_the_end():
    said: list[str] = []
    clock = FakeClock()
    lines = PlainLines("cold start", 10, said.append, every=30, clock=clock)
    for _ in range(3):
        clock.now += 5
        lines.advance(1, "loss 1.000")
    assert said == []  # 15 s: not yet
    clock.now += 20
    lines.advance(1, "loss 0.500")
    assert said == ["cold start: 4/10, 0:35 elapsed, about 0:52 left  loss 0.500"]
    lines.advance(6)
    assert said[-1] == "cold start: 10/10, 0:35 elapsed"


def test_a_time_limit_caps_the_estimate_of_what_is_left():
    said: list[str] = []
    clock = FakeClock()
    # 1000 iterations at 2 minutes each, in a run limited to 20 minutes
    lines = PlainLines("iteration", 1000, said.append, every=0, clock=clock, deadline=1200.0)
    clock.now += 120
    lines.advance(1)
    assert said[-1] == "iteration: 1/1000, 2:00 elapsed, about 18:00 left"
    clock.now += 1200
    lines.advance(1)  # past the limit: the run ends after this iteration
    assert said[-1] == "iteration: 2/1000, 22:00 elapsed, about 0:00 left"
    free = PlainLines("iteration", 4, said.append, every=0, clock=clock, deadline=1e9)
    clock.now += 10
    free.advance(1)
    assert said[-1].endswith("about 0:30 left")  # the iterations end first


def test_a_quiet_step_prints_nothing_when_short_and_the_usual_lines_when_long():
    said: list[str] = []
    clock = FakeClock()
    short = PlainLines("matches", 4, said.append, every=30, clock=clock, quiet=True)
    clock.now += 3
    short.advance(4)
    assert said == []  # an iteration's matches, over in 3 s: nothing in the log
    long = PlainLines("matches", 4, said.append, every=30, clock=clock, quiet=True)
    clock.now += 31
    long.advance(1, "round 9")
    clock.now += 1
    long.advance(3)
    assert said == ["matches: 1/4, 0:31 elapsed, about 1:33 left  round 9",
                    "matches: 4/4, 0:32 elapsed"]  # fmt: skip


def test_a_run_piped_to_a_log_prints_iteration_lines(monkeypatch):
    monkeypatch.setenv(EVERY_VARIABLE, "0")
    text = closing_text(row(1), row(2))
    assert "iteration: 1/2" in text and "about" in text and "iteration: 2/2" in text


def test_iteration_lines_show_each_opponents_win_and_non_loss_rates(monkeypatch):
    monkeypatch.setenv(EVERY_VARIABLE, "0")
    evals = {
        "eval/random/win_rate": 0.71, "eval/random/non_loss_rate": 0.78,
        "eval/random/win_rate/player_0": 0.9,
        "eval/minimax/win_rate": 0.0, "eval/minimax/non_loss_rate": 0.44,
    }  # fmt: skip
    text = closing_text(row(1, **evals), row(2))
    # against a perfect player only the non-loss rate can move; it stays shown until the next
    assert text.count("eval win/non-loss: random 0.71/0.78 minimax 0.00/0.44") == 2


def test_the_cold_start_says_its_progress_when_not_on_a_terminal(monkeypatch):
    from selfplay.core.config import RunConfig
    from selfplay.core.models.tiny import load_tiny_policy
    from selfplay.core.train.cold_start import warm_up
    from selfplay.games.tictactoe import TicTacToe

    monkeypatch.setenv(EVERY_VARIABLE, "0")
    said: list[str] = []
    config = RunConfig(cold_start={"steps": 2, "batch_size": 4})
    console = Console(file=io.StringIO())
    ticker = lambda label, n: Ticker(label, n, said.append, console)  # noqa: E731  (as a run's)
    warm_up(load_tiny_policy(), TicTacToe(), config, said.append, ticker)
    progress = [line for line in said if line.startswith("cold start: 1/2")]
    assert progress and "loss" in progress[0], said
    assert any(line.startswith("cold start: 2/2") for line in said)


def test_an_evaluation_tells_its_matches_as_they_end_and_a_log_shows_them(monkeypatch):
    from selfplay.api.policy import ScriptedPolicy
    from selfplay.core.evaluate import evaluate
    from selfplay.core.run.progress import Phase
    from selfplay.games.tictactoe import TicTacToe

    heard: list[tuple[int, int]] = []
    evaluate(TicTacToe(), ScriptedPolicy("random"), opponents=["random", "minimax"], matches=3,
             progress=lambda *told: heard.append(told))  # fmt: skip
    assert {total for _, total, _ in heard} == {6} and heard[-1][:2] == (6, 6)
    assert [rounds for *_, rounds in heard] == list(range(1, len(heard) + 1))
    assert [done for done, *_ in heard] == sorted(done for done, *_ in heard)
    assert heard[0][0] < 6  # told along the way, not only at the end

    monkeypatch.setenv(EVERY_VARIABLE, "0")
    said: list[str] = []
    with Phase("evaluation", said.append, Console(file=io.StringIO())) as told:
        for done, total, rounds in heard:
            told(done, total, rounds)
    assert said[0].startswith("evaluation: 0/6") and said[0].endswith("round 1")
    assert said[-1].startswith("evaluation: 6/6")


def test_a_log_gets_one_line_per_evaluation_of_several_learners(monkeypatch):
    """Off a terminal, a short evaluation says one closing line, over every learner's matches
    (it said one for the first learner and one more for each round of the next)."""
    from contextlib import nullcontext

    from selfplay.api.policy import ScriptedPolicy
    from selfplay.core.run.duties.evaluations import evaluate_learners
    from selfplay.core.run.progress import Phase
    from selfplay.games.tictactoe import TicTacToe

    monkeypatch.delenv(EVERY_VARIABLE, raising=False)  # the default: a line every 30 s
    learners = [
        SimpleNamespace(name=role, roles=(role,), policy=ScriptedPolicy("random"),
                        updater=SimpleNamespace(averaged=nullcontext))
        for role in ("player_0", "player_1")
    ]  # fmt: skip
    ev = SimpleNamespace(opponents=["random", "minimax"], matches=4)
    state = SimpleNamespace(
        config=SimpleNamespace(eval=ev, seed=0), learners=learners, game=TicTacToe(), shared=False
    )
    said: list[str] = []
    with Phase("evaluation", said.append, Console(file=io.StringIO())) as told:
        results = evaluate_learners(state, told)
    assert len(results) == 4  # two learners, two opponents
    assert len(said) == 1 and said[0].startswith("evaluation: 16/16, "), said


def test_the_closing_line_is_said_once():
    said: list[str] = []
    lines = PlainLines("evaluation", 4, said.append, every=30, clock=FakeClock())
    lines.advance(4, "round 5")
    lines.advance(0, "round 6")  # a late report of a step already over
    assert said == ["evaluation: 4/4, 0:00 elapsed  round 5"]


def test_the_header_names_each_learner_and_its_model():
    from selfplay.core.plan.config_loader import build_config, learner_flags

    learners = learner_flags(["player_0", "player_1=tiny"])
    sizes = ["learners.player_1.model_options={layers: 2}"]
    config = build_config(None, {"game": "tictactoe", "learners": learners}, sizes)
    out = io.StringIO()
    shown = display(out)
    shown.config = config
    shown.header()
    said = " ".join(out.getvalue().split())
    assert "learners: player_0 plays player_0 with tiny; player_1 plays player_1 with tiny" in said
    assert said.count('{"layers": 2}') == 1  # the second learner's size, set apart


def test_a_resume_says_which_iteration_it_continues_from(tmp_path):
    metrics = tmp_path / "metrics.csv"
    metrics.write_text("iteration,mean_reward\n1,0.0\n2,0.5\n")
    folder = SimpleNamespace(
        path=tmp_path,
        metrics=metrics,
        read_metrics=lambda: [{"iteration": "1"}, {"iteration": "2"}],
    )
    out = io.StringIO()
    shown = display(out)
    shown.config.resume, shown.config.iterations, shown.folder = tmp_path, 5, folder
    with shown:
        pass
    assert f"resuming {tmp_path} from iteration 2 (its last checkpoint), to 5" in out.getvalue()
    metrics.unlink()
    out = io.StringIO()
    shown = display(out)
    shown.config.resume, shown.folder = tmp_path, folder
    with shown:
        pass
    assert "it wrote no checkpoint, so the run starts over" in out.getvalue()


def test_a_learners_size_is_said_in_parameters():
    from selfplay.core.models.tiny import build_tiny
    from selfplay.core.run.model_setup import size

    model = build_tiny(seed=0)[0]
    every = sum(p.numel() for p in model.parameters())
    assert size(model) == f"{every / 1e6:.2f}M parameters"
    model.get_output_embeddings().weight.requires_grad_(False)
    assert size(model).startswith(f"{every / 1e6:.2f}M parameters, ") and "M trained" in size(model)


def test_a_step_inside_a_run_shows_as_a_second_bar_and_leaves_none_behind():
    from selfplay.core.run.progress import Phase

    out = io.StringIO()
    shown = display(out)
    shown.console = Console(file=out, width=120, force_terminal=True)
    shown.progress.live.console = shown.console
    said: list[str] = []
    with shown:
        assert shown.live
        with Phase("evaluation", said.append, shown.console, shown) as told:
            told(2, 8, 3)
            bars = {task.description: task for task in shown.progress.tasks}
            assert bars["evaluation"].completed == 2 and bars["evaluation"].total == 8
            assert bars["evaluation"].fields["status"] == "round 3"
        assert [task.description for task in shown.progress.tasks] == ["training"]
        shown.summary({}, {})
    assert not shown.live and said == []


def test_iteration_lines_show_each_learners_loss_and_entropy(monkeypatch):
    monkeypatch.setenv(EVERY_VARIABLE, "0")
    shared = closing_text(row(1, loss=0.125, entropy=1.65))
    assert "loss +0.1250  ent 1.65" in shared
    learners = {"player_0/loss": -0.0021, "player_0/entropy": 1.65, "player_0/kl": 0.01}
    learners |= {"player_1/loss": 0.5, "player_1/entropy": 1.62}
    text = closing_text(row(1, **learners))
    assert "player_0 loss -0.0021 ent 1.65  player_1 loss +0.5000 ent 1.62" in text
    assert "ent 0.00" not in text  # the shared policy's column, which such a run has not
