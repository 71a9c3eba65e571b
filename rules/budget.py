"""What one evaluation may cost, counted after expansion: a budget of work units spent where
the work grows with what a line expands to — a path judged against each file rule, each
path a word resolves to in each possible working directory, each word a brace list makes,
each simple command walked — so that no input, however it multiplies (brace lists times
``cd`` steps times rules), costs more than the budget. Past it, :class:`TooComplex` ends
the evaluation, which the engine answers with *ask* ("too complex to judge"), a deny scan
of the line's program words still letting a deny win (docs/rules.md, "Bounded cost").

The budget lives in a context variable for the one evaluation under way: the engine's
modules spend from it without passing it through every call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# Work units one evaluation may spend: a unit is 2 to 5 µs here, everyday lines spend at
# most a few dozen (docs/performance.md, "Rule engine").
UNITS = 400


class TooComplex(Exception):
    """The evaluation spent its budget."""


@dataclass
class Budget:
    units: int
    spent: int = 0


_CURRENT: ContextVar[Budget | None] = ContextVar("rules_budget", default=None)
_UNITS: ContextVar[int] = ContextVar("rules_budget_units", default=UNITS)
_LAST: ContextVar[int] = ContextVar("rules_budget_last", default=0)


def spend(units: int = 1) -> None:
    """Spend ``units`` of the current evaluation's budget; TooComplex past it. Outside an
    evaluation (a module used on its own) nothing is counted."""
    budget = _CURRENT.get()
    if budget is None:
        return
    budget.spent += units
    if budget.spent > budget.units:
        raise TooComplex(f"more than {budget.units} units of work")


@contextmanager
def bounded() -> Iterator[Budget]:
    """The budget of one evaluation, for the code in the ``with`` block."""
    budget = Budget(_UNITS.get())
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)
        _LAST.set(budget.spent)


@contextmanager
def allowing(units: int) -> Iterator[None]:
    """Evaluations in the block get ``units`` instead of the engine's budget: for the
    benchmark and the tests that measure how much a line would cost."""
    token = _UNITS.set(units)
    try:
        yield
    finally:
        _UNITS.reset(token)


def last_spent() -> int:
    """The work units the last evaluation in this context spent (past its budget: one more
    than the budget)."""
    return _LAST.get()
