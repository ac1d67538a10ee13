"""Turn a model's final answer into a sympy value without ever evaluating text.

The answer span is found by ``answers.extract_answer`` and normalised and tokenised against a
whitelist by ``math_syntax``; this module's recursive-descent parser builds the value from
sympy constructors (``Integer``, ``Rational``, ``Add``, ``Mul``, ``Pow``, ``Symbol``,
``Tuple``, ``FiniteSet``, ``Interval``, ``Union`` and a few functions). ``eval``, ``exec``,
``sympify`` and ``parse_expr`` are never called, so no text can reach Python's interpreter.

What an answer may be (docs/verifiers.md has the table):
- an expression: numbers (``3``, ``2.5``, ``.5``, ``1e-3``; decimals are exact rationals),
  ``+ - * / ^ **``, postfix ``!`` and ``!!`` (the double factorial), parentheses and braces,
  ``|x|``, implicit multiplication (``2x``, ``3\\pi``, ``2(x+1)``, ``2|x|``, ``4i``, ``xy``:
  two or three letters that are not a word in ``WORDS``; two numbers side by side are an
  error, never a product), the functions sqrt, sin, cos, tan, log (natural), ln, exp, abs
  (``\\sin^2 x`` is (sin x)^2), the constants pi, e, i (the imaginary unit) and infinity
  (``\\infty``, ``oo``, ``inf`` and ``infinity`` in any case; ``nan`` and ``dne`` say there
  is no number and are refused, never read as letters), single-letter symbols, and the
  LaTeX forms ``\\frac{a}{b}`` (also ``\\frac12``, ``\\dfrac``, ``\\tfrac``, ``a \\over b``), a
  mixed number ``2\\frac{1}{2}`` (= 5/2), ``\\sqrt{x}``, ``\\sqrt[n]{x}``, ``\\binom{n}{k}``,
  ``n \\choose k``, ``\\cdot``, ``\\times``, ``\\div``, ``\\pi``, ``\\sin`` and friends;
- a percentage: an expression followed by ``%``, ``\\%`` or ``percent`` (see
  ``math_equivalence`` for what it equals);
- a tuple ``(1, 2)``; a set ``\\{1, 2\\}`` or ``{1, 2}`` (``\\emptyset``, ``\\mathbb{R}``,
  ``\\mathbb{Z}``, ``\\mathbb{Q}``); a list of answers ``1, 2`` (read as a set; ``x = 2, x = 3``
  too); an interval ``[a, b]``, ``(a, b]``, ``[a, b)`` (``(a, b)`` is a tuple that also
  equals the open interval); unions, intersections and differences of those (``\\cup``,
  ``\\cap``, ``\\setminus``); ``x \\in [1, 2]``, which is the set;
- an equation or an inequality (``x = 5``, ``y^2 = 4x``, ``x \\le 3``, ``1 < x < 2``), kept as
  a ``Relation`` (``math_equivalence`` reads ``x = 5`` as the assignment of 5 to x).
  ``1 = 1`` is an equation, not the number 1; ``==`` is not in the grammar, nor is a chain
  of equalities.

Nothing else: no other names, no underscores, no strings, no attribute access. Caps bound the
answer's length, the nesting depth, exponents, the size of a power and factorial arguments, so
building a value is always cheap; comparing it runs in a killable worker anyway.
"""

from __future__ import annotations

import sympy

from selfplay.verifiers import math_syntax as syntax
from selfplay.verifiers import math_values as values
from selfplay.verifiers.answers import MAX_ANSWER_CHARS, ParseError, extract_answer
from selfplay.verifiers.math_syntax import (
    Percent,
    Relation,
    Token,
    as_set,
    capped,
    element,
    interval,
    scalar,
)

__all__ = ["Answer", "Parser", "Percent", "Relation", "parse_answer", "parse_span"]

Answer = sympy.Basic | Relation | Percent


def parse_answer(text: str, answer_pattern=None) -> Answer:
    """The value of the answer span in ``text``; ParseError when it is not acceptable."""
    return parse_span(extract_answer(text, answer_pattern))


def parse_span(span: str) -> Answer:
    """The value of an answer span already extracted (``extract_answer``), which is at most
    ``MAX_ANSWER_CHARS`` long as written: a longer one was cut, and a cut one is never read
    (``\\boxed{\\,\\,...1234567}`` cut after 12345 is not 12345)."""
    if len(span) > MAX_ANSWER_CHARS:
        raise ParseError(f"the answer is longer than {MAX_ANSWER_CHARS} characters.")
    tokens = syntax.tokenize(syntax.normalise(span))
    percent = tokens[-1][1] in ("%", "\\%")
    value = Parser(tokens[:-1] if percent else tokens).parse()
    if percent:
        if syntax.assigned(value) is not None:
            value = syntax.assigned(value)[1]  # type: ignore[index]
        if not isinstance(value, sympy.Expr):
            raise ParseError("only a number can be a percentage.")
        value = Percent(value)
    for expression in _expressions(value):
        if expression.has(sympy.zoo, sympy.nan):
            raise ParseError("the answer is undefined (division by zero?).")
    return value


def _expressions(value: Answer) -> list[sympy.Basic]:
    if isinstance(value, Relation):
        return list(value.items)
    if isinstance(value, Percent):
        return [value.value]
    return [value]


class Parser:
    """Recursive descent over whitelisted tokens; builds the sympy value as it goes."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = list(tokens)
        self.index = 0
        self.depth = 0
        self.bars = 0  # open |...| around the current token: a bar there closes one

    def parse(self) -> Answer:
        if not self.tokens:
            raise ParseError("the answer is empty.")
        items = [self.set_expression()]
        while self.peek() == ",":
            self.take()
            items.append(self.set_expression())
        if self.index != len(self.tokens):
            raise ParseError(f"unexpected {self.tokens[self.index][1]!r} after the answer.")
        if len(items) == 1:
            return items[0]
        return sympy.FiniteSet(*(element(item) for item in capped(items)))

    # set_expression := relation (('\cup'|'\cap'|'\setminus') relation)*
    def set_expression(self) -> Answer:
        result = self.relation()
        while self.peek() in syntax.SET_OPS:
            op = self.take()[1]
            right = as_set(self.relation())
            left = as_set(result)
            if op == "\\cup":
                result = sympy.Union(left, right)
            elif op == "\\cap":
                result = sympy.Intersection(left, right)
            else:
                result = sympy.Complement(left, right)
        return result

    # relation := group (relop group)*
    def relation(self) -> Answer:
        items, ops = [self.group()], []
        while self.peek() in syntax.RELATIONS:
            ops.append(syntax.RELATIONS[self.take()[1]])
            items.append(self.group())
        if not ops:
            return items[0]
        return syntax.relation(tuple(ops), items)

    # group := sum (('\over'|'\choose') sum)?      (TeX's {1 \over 2} and {n \choose k})
    def group(self) -> sympy.Basic:
        top = self.sum()
        if self.peek() not in ("\\over", "\\choose"):
            return top
        over = self.take()[1] == "\\over"
        bottom = scalar(self.sum())
        return values.divide(scalar(top), bottom) if over else values.binomial(scalar(top), bottom)

    # sum := term (('+'|'-') term)*
    def sum(self) -> sympy.Basic:
        self.enter()
        result = self.term()
        while self.peek() in ("+", "-"):
            sign = self.take()[1]
            right = scalar(self.term())
            result = sympy.Add(scalar(result), right if sign == "+" else sympy.Mul(-1, right))
        self.depth -= 1
        return result

    # term := unary (('*'|'/'|'\cdot'|'\times'|'\div'|implicit) unary)*
    def term(self) -> sympy.Basic:
        result = self.unary()
        while True:
            token = self.peek()
            if token in syntax.TIMES or token in syntax.DIVIDE:
                self.take()
                right = scalar(self.unary())
                divided = token in syntax.DIVIDE
                result = values.divide(scalar(result), right) if divided else result * right
            elif self.starts_implicit_factor():
                result = sympy.Mul(scalar(result), scalar(self.unary()))
            else:
                return result

    def starts_implicit_factor(self) -> bool:
        if self.index >= len(self.tokens):
            return False
        kind, text = self.tokens[self.index]
        if kind in ("name", "cmd"):
            return text not in syntax.NOT_A_FACTOR
        return text in ("(", "{") or (text == "|" and self.bars == 0)

    # unary := ('+'|'-') unary | power
    def unary(self) -> sympy.Basic:
        if self.peek() in ("+", "-"):
            sign = self.take()[1]
            self.enter()
            operand = scalar(self.unary())
            self.depth -= 1
            return operand if sign == "+" else sympy.Mul(-1, operand)
        return self.power()

    # power := postfix (('^'|'**') unary)?      (right-associative through unary)
    def power(self) -> sympy.Basic:
        base = self.postfix()
        if self.peek() in ("^", "**"):
            self.take()
            self.enter()
            exponent = scalar(self.unary())
            self.depth -= 1
            return values.power(scalar(base), exponent)
        return base

    # postfix := atom ('!' | '!!')?      (5!! is the double factorial 5*3*1, never (5!)!)
    def postfix(self) -> sympy.Basic:
        result = self.atom()
        if self.peek() in ("!", "!!"):
            double = self.take()[1] == "!!"
            result = values.factorial(scalar(result), double)
            if self.peek() in ("!", "!!"):
                raise ParseError("several factorial marks in a row are ambiguous; write (5!)!.")
        return result

    def atom(self) -> sympy.Basic:
        kind, text = self.take()
        if kind == "num":
            return self.number(text)
        if text in ("(", "["):
            return self.bracketed(text)
        if text in ("{", "\\{"):
            return self.braced(text)
        if text == "|":
            self.bars += 1
            inner = scalar(self.group())
            self.expect("|")
            self.bars -= 1
            return sympy.Abs(inner)
        if kind == "name":
            return self.name(text)
        if kind == "cmd":
            return self.command(text)
        raise ParseError(f"unexpected {text!r}.")

    def number(self, text: str) -> sympy.Basic:
        """A literal; a whole number right before ``\\frac{p}{q}`` of whole numbers is mixed."""
        value = values.number_value(text)
        if self.peek() in syntax.FRACTIONS and value.is_Integer:
            mark = self.index
            self.take()
            numerator, denominator = self.fraction_part(), self.fraction_part()
            if numerator.is_Integer and denominator.is_Integer and not values.is_zero(denominator):
                return value + sympy.Rational(numerator, denominator)
            self.index = mark
        return value

    def bracketed(self, opening: str) -> sympy.Basic:
        """``(a)`` groups; ``(a, b, ...)`` is a tuple; ``[a, b]``, ``(a, b]``, ``[a, b)``."""
        items = [self.group()]
        while self.peek() == ",":
            self.take()
            items.append(self.group())
        closing = self.take()[1]
        if closing not in (")", "]"):
            raise ParseError(f"expected ')' or ']' but found {closing!r}.")
        pair = (opening, closing)
        if len(items) == 1:
            if pair not in (("(", ")"), ("[", "]")):
                raise ParseError(f"{opening!r} is closed by {closing!r}.")
            return items[0]
        if len(items) == 2 and pair != ("(", ")"):
            return interval(items[0], items[1], opening == "(", closing == ")")
        if pair != ("(", ")"):
            raise ParseError("an interval has two ends, e.g. [1, 2).")
        return sympy.Tuple(*(element(item) for item in capped(items)))

    def braced(self, opening: str) -> sympy.Basic:
        """``{a}`` groups (LaTeX); ``{a, b}`` and ``\\{a\\}`` are sets."""
        closing = "}" if opening == "{" else "\\}"
        if opening == "\\{" and self.peek() == closing:
            self.take()
            return sympy.EmptySet
        items = [self.set_expression()]
        while self.peek() == ",":
            self.take()
            items.append(self.set_expression())
        self.expect(closing)
        if opening == "{" and len(items) == 1:
            return items[0]
        return sympy.FiniteSet(*(element(item) for item in capped(items)))

    def name(self, text: str) -> sympy.Basic:
        if text in syntax.FUNCTIONS:
            return self.function(text)
        if text in syntax.CONSTANTS:
            return syntax.CONSTANTS[text]
        if text.lower() in syntax.INFINITY_WORDS:
            return sympy.oo
        if text.lower() in syntax.NOT_A_NUMBER_WORDS:
            raise ParseError(f"{text!r} says there is no number; an answer states a value.")
        if len(text) == 1:
            return sympy.Symbol(text)
        if len(text) <= 3 and text.lower() not in syntax.WORDS:
            return sympy.Mul(*(self.name(letter) for letter in text))  # xy is x times y
        raise ParseError(f"unknown name {text!r}; only single-letter symbols are allowed.")

    def function(self, name: str) -> sympy.Basic:
        """``f(x)``; ``f^2 x`` is ``(f x)^2``, as LaTeX writes ``\\sin^2 x``."""
        exponent = None
        if self.peek() == "^" and name != "sqrt":
            self.take()
            exponent = scalar(self.postfix())
            if not (exponent.is_Integer and exponent > 0):
                raise ParseError(f"{name}^{exponent} is not in the grammar; write ({name} x)^2.")
        value = syntax.FUNCTIONS[name](self.argument())
        return value if exponent is None else values.power(value, exponent)

    def command(self, text: str) -> sympy.Basic:
        if text in syntax.FRACTIONS:
            numerator = self.fraction_part()
            return values.divide(numerator, self.fraction_part())
        if text in syntax.BINOMIALS:
            top = self.fraction_part()
            return values.binomial(top, self.fraction_part())
        if text == "\\sqrt" and self.peek() == "[":
            self.take()
            index = scalar(self.sum())
            self.expect("]")
            return values.power(self.argument(), values.divide(sympy.Integer(1), index))
        if text in syntax.LATEX_FUNCTIONS:
            return self.function(text[1:])
        if text in syntax.LATEX_CONSTANTS:
            return syntax.LATEX_CONSTANTS[text]
        if text in syntax.LATEX_EMPTY:
            return sympy.EmptySet
        if text == "\\mathbb":
            self.expect("{")
            letter = self.take()[1]
            self.expect("}")
            if letter not in syntax.NUMBER_SETS:
                known = ", ".join(syntax.NUMBER_SETS)
                raise ParseError(f"\\mathbb{{{letter}}} is not a set the grammar knows ({known}).")
            return syntax.NUMBER_SETS[letter]
        raise ParseError(f"LaTeX command {text!r} is not allowed in an answer.")

    def fraction_part(self) -> sympy.Expr:
        """``{expr}``, or one digit or letter as LaTeX reads ``\\frac12`` or ``\\frac ab``."""
        if self.peek() == "{":
            self.take()
            inner = scalar(self.group())
            self.expect("}")
            return inner
        kind, text = self.take()
        if kind not in ("num", "name") or (kind == "num" and not text.isdigit()):
            raise ParseError(f"\\frac needs {{...}} arguments, found {text!r}.")
        if len(text) > 1:
            self.tokens.insert(self.index, (kind, text[1:]))
        return values.number_value(text[0]) if kind == "num" else self.name(text[0])

    def argument(self) -> sympy.Expr:
        """A function's argument: ``(x)``, ``{x}`` or a single factor (``\\sin x``)."""
        self.enter()
        result = scalar(self.postfix())
        self.depth -= 1
        return result

    def enter(self) -> None:
        self.depth += 1
        if self.depth > syntax.MAX_DEPTH:
            raise values.TooLarge(f"the answer is nested deeper than {syntax.MAX_DEPTH} levels.")

    def peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        if self.index >= len(self.tokens):
            raise ParseError("the answer ends too early.")
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expect(self, text: str) -> None:
        found = self.take()[1]
        if found != text:
            raise ParseError(f"expected {text!r} but found {found!r}.")
