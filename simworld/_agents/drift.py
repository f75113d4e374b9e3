"""Drifting agents: competent in every call but one piece of arithmetic, to prove the probe works.

Each plays the scenario's reference solution (the right tools, in the right order) and
changes only what it writes with ``set_schedule``, the way a real billing bug would:

============  =========================================================================
``round-each``  rounds each share of the total half-up; the last absorbs nothing
``float``       reads the total through a float into minor units (``int(1085.61 * 100)``
                is 108560), then allocates the wrong total exactly
``scale-each``  on a premium change, scales each unpaid instalment by new/old and rounds
                each (it reads the plan first to know the old amounts)
``add-month``   keeps the amounts but dates each instalment a month after the previous
                one's date, so month ends drift (May 31, Jun 30, Jul 30, ...)
``resplit``     splits the balance into N+1 rounded shares, reads the plan back, then
                re-splits that rounded total into N rounded shares
``act365``      on a premium change, pro-rates the delta over 365 days (act/365 fixed)
                instead of the days of the actual term, so a leap term is off by a share
============  =========================================================================

Only the probe's invariants and the state checks can tell them from the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any

from simworld._episode.episode import Observation
from simworld._episode.steps import StepsAgent
from simworld._scenario.scenario import Step
from simworld._world.dates import days_in_month
from simworld._world.money import Money, allocate, exponent
from simworld._world.vocab import DRIFTS

__all__ = ["DRIFTS", "DriftAgent"]



def _quantum(exp: int) -> Decimal:
    return Decimal(1).scaleb(-exp)


def _round_each(total: Decimal, n: int, exp: int) -> list[str]:
    share = (total / n).quantize(_quantum(exp), rounding=ROUND_HALF_UP)
    return [str(share)] * n


def _float_total(total: Decimal, n: int, currency: str) -> list[str]:
    exp = exponent(currency)
    minor = int(float(total) * 10**exp)  # the bug: truncating a binary float
    return [str(m) for m in allocate(Money(minor, currency), n, "last")]


def _act365(amounts: list[Decimal], quote: dict[str, Any] | None, exp: int) -> list[str]:
    """The schedule with the quoted delta re-computed over a 365-day year, the difference on the last."""
    if quote is None:  # no premium change in sight: nothing to pro-rate
        return [str(a) for a in amounts]
    diff = Decimal(quote["new_annual_premium"]) - Decimal(quote["old_annual_premium"])
    act365 = (diff * quote["days_remaining"] / 365).quantize(_quantum(exp), rounding=ROUND_HALF_EVEN)
    return [str(a) for a in amounts[:-1]] + [str(amounts[-1] + act365 - Decimal(quote["delta"]))]


def _add_month(day: date) -> date:
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return date(year, month, min(day.day, days_in_month(year, month)))


class DriftAgent:
    """The reference solution with one drifting computation in each ``set_schedule`` it sends."""

    reads_results_only = True  # it never changes what it is shown (see simworld._episode.play.Agent)

    def __init__(self, steps: Sequence[Step], variables: dict[str, Any], where: str, kind: str) -> None:
        if kind not in DRIFTS:
            raise ValueError(f"Unknown drift {kind!r}; known: {', '.join(DRIFTS)}.")
        self.inner = StepsAgent(steps, variables, where)
        self.kind = kind
        self.currency = variables["currency"]
        self.plan_id = variables["plan_id"]
        self.queue: list[dict[str, Any]] = []
        self.held: Observation | None = None  # the observation the inner agent has not seen yet
        self.stage = 0
        self.pending: dict[str, Any] | None = None
        self.quote: dict[str, Any] | None = None  # the last premium-change quote the reference read

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """The reference's next call, with its schedule drifted."""
        if observation.resumed:
            self.queue, self.held, self.pending, self.stage = [], None, None, 0
            return self._next(observation)
        if observation.last_tool == "quote_premium_change" and observation.last_status == "ok":
            self.quote = observation.last_result
        if self.pending is not None:
            return self._continue(observation)
        return self._next(observation)

    def _next(self, observation: Observation) -> dict[str, Any] | None:
        action = self.inner.act(observation)
        if action is None or action["tool"] != "set_schedule" or not action["args"].get("instalments"):
            return action
        if self.kind in ("scale-each", "resplit"):
            self.pending = action
            self.stage = 0
            return self._continue(observation)
        return self._drift(action)

    def _drift(self, action: dict[str, Any]) -> dict[str, Any]:
        items = [dict(x) for x in action["args"]["instalments"]]
        amounts = [Decimal(str(x["amount"])) for x in items]
        total, n, exp = sum(amounts, Decimal(0)), len(items), exponent(self.currency)
        if self.kind == "round-each":
            new = _round_each(total, n, exp)
        elif self.kind == "float":
            new = _float_total(total, n, self.currency)
        elif self.kind == "act365":
            new = _act365(amounts, self.quote, exp)
        else:  # add-month
            new = [str(a) for a in amounts]
            day = date.fromisoformat(items[0]["due_date"])
            for item in items:
                item["due_date"] = day.isoformat()
                day = _add_month(day)
        for item, amount in zip(items, new, strict=True):
            item["amount"] = amount
        return {"tool": "set_schedule", "args": {**action["args"], "instalments": items}}

    def _continue(self, observation: Observation) -> dict[str, Any] | None:
        """Multi-call drifts: read the plan, then write (scale-each), or write, read, write (resplit)."""
        assert self.pending is not None
        action = self.pending
        items = [dict(x) for x in action["args"]["instalments"]]
        exp = exponent(self.currency)
        self.stage += 1
        if self.kind == "scale-each":
            if self.stage == 1:
                return {"tool": "get_plan", "args": {"plan_id": self.plan_id}}
            owed = [i for i in observation.last_result["instalments"] if i["status"] in ("planned", "due", "overdue")]
            old_total = sum((Decimal(i["amount"]) for i in owed), Decimal(0))
            new_total = sum((Decimal(str(x["amount"])) for x in items), Decimal(0))
            for item, old in zip(items, owed, strict=False):
                scaled = Decimal(old["amount"]) * new_total / old_total
                item["amount"] = str(scaled.quantize(_quantum(exp), rounding=ROUND_HALF_UP))
            self.pending = None
            return {"tool": "set_schedule", "args": {**action["args"], "instalments": items}}
        # resplit
        total = sum((Decimal(str(x["amount"])) for x in items), Decimal(0))
        if self.stage == 1:
            first = list(items) + [dict(items[-1], due_date=_add_month(
                date.fromisoformat(items[-1]["due_date"])).isoformat())]
            for item, amount in zip(first, _round_each(total, len(first), exp), strict=True):
                item["amount"] = amount
            return {"tool": "set_schedule", "args": {**action["args"], "instalments": first}}
        if self.stage == 2:
            return {"tool": "get_plan", "args": {"plan_id": self.plan_id}}
        owed = [i for i in observation.last_result["instalments"] if i["status"] in ("planned", "due", "overdue")]
        rounded = sum((Decimal(i["amount"]) for i in owed), Decimal(0))
        for item, amount in zip(items, _round_each(rounded, len(items), exp), strict=True):
            item["amount"] = amount
        self.pending = None
        return {"tool": "set_schedule", "args": {**action["args"], "instalments": items}}

