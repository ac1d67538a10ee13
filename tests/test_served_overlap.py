"""Overlapped (served) training: the objectives' corrections for samples of older weights, the
pacing settings, per-learner caps, the legal choice served, and the properties users of such
trainers ask for: no match mixes policy versions, served and trainer log-probabilities agree,
and an overlapped run plays the same matches however fast its servers answer."""

from __future__ import annotations

import csv
import json
import time
import types
from pathlib import Path

import pytest
import torch

pytest.importorskip("starlette")

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample, Sampling
from selfplay.api.objective import IterationData, Scored
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.plan.config_loader import build_config
from selfplay.core.run.trainer import train

# ---- the corrections, on hand-made log-probabilities ------------------------------------------


def _sample(behaviour: list[float], staleness: int, sampling: Sampling) -> Sample:
    tokens = tuple(range(3, 3 + len(behaviour)))
    return Sample(
        "g", "r", (1, 2), tokens, tuple(behaviour), 1.0, (1, 2),
        staleness=staleness, sampling=sampling,
    )  # fmt: skip


def _grad(objective, behaviour, current, advantage=1.0, staleness=0, cap=2.0, **settings):
    """d loss / d logp_t of one sample whose trainer log-probabilities are ``current``."""
    sampled = _sample(behaviour, staleness, Sampling(importance_cap=cap, **settings))
    items = objective.prepare(IterationData([sampled], [advantage]))
    logp = torch.tensor([current], requires_grad=True)
    scored = Scored(logp, torch.zeros_like(logp), torch.ones_like(logp))
    objective.loss(items, scored, None).loss.backward()
    return logp.grad[0] * len(current)  # the loss is a mean over tokens


def test_every_correction_is_plain_reinforce_when_the_server_sampled_the_trainers_policy():
    same = [-0.5, -1.0, -2.0]
    plain = _grad(PolicyGradient(), same, same, cap=None)
    assert torch.allclose(plain, torch.full((3,), -1.0))
    for correction in ("truncated-is", "ppo-clip", "decoupled"):
        for level in ("token", "sequence"):
            found = _grad(PolicyGradient(correction=correction, level=level), same, same)
            assert torch.allclose(found, plain, atol=1e-6), (correction, level, found)


def test_truncated_is_weights_each_token_by_its_ratio_capped():
    behaviour, current = [-1.0, -1.0, -1.0], [-1.0 + 0.5, -1.0 - 0.5, -1.0 + 3.0]
    found = _grad(PolicyGradient(correction="truncated-is"), behaviour, current)
    expected = -torch.tensor([0.5, -0.5, 3.0]).exp().clamp(max=2.0)
    assert torch.allclose(found, expected, atol=1e-6)
    sequence = _grad(PolicyGradient(level="sequence"), behaviour, [-1.0, -1.2, -0.9])
    assert torch.allclose(sequence, torch.full((3,), -float(torch.tensor(-0.1).exp())), atol=1e-6)


def test_ppo_clip_stops_the_gradient_past_the_clip_and_bounds_a_negative_advantage():
    behaviour = [-1.0, -1.0, -1.0]
    current = [-1.0 + 0.1, -1.0 + 0.5, -1.0 - 0.05]  # ratios 1.105 (inside), 1.65, 0.95
    found = _grad(PolicyGradient(correction="ppo-clip"), behaviour, current)
    ratio = torch.tensor([0.1, 0.5, -0.05]).exp()
    assert torch.allclose(found, torch.stack([-ratio[0], torch.tensor(0.0), -ratio[2]]))
    # a negative advantage: ratio 3 past the dual clip C = 2 takes no gradient; 1.5 does
    negative = _grad(
        PolicyGradient(correction="ppo-clip"), behaviour, [0.0986, -0.5945, -1.0], -1.0
    )
    assert negative[0] == 0 and negative[1] == pytest.approx(1.5, abs=1e-3)


def test_decoupled_leaves_out_tokens_whose_behaviour_weight_passes_the_cap():
    behaviour, current = [-1.0, -1.0, -1.0], [-1.0 + 0.4, -1.0 + 1.0, -1.0]  # w 1.49, 2.72, 1
    found = _grad(PolicyGradient(correction="decoupled"), behaviour, current)
    assert torch.allclose(found, torch.tensor([-float(torch.tensor(0.4).exp()), 0.0, -1.0]))


def test_past_the_cap_a_reweighted_sample_counts_by_its_age():
    same = [-1.0, -1.0]
    young = _grad(PolicyGradient(), same, same, staleness=1, max_staleness=1, age_decay=0.5)
    old = _grad(PolicyGradient(), same, same, staleness=3, max_staleness=1, age_decay=0.5)
    assert torch.allclose(old, 0.25 * young)


def test_legal_pg_corrects_a_stale_choice_by_the_ratio_of_its_choice_probabilities():
    q = torch.softmax(torch.tensor([-1.0, -2.0]), 0)
    for behaviour_q, factor in ((float(q[0]), 1.0), (float(q[0]) * 1.25, 0.8), (0.01, 2.0)):
        objective = LegalPolicyGradient()
        chosen = Sample(
            "g", "r", (1,), (ord("a"), 0), (), 1.0, (1,), menu=("a", "b"),
            staleness=1, choice_logprob=float(torch.log(torch.tensor(behaviour_q))),
            sampling=Sampling(importance_cap=2.0),
        )  # fmt: skip
        data = IterationData([chosen], [1.0], encode=lambda t: (ord(t), 0))
        y = torch.tensor([-1.0, -2.0], requires_grad=True)
        logp = torch.stack([torch.zeros(2), y], dim=1)
        scored = Scored(logp, torch.zeros_like(logp), torch.ones_like(logp))
        objective.loss(objective.prepare(data), scored, None).loss.backward()
        plain = -(torch.tensor([1.0, 0.0]) - q)  # -A d log q(a) / dy
        assert torch.allclose(y.grad, factor * plain, atol=1e-5), (factor, y.grad)


# ---- runs ---------------------------------------------------------------------------------------

RUN = ["cold_start.steps=20", "eval.matches=2", "threads=1"]
SERVED = ["rollout.workers=1", "rollout.worker_threads=1"]


def run(tmp_path: Path, name: str, *extra: str, iterations: int = 3, **flags) -> Path:
    flags = {
        "iterations": iterations,
        "matches": 12,
        "out": tmp_path,
        "name": name,
        "seed": 3,
        **flags,
    }
    train(build_config(None, flags, [*RUN, *extra]))
    return tmp_path / name


def rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def episodes(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").open()]


def _slowed(monkeypatch, seconds: float, hold: bool = False) -> list[tuple[int, int]]:
    """Every answer the workers give is delayed by ``seconds`` (with ``hold``, the first
    answer of each batch after the first waits until the trainer has published newer weights
    than the batch plays with: a sync mid-batch); returns the log of (match batch, the
    version the server says it played) the producer's requests saw."""
    from selfplay.core.serving import rollout_client
    from selfplay.core.train import rollouts

    seen: list[tuple[int, int]] = []
    batch = types.SimpleNamespace()  # the producer's batch (its requests run on a pool)
    play, read = rollouts.Rollouts._play, rollout_client.Worker._read

    def played(self, job, told=None):
        batch.iteration, batch.rollouts, batch.held = job.iteration, self, False
        return play(self, job, told)

    def answered(self, reply, count, echoed=None):
        time.sleep(seconds)
        if hold and getattr(batch, "iteration", 1) > 1 and not batch.held:
            sync, played_by = batch.rollouts.sync, batch.rollouts.sync.syncs[0].learner.version
            deadline = time.monotonic() + 300
            while sync.published <= played_by and time.monotonic() < deadline:
                time.sleep(0.05)
            batch.held = True
        version = (reply.get("selfplay") or {}).get("policy_version", -1)
        seen.append((getattr(batch, "iteration", 0), version))
        return read(self, reply, count, echoed)

    monkeypatch.setattr(rollouts.Rollouts, "_play", played)
    monkeypatch.setattr(rollout_client.Worker, "_read", answered)
    return seen


def test_no_match_mixes_policy_versions_with_two_servers_and_syncs_while_playing(
    tmp_path, monkeypatch
):
    """Two workers, two batches ahead: the trainer publishes while a batch is played (its
    publish lag), yet every request of a batch is answered by the one version its matches
    record, on both servers."""
    from selfplay.core.commands.serve import Server
    from selfplay.core.models.tiny import load_tiny_policy
    from selfplay.core.serving.server import ChatService, create_app

    services = [ChatService(load_tiny_policy(seed=0), "learner", weight_transfer="file")]
    services.append(ChatService(load_tiny_policy(seed=0), "learner", weight_transfer="file"))
    servers = [Server(create_app(service)).start(timeout=120) for service in services]
    seen = _slowed(monkeypatch, 0.0, hold=True)
    names = ",".join(f"openai:{server.url}#learner" for server in servers)
    ahead = [f"rollout.servers={names}", "rollout.max_staleness=2", "rollout.queue=2"]
    try:
        folder = run(tmp_path, "two", *ahead, iterations=4)
    finally:
        for server, service in zip(servers, services, strict=True):
            server.stop()
            service.batcher.close()
    found = rows(folder)
    assert max(float(r["rollout/publish_lag"]) for r in found) >= 1  # synced mid-batch
    recorded: dict[int, set[int]] = {}
    for episode in episodes(folder):
        versions = set(episode["extra"]["policy_version"].values())
        assert len(versions) == 1, episode["extra"]  # every learner seat: one version
        recorded.setdefault(episode["record"]["iteration"], set()).update(versions)
    served: dict[int, set[int]] = {}
    for iteration, version in seen:
        served.setdefault(iteration, set()).add(version)
    assert served == recorded and all(len(v) == 1 for v in served.values()), (served, recorded)


def test_an_overlapped_run_repeats_itself_move_for_move_when_its_servers_are_slow(
    tmp_path, monkeypatch
):
    ahead = [*SERVED, "rollout.max_staleness=1", "objective_options.correction=ppo-clip"]
    quick = run(tmp_path, "quick", *ahead, iterations=4)
    _slowed(monkeypatch, 0.3)  # every answer late: the trainer waits on the producer
    slow = run(tmp_path, "slow", *ahead, iterations=4)
    waits = [float(r["rollout/trainer_wait_seconds"]) for r in rows(slow)]
    assert sum(waits) > sum(float(r["rollout/trainer_wait_seconds"]) for r in rows(quick))
    moves = [[[t["text"] for t in e["turns"]] for e in episodes(f)] for f in (quick, slow)]
    assert moves[0] == moves[1]
    for mine, theirs in zip(rows(quick), rows(slow), strict=True):
        assert (
            mine["policy"] == theirs["policy"]
            and mine["rollout/version"] == theirs["rollout/version"]
        )


def _random_hf_model(folder: Path) -> Path:
    """A two-layer GPT-2 of random weights over the tiny model's character tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from selfplay.core.models.tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer), n_layer=2, n_embd=32, n_head=2, n_positions=512,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_served_and_trainer_logprobs_agree_on_a_random_init_hf_model(tmp_path):
    model = str(_random_hf_model(tmp_path / "gpt2"))
    folder = run(tmp_path, "hf", *SERVED, iterations=2, model=model)
    assert float(rows(folder)[-1]["rollout/mismatch_max"]) < 1e-4


def test_the_legal_choice_served_in_turn_trains_on_the_in_process_runs_choices(tmp_path):
    kuhn = ["game=kuhn-poker", "generation.choice=legal", "objective=legal-pg"]
    local = rows(run(tmp_path, "local", *kuhn, iterations=2))
    served_folder = run(tmp_path, "served", *kuhn, *SERVED, iterations=2)
    for mine, theirs in zip(local, rows(served_folder), strict=True):
        for key in ("policy", "chosen_prob", "kl", "entropy"):
            assert float(theirs[key]) == pytest.approx(float(mine[key]), abs=1e-5), key
    turns = [t for e in episodes(served_folder) for t in e["turns"] if t["seat"] == "learner"]
    assert turns and all(t["menu"] and t["choice_logprob"] <= 0 for t in turns)
    overlapped = rows(run(tmp_path, "overlap", *kuhn, *SERVED, "rollout.max_staleness=1"))
    assert [float(r["rollout/staleness"]) for r in overlapped] == [0.0, 1.0, 1.0]


def test_reweight_trains_samples_past_the_cap_and_drop_does_not(tmp_path):
    ahead = [*SERVED, "rollout.max_staleness=1", "rollout.queue=2"]
    kept = rows(run(tmp_path, "reweight", *ahead, "rollout.stale=reweight", iterations=4))
    assert max(float(r["rollout/staleness"]) for r in kept) == 2
    assert all(float(r["update_steps"]) >= 1 for r in kept)
    assert sum(float(r["rollout/stale_dropped"]) for r in kept) == 0
    assert float(kept[-1]["rollout/staleness_mean"]) == pytest.approx(
        sum(float(r["rollout/staleness"]) for r in kept) / len(kept)
    )


def test_a_learner_that_updates_every_other_iteration_ages_in_its_own_versions(tmp_path):
    from selfplay.core.plan.config_loader import learner_flags

    flags = {"learners": learner_flags(["player_0", "player_1"])}
    extra = [
        *SERVED,
        "game=kuhn-poker",  # every move legal: both roles act in every match
        "generation.choice=legal",
        "objective=legal-pg",
        "rollout.max_staleness=1",
        "rollout.queue=2",
        "rollout.stale=drop",
        "learners.player_1.update_every=2",
        "learners.player_1.max_staleness=2",
    ]
    found = rows(run(tmp_path, "two", *extra, iterations=5, **flags))
    mine = [float(r["player_0/rollout/staleness"]) for r in found]
    theirs = [float(r["player_1/rollout/staleness"]) for r in found]
    assert max(mine) == 2  # two batches ahead: past player_0's cap of 1, dropped
    assert max(theirs) <= 1  # player_1 updated once in those two iterations
    assert sum(float(r["rollout/stale_dropped"]) for r in found) > 0
    steps = [float(r["player_1/update_steps"]) for r in found]
    assert steps[1] >= 1 and steps[3] >= 1  # its samples were kept, its cap never passed


def test_an_objective_that_does_not_say_how_it_treats_stale_samples_is_refused():
    from selfplay.api.objective import Objective
    from selfplay.core.plan.checks import check_stale

    class Plain(Objective):
        name = "plain"

        def prepare(self, data):
            return []

        def loss(self, items, current, reference):
            raise AssertionError

    config = build_config(None, {}, ["rollout.workers=1", "rollout.max_staleness=1"])
    with pytest.raises(ConfigError, match=r"rollout.max_staleness=1 with objective.*older weights"):
        check_stale(config, Plain())
    check_stale(build_config(None, {}, ["rollout.workers=1"]), Plain())  # in turn: fine
