"""One rule for a move written with a look-alike character from another script: refused with
the character's name, in every game and phrasing, whichever script it comes from (Unicode's own
case rules would fold the Kelvin sign onto ``k`` and leave Cyrillic ``к`` alone)."""

from __future__ import annotations

import pytest

from selfplay.api.game import OBFUSCATED, Game, InvalidAction
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import build_game
from selfplay.games.move_names import read_name

# a look-alike of the letter k (or K) from five places of Unicode
LOOK_ALIKES_OF_K = {
    "\u212a": "KELVIN SIGN",
    "\u043a": "CYRILLIC SMALL LETTER KA",
    "\u03ba": "GREEK SMALL LETTER KAPPA",
    "\uff4b": "FULLWIDTH LATIN SMALL LETTER K",
    "\U0001d424": "MATHEMATICAL BOLD SMALL K",
}


def built(name: str, phrasing: str = "default") -> Game:
    return build_game(RunConfig(game=name, game_options={"phrasing": phrasing}))


def judged(game: Game, answer: str) -> tuple[str | None, str | None]:
    state = game.reset(0)
    return game.action_of(f"[{answer}]", state, game.to_act(state))


def test_plain_ascii_is_read_in_either_case():
    assert read_name("  Kk ") == "kk"


@pytest.mark.parametrize(("char", "unicode_name"), LOOK_ALIKES_OF_K.items())
def test_a_look_alike_is_refused_by_name(char, unicode_name):
    with pytest.raises(InvalidAction, match=f"{unicode_name} \\(U\\+{ord(char):04X}\\)"):
        read_name(f"pus{char}")


@pytest.mark.parametrize("char", LOOK_ALIKES_OF_K)
def test_an_obfuscated_tictactoe_square_in_a_look_alike_is_not_played(char):
    game = built("tictactoe", OBFUSCATED)
    assert judged(game, "k") == ("1", None)
    assert judged(game, "K") == ("1", None)
    action, reason = judged(game, char)
    assert action is None
    assert LOOK_ALIKES_OF_K[char] in reason and "ASCII" in reason


@pytest.mark.parametrize(
    ("name", "phrasing", "plain", "look_alike"),
    [
        ("kuhn-poker", "default", "check", "chec\u212a"),
        ("kuhn-poker", OBFUSCATED, "wait", "w\u0430it"),  # Cyrillic a
        ("tictactoe", "default", "4", "\uff14"),  # full-width 4
        ("rock-paper-scissors", "default", "rock", "roc\u212a"),
    ],
)
def test_every_game_reads_its_moves_by_the_same_rule(name, phrasing, plain, look_alike):
    game = built(name, phrasing)
    assert judged(game, plain)[0] is not None
    action, reason = judged(game, look_alike)
    assert action is None
    assert "not an ASCII character" in reason


def test_an_openspiel_column_in_a_look_alike_is_not_played():
    pytest.importorskip("pyspiel")
    game = built("openspiel:connect_four", OBFUSCATED)
    assert judged(game, "#C")[0] is not None
    action, reason = judged(game, "#\u0421")  # Cyrillic capital es
    assert action is None
    assert "CYRILLIC CAPITAL LETTER ES" in reason


def test_a_negotiation_offer_in_full_width_digits_is_not_read_as_numbers():
    game = built("negotiation")
    assert judged(game, "offer 1 wood for 1 gold")[0] is not None
    action, reason = judged(game, "offer \uff11 wood for 1 gold")
    assert action is None
    assert "FULLWIDTH DIGIT ONE" in reason
