"""The verifier contract, the exact / numeric / rules verifiers, registration and listing."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from selfplay.api.verifier import Verdict, Verifier
from selfplay.core.commands.cli import main
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.manager import registries
from selfplay.verifiers.basic import Exact, Numeric, read_number
from selfplay.verifiers.rules import Rules


def test_verdict_scores_errors_as_not_applicable():
    assert Verdict("pass").score == 1.0
    assert Verdict("fail").score == 0.0
    assert Verdict("timeout").score == 0.0
    assert Verdict("error").score is None
    with pytest.raises(ValueError, match="'maybe'"):
        Verdict("maybe")


def test_an_exception_inside_a_verifier_is_an_error_verdict():
    class Broken(Verifier):
        name = "broken"

        def check(self, candidate, reference, **ctx):
            raise RuntimeError("disk on fire")

    verdict = Broken().verify("1", "1")
    assert verdict.status == "error" and "disk on fire" in verdict.detail


def test_unknown_option_names_the_key():
    with pytest.raises(ValidationError, match="tolerence"):
        Numeric(tolerence=0.1)


@pytest.mark.parametrize(
    "candidate,reference,status",
    [
        ("  Hello   World. ", "hello world", "pass"),
        ("Paris", "London", "fail"),
        ("", "x", "fail"),
    ],
)
def test_exact(candidate, reference, status):
    assert Exact().verify(candidate, reference).status == status


def test_exact_options():
    assert Exact(case_sensitive=True).verify("Paris", "paris").status == "fail"
    assert Exact(extract_answer=True).verify("so the answer: Paris", "paris").status == "pass"
    assert Exact(extract_answer=True).verify("no answer here\nat all", "x").status == "fail"


@pytest.mark.parametrize(
    "candidate,reference,status",
    [
        ("answer: 0.30000000000000004", "0.3", "pass"),
        ("3/4", "0.75", "pass"),
        (r"\boxed{1,000}", "1000", "pass"),
        ("1e-30", "0", "fail"),
        ("0.333", "1/3", "fail"),
        ("we get 41", "42", "fail"),
        ("no number", "42", "fail"),
        ("42", "forty-two", "error"),
    ],
)
def test_numeric(candidate, reference, status):
    assert Numeric().verify(candidate, reference).status == status


def test_numeric_tolerances():
    assert Numeric(relative=1e-3).verify("0.333", "1/3").status == "pass"
    assert Numeric(absolute=0.5).verify("41.6", "42").status == "pass"
    assert read_number("1/0") is None


def test_rules_checks_legality_with_the_game():
    game = TicTacToe()
    state = game.reset(0)
    assert Rules().verify("I take [4]", "", game=game, state=state).status == "pass"
    assert Rules().verify("[9]", "", game=game, state=state.to_json()).status == "fail"
    moved = game.step(state, "player_0", "[4]")
    assert Rules().verify("[4]", "", game=game, state=moved).status == "fail"
    missing = Rules().verify("[4]", "")
    assert missing.status == "error" and "game=" in missing.detail


def test_builtin_verifiers_are_registered():
    assert {"math", "exact", "numeric", "code", "rules"} <= {e.name for e in registries().verifiers}


def test_verifiers_command_lists_options(capsys):
    assert main(["verifiers", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["code"]["options"]["allow_code_execution"]["default"] is False
    assert rows["math"]["options"]["timeout"]["description"]
    assert rows["numeric"]["description"]
    assert main(["verifiers"]) == 0
    assert "allow_code_execution" in capsys.readouterr().out
