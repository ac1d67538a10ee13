"""The self-rewarding recipe: what ``selfplay run --game instruct`` trains with.

No cold start: the canned player writes two fixed sentences, nothing worth imitating (and the
run's default demonstrator, random, is not one of its players); and answers of up to 128
tokens, so that a judge rates an answer rather than its first 8 tokens.
"""

from __future__ import annotations

from selfplay.api.recipe import Recipe
from selfplay.plugins.hookspecs import hookimpl

INSTRUCT = Recipe(
    "instruct",
    "Self-rewarding's settings: no cold start, answers of up to 128 tokens for the judge to rate.",
    {"game": "instruct", "cold_start.steps": 0, "generation.max_new_tokens": 128},
)


@hookimpl
def register_recipes(register):
    register(INSTRUCT)
