"""A hand-built world for fast grader and invariant tests: a few records, states and episodes made directly.

The world: customer ``cus_1`` (verified, UTC) with policy ``pol_1`` (USD, 2026-01-01 to
2026-12-31, 1200.00 a year) paid by plan ``pln_1`` (anchor day 15, twelve instalments of
100.00, the first three paid), and fee ``fee_1`` (15.00, open); customer ``cus_2``
(unverified) with ``pol_2``, ``pln_2`` and ``fee_2`` alike. The policy store is the
small snapshot's (waiver authority 25.00, refund escalation 500.00, min instalment
5.00, splits 2 to 12, one waiver a year, one due-day change and one deferral a term,
deferral up to 30 days overdue).

An episode is a sequence of ``(event, state after it)``; :func:`episode` seals it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld._episode.episode import Episode
from simworld._world.events import Event
from simworld._world.models import Credit, Customer, Fee, Instalment, Payment, Plan, Policy, PremiumChange
from simworld._world.money import Money
from simworld._world.policy import PolicyStore
from simworld._world.state import Base, State

SNAPSHOT = Path(__file__).resolve().parent.parent / "snapshots" / "small.json"
AT = "2026-04-20T14:00:00Z"


def usd(amount: str) -> Money:
    """USD money from its decimal text."""
    return Money.parse(amount, "USD")


@functools.cache
def store() -> PolicyStore:
    """The small snapshot's policy store."""
    return PolicyStore.from_json(orjson.loads(SNAPSHOT.read_bytes())["policy_store"])


def instalments(plan_id: str, amounts: Sequence[str], *, paid: int = 0, anchor: int = 15,
                start: tuple[int, int] = (2026, 1), currency: str = "USD") -> tuple[Instalment, ...]:
    """Monthly instalments from ``start`` on the anchor day; the first ``paid`` of them paid."""
    out = []
    year, month = start
    for i, amount in enumerate(amounts):
        m = Money.parse(amount, currency)
        due = date(year + (month - 1 + i) // 12, (month - 1 + i) % 12 + 1, anchor)
        status = "paid" if i < paid else "planned"
        out.append(Instalment(f"{plan_id}-{i + 1}", i + 1, due, m, m if i < paid else Money.zero(currency),
                              status, due))
    return tuple(out)


def plan(pid: str = "pln_1", policy_id: str = "pol_1", amounts: Sequence[str] = ("100.00",) * 12, paid: int = 3,
         **changes: Any) -> Plan:
    """A monthly plan on the 15th (``changes`` evolve it)."""
    p = Plan(pid, policy_id, "USD", 15, "monthly", "either", instalments(pid, amounts, paid=paid))
    return attrs.evolve(p, **changes)


def policy(pid: str = "pol_1", customer_id: str = "cus_1", **changes: Any) -> Policy:
    """A USD policy for 2026 at 1200.00 a year (``changes`` evolve it)."""
    p = Policy(pid, customer_id, "home", "USD", date(2026, 1, 1), date(2026, 12, 31), usd("1200.00"))
    return attrs.evolve(p, **changes)


def world(*extra: Any) -> State:
    """The two customers' records, plus ``extra`` records (replacing any with the same id)."""
    records: list[Any] = [
        Customer("cus_1", "Ann One", "ann@example.com", True, "UTC"),
        Customer("cus_2", "Bob Two", "bob@example.com", False, "UTC"),
        policy(), policy("pol_2", "cus_2"), plan(), plan("pln_2", "pol_2"),
        Fee("fee_1", "pln_1", "USD", "late", usd("15.00"), "open", date(2026, 4, 2)),
        Fee("fee_2", "pln_2", "USD", "late", usd("15.00"), "open", date(2026, 4, 2)),
    ]
    tables: dict[str, dict[str, Any]] = {}
    for r in (*records, *extra):
        tables.setdefault(type(r).table, {})[r.id] = r
    return State.of(Base.build(tables))


def put(state: State, *records: Any) -> State:
    """``state`` with ``records`` written."""
    for r in records:
        state = state.put(r)
    return state


def event(seq: int, tool: str, args: Any = None, *, status: str = "ok", kind: str = "write", result: Any = None,
          at: str = AT) -> Event:
    """One recorded call."""
    return Event(seq, at, tool, {} if args is None else args, {} if result is None else result, status, 0.1, kind)


def episode(initial: State, steps: Iterable[tuple[Event, State]] = (), *, outcome: str | None = "act",
            stop_reason: str = "terminal", counters: Mapping[str, Any] | None = None,
            variables: Mapping[str, Any] | None = None, target: str = "cus_1", request: str = "",
            policy_text: str = "") -> Episode:
    """A sealed episode from ``initial`` through ``steps`` (each an event and the state after it)."""
    steps = list(steps)
    states = tuple(s for _, s in steps)
    final = states[-1] if states else initial
    return Episode("kit", 0, "test", request, policy_text, dict(variables or {}), initial, final,
                   states, tuple(e for e, _ in steps), outcome, stop_reason, dict(counters or {}), policy=store(),
                   target={"customer": target, "policy": "pol_1", "plan": "pln_1"})


def with_instalment(p: Plan, seq: int, **changes: Any) -> Plan:
    """``p`` with instalment ``seq`` evolved by ``changes``."""
    return attrs.evolve(p, instalments=tuple(attrs.evolve(i, **changes) if i.seq == seq else i
                                             for i in p.instalments))


def instant(day: date, hour: int = 14) -> str:
    """An ISO instant on ``day`` (UTC)."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["AT", "Credit", "Fee", "Payment", "PremiumChange", "episode", "event", "instalments", "instant", "plan",
           "policy", "put", "store", "usd", "with_instalment", "world"]
