"""Several learners in one run (docs/learners.md): one model per group of roles."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.core.commands.checkpoint_eval import evaluate_checkpoint
from selfplay.core.commands.cli import main
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import learner_config
from selfplay.core.plan.config_loader import build_config, learner_flags
from selfplay.core.plan.recipes import resolve
from selfplay.core.run.trainer import train
from tests.test_loop import selfplay

QUICK = [
    "--game", "tictactoe", "--matches", "8", "--cold-start", "30", "--seed", "3",
    "--set", "cold_start.batch_size=16",
    "--set", "eval.matches=4", "--set", "checkpoint_every=1", "--set", "train.minibatch_size=16",
]  # fmt: skip
PLAYERS = ("random", "minimax")  # tic-tac-toe's scripted players
TWO = ["--learner", "player_0", "--learner", "player_1=tiny"]
POOL_SERVER = ["--opponent", "pool", "--set", "pool.server=openai:http://127.0.0.1:9/v1"]


def rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


# ---- settings -------------------------------------------------------------------------------


def test_a_learner_takes_the_runs_settings_and_overrides_its_own():
    config = build_config(
        None,
        {"learners": learner_flags(["solver=tiny", "proposer"])},
        ["learners.solver.train.lr=5e-5", "train.clip=0.3", "learners.solver.update_every=2"],
    )
    solver = learner_config(config, "solver")
    assert solver.train.lr == 5e-5 and solver.objective_options["clip"] == 0.3  # own, the run's
    assert learner_config(config, "proposer").train.lr == config.train.lr
    assert config.learners["solver"].update_every == 2
    assert solver.learners == {}


def test_another_model_does_not_inherit_the_runs_model_options():
    config = RunConfig.model_validate(
        {"model": "some/model", "model_options": {"revision": "x"}, "learners": {"a": {}}}
    )
    config.learners["b"] = config.learners["a"].model_copy(update={"model": "tiny"})
    assert learner_config(config, "a").model_options == {"revision": "x"}
    assert learner_config(config, "b").model_options == {}


def test_a_misspelt_learner_key_names_its_path_and_the_valid_keys():
    with pytest.raises(ConfigError) as err:
        build_config(None, {}, ["learners.solver.train.lrr=1"])
    assert "'learners.solver.train.lrr'" in str(err.value)
    assert "Did you mean 'learners.solver.train.lr'" in str(err.value)


@pytest.mark.parametrize("flag", ["=tiny", "solver=", ""])
def test_a_malformed_learner_flag_is_refused(flag):
    with pytest.raises(ConfigError, match="NAME=MODEL"):
        learner_flags([flag])


# ---- bad input: exit 2 before any run folder exists -------------------------------------------


BAD = {
    "a role no learner plays": (["--learner", "player_0"], "No learner plays 'player_1'"),
    "a role claimed twice": (
        [*TWO, "--learner", "extra", "--set", "learners.extra.roles=[player_0]"],
        "claimed by two learners",
    ),
    "a learner no role uses": ([*TWO, "--learner", "judge"], "plays role 'judge'"),
    "an unloadable model": (
        ["--learner", "player_0", "--learner", "player_1=no-such-model"],
        "learners.player_1.model 'no-such-model'",
    ),
    "per-role LoRA": ([*TWO, "--lora", "--set", "lora.per_role=true"], "per-role LoRA trains"),
    "a pool server for two models": (
        [*TWO, "--lora", "--set", "learners.player_1.model_options={layers: 2}", *POOL_SERVER],
        "one base model",
    ),
    "the run's rollout servers": (
        [*TWO, "--set", "rollout.servers=openai:http://127.0.0.1:9/v1#x"],
        "learners.NAME.servers=openai:URL#MODEL",
    ),
    "servers for one learner only": (
        [*TWO, "--set", "learners.player_0.servers=openai:http://127.0.0.1:9/v1#x"],
        "name no servers while others do",
    ),
    "a learner's setting its objective does not read": (
        [
            *TWO,
            "--set",
            "learners.player_1.objective=sft",
            "--set",
            "learners.player_1.train.clip=0.1",
        ],
        "learners.player_1.objective_options.clip: the objective 'sft' of learner 'player_1'",
    ),
    "a learner's estimator with an objective that needs none": (
        [
            *TWO,
            "--set",
            "learners.player_0.objective=sft",
            "--set",
            "learners.player_0.estimator=grpo",
        ],
        "learners.player_0.estimator: the objective 'sft' of learner 'player_0'",
    ),
    "a reserved name": (
        ["--learner", "greedy", "--set", "learners.greedy.roles=[player_0,player_1]"],
        "a learner's name",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_learners_exit_2_before_any_run_folder(case, tmp_path, capsys):
    flags, said = BAD[case]
    cores = os.sched_getaffinity(0)
    assert main(["run", *QUICK, *flags, "--out", str(tmp_path / "runs")]) == 2
    assert said in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "runs").exists()
    assert os.sched_getaffinity(0) == cores  # refused before the run keeps to its own cores


def test_a_learners_setting_its_own_objective_reads_is_kept():
    given = ["learners.player_0.roles=[player_0]", "learners.player_1.train.kl_coef=0.1"]
    config = resolve(build_config(None, {"game": "tictactoe"}, given))  # pg reads kl_coef
    assert learner_config(config, "player_1").objective_options["kl_coef"] == 0.1


def test_a_learners_setting_added_later_does_not_block_an_older_run_folder():
    from selfplay.core.config.changes import differences

    given = ["learners.proposer.roles=[proposer]", "learners.solver.train={lr: 3.0e-5}"]
    now = build_config(None, {"game": "math-proposer-solver"}, given).model_dump(mode="json")

    def without_lr_min(settings):  # as a selfplay before train.lr_min wrote them
        settings = json.loads(json.dumps(settings))
        del settings["train"]["lr_min"], settings["learners"]["solver"]["train"]["lr_min"]
        return settings

    older = without_lr_min(now)
    assert differences(older, now) == []
    changed = json.loads(json.dumps(now))
    changed["learners"]["solver"]["train"]["lr"] = 1e-4
    assert differences(older, changed) == [
        "learners.solver.train.lr: 3e-05 in the checkpoint, 0.0001 now"
    ]
    changed = json.loads(json.dumps(now))
    changed["learners"]["solver"]["train"]["lr_min"] = 1e-6  # set, not a default: it counts
    assert differences(older, changed)


def test_a_judge_must_name_which_learner(tmp_path, capsys):
    args = ["run", "--game", "debate", "--learner", "pro", "--learner", "con"]
    args += ["--reward", "judge", "--set", "reward_options.judge.model=learner"]
    assert main([*args, "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "learner:pro" in err and "learner:con" in err
    assert not (tmp_path / "runs").exists()


def test_a_shared_policys_run_refuses_a_learner_name(tmp_path, capsys):
    from selfplay.core.commands.play import _chosen_learner

    with pytest.raises(ConfigError, match="one shared policy"):
        _chosen_learner(RunConfig(), tmp_path, "solver")


# ---- a run of two learners ------------------------------------------------------------------


def test_two_learners_train_their_own_seats_and_resume_bitwise(tmp_path, kill_at_iteration):
    sizes = ["--set", "learners.player_1.model_options={layers: 2}"]
    args = [*QUICK, *TWO, *sizes]
    straight = selfplay("run", *args, "--iterations", "3", "--out", str(tmp_path), "--name", "s")
    assert straight.returncode == 0, straight.stderr
    folder = tmp_path / "s"
    first = rows(folder)[0]
    for name in ("player_0", "player_1"):
        assert float(first[f"{name}/update_steps"]) >= 1  # each learner took its own step
    assert "loss" not in first  # no shared policy's columns
    summary = json.loads((folder / "summary.json").read_text())
    assert set(summary["after"]) == {f"{n}/{p}" for n in ("player_0", "player_1") for p in PLAYERS}
    for name, result in summary["after"].items():  # each learner measured in its own seat only
        assert list(result["payoff_by_role"]) == [name.split("/")[0]]
    assert "player_1/minimax" in (folder / "summary.txt").read_text()  # the closing table
    seats = set()
    with (folder / "episodes.jsonl").open() as f:
        for line in f:
            episode = json.loads(line)
            seats.update(f"{role}={holder}" for role, holder in episode["seats"].items())
    assert seats == {"player_0=learner:player_0", "player_1=learner:player_1"}  # its own role
    state = torch.load(folder / "checkpoints" / "iter-000003" / "state.ckpt", weights_only=False)
    small, large = state["model/player_1"], state["model/player_0"]
    layers = lambda weights: {k.split(".")[2] for k in weights if ".layers." in k}  # noqa: E731
    assert len(layers(small)) == 2 and len(layers(large)) == 4  # two models, two sizes

    # each learner leaves by its name: exported, measured, played and served
    assert main(["export", str(folder), str(tmp_path / "none")]) == 2  # which one?
    assert main(["export", str(folder), str(tmp_path / "small"), "--learner", "player_1"]) == 0
    exported = json.loads((tmp_path / "small" / "config.json").read_text())
    assert exported["num_hidden_layers"] == 2
    report = evaluate_checkpoint(folder, "matches", 2, learner="player_0")
    assert set(report["opponents"]) == set(PLAYERS)
    loaded = load_checkpoint_policy(folder, "player_1")
    assert loaded.roles == ("player_1",) and "player_1" in loaded.label
    with pytest.raises(ConfigError, match="player_0, player_1"):
        load_checkpoint_policy(folder, "nobody")

    from selfplay.core.commands.serve import build_service

    service, label = build_service(folder, learner="player_1")
    assert service.name == "s-player_1" and "(player_1)" in label

    # killed after its second iteration, resumed from that checkpoint to the third
    kill_at_iteration([*args, "--iterations", "3", "--out", str(tmp_path), "--name", "r"])
    resumed = selfplay("run", "--resume", str(tmp_path / "r"), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    timing = ("seconds", "elapsed")
    same = lambda row: {k: v for k, v in row.items() if not any(t in k for t in timing)}  # noqa: E731
    assert [same(r) for r in rows(tmp_path / "r")] == [same(r) for r in rows(folder)]


def test_each_learner_trains_on_its_own_turns_in_the_branches(tmp_path):
    flags = [
        f"out={tmp_path}", "game=tictactoe", "matches=4", "iterations=1", "cold_start.steps=0",
        "eval.matches=2", "generation.choice=legal", "objective=legal-pg", "branches.matches=3",
    ]  # fmt: skip
    learners = {"learners": learner_flags(["player_0", "player_1=tiny"])}
    found = {}
    for positions in (0, 2):
        folder = f"p{positions}"
        train(
            build_config(
                None, learners, [*flags, f"name={folder}", f"branches.positions={positions}"]
            )
        )
        found[positions] = rows(tmp_path / folder)[0]
    plain, branched = found[0], found[2]
    assert branched["branch_matches"] == "6" and "branch_matches" not in plain
    for name in ("player_0", "player_1"):  # both seats play on in every branch
        assert int(branched[f"{name}/train_tokens"]) > int(plain[f"{name}/train_tokens"])


def test_each_learner_faces_the_other_learners_pool_and_resumes_bitwise(
    tmp_path, kill_at_iteration
):
    args = [*QUICK, *TWO, "--opponent", "psro:nash", "--set", "pool.snapshot_every=1"]
    args += ["--set", "pool.matches_per_pair=2", "--set", "opponent_options.p_latest=0"]
    straight = selfplay("run", *args, "--iterations", "3", "--out", str(tmp_path), "--name", "s")
    assert straight.returncode == 0, straight.stderr
    folder = tmp_path / "s"
    for name in ("player_0", "player_1"):  # a pool folder per learner
        assert {p.name for p in (folder / "pool" / name).glob("*.pt")} >= {"snapshot-0.pt"}
    facing = set()
    with (folder / "episodes.jsonl").open() as f:
        for line in f:
            for role, holder in json.loads(line)["seats"].items():
                assert holder in (f"learner:{role}", *(f"snapshot:{i}:{role}" for i in range(3)))
                facing.add(holder)
    assert {"snapshot:0:player_0", "snapshot:0:player_1"} <= facing  # the other's pool
    with (folder / "ratings.csv").open() as f:
        rated = {row["name"] for row in csv.DictReader(f)}
    assert {"learner:player_0", "snapshot:1:player_1"} <= rated
    assert "snapshot:1" not in rated  # every snapshot is a learner's
    kill_at_iteration([*args, "--iterations", "3", "--out", str(tmp_path), "--name", "r"])
    resumed = selfplay("run", "--resume", str(tmp_path / "r"), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    timing = ("seconds", "elapsed")
    same = lambda row: {k: v for k, v in row.items() if not any(t in k for t in timing)}  # noqa: E731
    assert [same(r) for r in rows(tmp_path / "r")] == [same(r) for r in rows(folder)]


def test_two_learners_train_in_two_processes_with_identical_weights(tmp_path):
    digests = tmp_path / "digests"
    out = selfplay(
        "run", *QUICK, *TWO, "--iterations", "2", "--devices", "2", "--strategy", "ddp",
        "--set", "callbacks=[test-digest]", "--out", str(tmp_path), "--name", "ddp",
        env={"SELFPLAY_TEST_DIGESTS": str(digests)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    ranks = sorted(p.read_text() for p in digests.iterdir())
    assert len(ranks) == 2 and ranks[0] == ranks[1]  # both learners' weights, on both
    table = rows(tmp_path / "ddp")
    assert [int(r["matches"]) for r in table] == [8, 8]  # both processes' matches counted
    assert all(float(r["player_1/update_steps"]) >= 1 for r in table)


def reordered_tokenizer_folder(path: Path) -> Path:
    """A tiny model whose tokenizer gives every character another id and has a chat template
    of its own: the same text, other tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from selfplay.core.models.tiny import build_tiny
    from selfplay.core.models.tokenizer import CHARACTERS, SPECIAL_TOKENS

    vocabulary = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *reversed(CHARACTERS)])}
    core = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
        unk_token="<unk>", padding_side="left", model_max_length=256,
    )  # fmt: skip
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    model, _ = build_tiny(seed=5)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_each_seat_renders_its_prompt_with_its_own_learners_tokenizer(tmp_path):
    from selfplay.core.models.tokenizer import build_char_tokenizer

    other = reordered_tokenizer_folder(tmp_path / "other")
    args = [*QUICK, "--learner", "player_0", "--learner", f"player_1={other}"]
    out = selfplay("run", *args, "--iterations", "1", "--out", str(tmp_path), "--name", "t")
    assert out.returncode == 0, out.stderr
    from transformers import AutoTokenizer

    theirs, ours = AutoTokenizer.from_pretrained(other), build_char_tokenizer()
    seen = set()
    with (tmp_path / "t" / "episodes.jsonl").open() as f:
        for line in f:
            for turn in json.loads(line)["turns"]:
                tokenizer = theirs if turn["seat"] == "learner:player_1" else ours
                text = tokenizer.decode(turn["prompt_ids"])
                # its own template: "user: ..." for player_1, the plain role tags for player_0
                assert ("user: " in text) == (turn["seat"] == "learner:player_1"), text
                assert re.search(r"[0-9xo]{3}\|[0-9xo]{3}\|[0-9xo]{3}", text)  # the board, read
                seen.add(turn["seat"])
    assert seen == {"learner:player_0", "learner:player_1"}


def test_the_joint_table_takes_each_role_from_its_learner():
    from selfplay.core.models.loading import build_learner
    from selfplay.core.models.policy_table import joint_table, policy_table
    from selfplay.core.plan.build import build_game

    config = build_config(None, {"game": "kuhn-poker"}, ["model_options={model_seed: 1}"])
    game = build_game(config)
    first, second = build_learner(build_config(None, {"game": "kuhn-poker"})), build_learner(config)
    joint = joint_table(game, {"player_0": first, "player_1": second})
    alone = {name: policy_table(p, game) for name, p in (("a", first), ("b", second))}
    roles = {info.key: info.role for info in game.information_sets()}
    assert set(joint) == set(roles)
    for key, role in roles.items():
        assert joint[key] == alone["a" if role == "player_0" else "b"][key]
    assert alone["a"] != alone["b"]  # two different models, so the test can tell them apart


def test_two_learners_report_their_joint_exploitability(tmp_path):
    args = ["--game", "kuhn-poker", "--matches", "8", "--cold-start", "0", "--seed", "1"]
    args += ["--set", "eval.matches=4", "--learner", "player_0", "--learner", "player_1"]
    args += ["--set", "learners.player_1.model_options={model_seed: 1}"]  # two models
    out = selfplay("run", *args, "--iterations", "1", "--out", str(tmp_path), "--name", "k")
    assert out.returncode == 0, out.stderr
    value = float(rows(tmp_path / "k")[0]["exploitability/last"])
    assert 0.0 < value < 2.0  # Kuhn's exploitability is at most a few chips
    # measured again after the run: the same joint number under the same name
    report = evaluate_checkpoint(tmp_path / "k", "exploitability", 0)
    assert report["exploitability/last"] == pytest.approx(value, abs=1e-6)
    # one learner playing both seats is another number: refused, not logged under this name
    with pytest.raises(ConfigError, match=r"joint policy's.*drop --learner"):
        evaluate_checkpoint(tmp_path / "k", "exploitability", 0, learner="player_0")
