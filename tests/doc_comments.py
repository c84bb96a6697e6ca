"""What the comment beside a print call of a doc block says it prints, and whether it does.

The convention (README.md and docs/*.md; tests/test_readme.py applies it to every block):

    print(energy.numpy())       # [9.375]
    print(height)               # 0.1: the crate rests on the floor
    print(mass, shape)          # 0.25 (10,)
    print(x.grad.numpy())       # [2. 4. 6.] = 2 x
    print(s0.particle_qd)       # ~[[2.5 0.99 0. ]] m/s
    print(inside)               # True

- A comment on the line of a print call (its last line, for a call over several lines)
  states a value when its text starts with one: a number, ``[``, ``(``, ``True``/``False``,
  ``nan``/``inf`` or a repr such as ``tensor(``, optionally after ``about``, ``~`` or ``≈``.
  A comment that starts with words (``# the PTX of ...``, ``# d(loss) / d(ke)``) states
  none and is not checked: put the value first, its formula or meaning after it.
- The value runs to the first ``": "``, ``"; "`` or ``" = "`` (or to the comment's end). Its
  numbers and booleans, in order, must be the printed ones: as many, and each number equal
  to the digits written, that is within half a unit of its last written digit (``0.1``:
  0.05 to 0.15; ``0.100``: 0.0995 to 0.1005; ``16.``: 15.5 to 16.5; ``5e-6``: 4.5e-6 to
  5.5e-6). After ``about``, ``~`` or ``≈`` each number may be off by 5% of it (or by half a
  unit of its last digit, if that is more). Other words in the value (units) are ignored.
- A print that runs several times (in a loop) is checked on its last output.

Example::

    expected = commented_values(block.code)         # {print call's line range: Expectation}
    problem = expected[(5, 5)].mismatch("0.202")    # "prints 0.202, but its comment says 0.1 ..."
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass

ABOUT = 0.05  # the relative tolerance of a value marked about, ~ or ≈
_QUALIFIER = re.compile(r"^(about|~|≈)\s*", re.I)
_STARTS_A_VALUE = re.compile(r"^([-+]?(\d|\.\d)|\[|\(|True\b|False\b|nan\b|inf\b|tensor\(|array\()")
_END = re.compile(r": |; | = ")
_NUMBER = re.compile(r"(?<![\w.^])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])"
                     r"|(?<![\w.])[-+]?(?:nan|inf)(?!\w)|\bTrue\b|\bFalse\b")


def values_in(text: str) -> list:
    """The numbers (as their written text) and booleans of ``text``, in order; digits inside
    names (``float64``) are not numbers."""
    return _NUMBER.findall(text)


def half_unit(written: str) -> float:
    """Half a unit of the last digit of the number ``written`` (``0.25`` -> 0.005)."""
    mantissa, _, exponent = written.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


@dataclass(frozen=True)
class Expectation:
    """The value a comment states: its text, its numbers/booleans and whether it is approximate."""
    comment: str
    values: tuple
    about: bool

    def mismatch(self, printed: str) -> str | None:
        """None when ``printed`` agrees with the comment, else what differs."""
        got = values_in(printed)
        said = f"its comment says {self.comment!r}"
        if len(got) != len(self.values):
            return f"prints {printed!r} ({len(got)} values), but {said} ({len(self.values)} values)"
        for g, w in zip(got, self.values):
            if w in ("True", "False") or g in ("True", "False"):
                if g != w:
                    return f"prints {printed!r}, but {said}: {g} is not {w}"
                continue
            want, value = float(w), float(g)
            if math.isnan(want) or math.isnan(value):
                if not (math.isnan(want) and math.isnan(value)):
                    return f"prints {printed!r}, but {said}: {g} is not {w}"
                continue
            tol = half_unit(w) if not math.isinf(want) else 0.0
            if self.about:
                tol = max(tol, ABOUT * abs(want))
            if not (value == want or abs(value - want) <= tol * (1.0 + 1e-9)):
                kind = f"about {w} (within {ABOUT:.0%})" if self.about else f"{w} (to the digits written)"
                return f"prints {printed!r}, but {said}: {g} is not {kind}"
        return None


def parse_comment(comment: str) -> Expectation | None:
    """The value the text of a comment (without its ``#``) states, or None if it states none."""
    text = comment.strip()
    about = bool(_QUALIFIER.match(text))
    text = _QUALIFIER.sub("", text, count=1)
    if not _STARTS_A_VALUE.match(text):
        return None
    value = _END.split(text, maxsplit=1)[0].strip()
    found = values_in(value)
    if not found:
        return None
    return Expectation(value, tuple(found), about)


def commented_values(code: str) -> dict:
    """``{(first line, last line) of a print call: Expectation}`` for the print calls of
    ``code`` with a value comment on their last line (lines 1-based, as the script's)."""
    calls = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            span = (node.lineno, node.end_lineno)
            # the last print call ending on a line owns that line's comment
            if node.end_lineno not in calls or calls[node.end_lineno][0] < node.lineno:
                calls[node.end_lineno] = span
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT and tok.start[0] in calls:
            expectation = parse_comment(tok.string[1:])
            if expectation is not None:
                found[calls[tok.start[0]]] = expectation
    return found
