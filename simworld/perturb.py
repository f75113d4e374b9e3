"""Seeded perturbation: the same scenario with other amounts, dates and currencies.

A scenario's ``perturb`` block says what the seed may vary about its target
policy and plan, inside the space where the scenario's correct outcome still
holds (the scenario's author chooses that space)::

    "perturb": {"currencies": ["USD", "JPY", "KWD"], "premium_jitter": "0.15",
                "anchor_days": [1, 28, 29, 30, 31], "year_shifts": [-2, 0, 2]}

Only the target's records change, written as an overlay over the shared
snapshot. The perturbation then yields the template variables (``{currency}``,
``{unpaid_balance}``, …) that the prompt and the solutions are rendered with,
and the scenario's ``params``, drawn from the same generator.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import attrs

from simworld.dates import days_in_month, due_date, roll, shift_years
from simworld.errors import ScenarioError
from simworld.models import LOCKED, UNPAID, Plan, Policy
from simworld.money import Money, allocate
from simworld.policy import PolicyStore
from simworld.state import State

__all__ = ["PERTURB_KEYS", "PARAM_KINDS", "Perturbed", "perturb", "world_vars"]

PERTURB_KEYS = ("currencies", "premium_jitter", "anchor_days", "year_shifts")
PARAM_KINDS = ("choice", "int", "money", "sum")


@attrs.frozen(eq=False)
class Perturbed:
    """The perturbed initial state, clock, and the variables templates are rendered with."""

    state: State
    clock: datetime
    vars: dict[str, Any]


def _shift_clock(clock: datetime, years: int) -> datetime:
    year = clock.year + years
    return clock.replace(year=year, day=min(clock.day, days_in_month(year, clock.month)))


def perturb(state: State, clock: datetime, policy_store: PolicyStore, target: dict[str, str],
            spec: dict[str, Any], params: dict[str, Any], rng: random.Random) -> Perturbed:
    """Apply ``spec`` to the target's records with ``rng``; draw ``params``; return the result."""
    policy: Policy = state.get("policies", target["policy"])
    plan: Plan = state.get("plans", target["plan"])
    fees = state.children("fees", "plan_id", plan.id)
    payments = state.children("payments", "plan_id", plan.id)

    years = rng.choice(spec["year_shifts"]) if spec.get("year_shifts") else 0
    anchor = rng.choice(spec["anchor_days"]) if spec.get("anchor_days") else plan.anchor_day
    currency = rng.choice(spec["currencies"]) if spec.get("currencies") else plan.currency
    jitter = Decimal(spec.get("premium_jitter", "0"))

    premium = policy_store.convert(policy.annual_premium, currency) if currency != plan.currency else (
        policy.annual_premium)
    if jitter:
        factor = Decimal(1) + jitter * Decimal(rng.randint(-1000, 1000)) / Decimal(1000)
        scaled = int(Decimal(premium.minor) * factor)
        # Awkward minor units: make the total indivisible by the instalment count where possible.
        scaled += rng.randint(0, max(1, len(plan.instalments) - 1))
        premium = Money(max(scaled, len(plan.instalments)), currency)

    if jitter or currency != plan.currency:
        amounts = allocate(premium, len(plan.instalments), "first" if plan.remainder == "first" else "last")
    else:
        amounts = [i.amount for i in plan.instalments]
    instalments = []
    for inst, amount in zip(plan.instalments, amounts, strict=True):
        due = due_date(inst.due_date.year + years, inst.due_date.month, anchor)
        if inst.status == "paid":
            paid_amount = amount
        elif inst.status == "partially_paid":
            paid_amount = Money(amount.minor // 2, currency)
        else:
            paid_amount = Money.zero(currency)
        instalments.append(attrs.evolve(inst, due_date=due, draft_date=roll(due, "following"), amount=amount,
                                        paid_amount=paid_amount))
    paid_by_seq = {i.seq: i.paid_amount for i in instalments}
    new_plan = attrs.evolve(plan, currency=currency, anchor_day=anchor, instalments=tuple(instalments))
    term_start = shift_years(policy.term_start, years)
    if policy.term_end + timedelta(days=1) == shift_years(policy.term_start, 1):
        # An annual term ends the day before its anniversary, leap day or not.
        term_end = shift_years(term_start, 1) - timedelta(days=1)
    else:
        term_end = shift_years(policy.term_end, years)
    new_policy = attrs.evolve(policy, currency=currency, annual_premium=premium, term_start=term_start,
                              term_end=term_end)
    state = state.put(new_policy).put(new_plan)
    for fee in fees:
        amount = policy_store.convert(fee.amount, currency) if currency != fee.currency else fee.amount
        waived = shift_years(fee.waived_on, years) if fee.waived_on is not None else None
        state = state.put(attrs.evolve(fee, currency=currency, amount=amount, waived_on=waived,
                                       charged_on=shift_years(fee.charged_on, years)))
    for pay in payments:
        allocs = tuple((seq, paid_by_seq.get(seq, Money.zero(currency))) for seq, _ in pay.allocations)
        total = sum((a for _, a in allocs), Money.zero(currency))
        state = state.put(attrs.evolve(pay, currency=currency, amount=total, allocations=allocs,
                                       received_on=shift_years(pay.received_on, years)))
    clock = _shift_clock(clock, years)
    values = world_vars(state, target, clock)
    values.update(draw_params(params, values, policy_store, currency, rng))
    return Perturbed(state, clock, values)


def world_vars(state: State, target: dict[str, str], clock: datetime) -> dict[str, Any]:
    """The template variables read off the target's records."""
    customer = state.get("customers", target["customer"])
    policy = state.get("policies", target["policy"])
    plan = state.get("plans", target["plan"])
    owed = [i for i in plan.instalments if i.status in UNPAID]
    locked = [i for i in plan.instalments if i.status in LOCKED]
    balance = sum((i.amount for i in owed), Money.zero(plan.currency))
    values: dict[str, Any] = {
        "customer_id": customer.id,
        "customer_name": customer.name,
        "first_name": customer.name.split()[0],
        "email": customer.email,
        "policy_id": policy.id,
        "plan_id": plan.id,
        "currency": plan.currency,
        "annual_premium": str(policy.annual_premium),
        "term_start": policy.term_start.isoformat(),
        "term_end": policy.term_end.isoformat(),
        "anchor_day": plan.anchor_day,
        "unpaid_balance": str(balance),
        "unpaid_count": len(owed),
        "next_due_date": owed[0].due_date.isoformat() if owed else "",
        "next_seq": owed[0].seq if owed else 0,
        "next_amount": str(owed[0].amount) if owed else "",
        "today": clock.date().isoformat(),
    }
    if locked:
        values["paid_seq"] = locked[-1].seq
        values["paid_due_date"] = locked[-1].due_date.isoformat()
        values["paid_amount"] = str(locked[-1].amount)
    fee_id = target.get("fee")
    if fee_id:
        fee = state.get("fees", fee_id)
        values["fee_id"] = fee.id
        values["fee_amount"] = str(fee.amount)
    return values


def draw_params(params: dict[str, Any], values: dict[str, Any], store: PolicyStore, currency: str,
                rng: random.Random) -> dict[str, Any]:
    """Draw the scenario's ``params`` in declaration order; later ones may use earlier ones."""
    out: dict[str, Any] = {}
    for name, spec in params.items():
        (kind, arg), = spec.items()
        if kind == "choice":
            out[name] = rng.choice(arg)
        elif kind == "int":
            out[name] = rng.randint(arg[0], arg[1])
        elif kind == "money":
            lo = store.convert(Money.parse(arg[0], store.reference_currency), currency)
            hi = store.convert(Money.parse(arg[1], store.reference_currency), currency)
            out[name] = str(Money(rng.randint(lo.minor, hi.minor), currency))
        elif kind == "sum":
            scope = {**values, **out}
            try:
                parts = [Money.parse(scope[v], currency) for v in arg]
            except KeyError as exc:
                raise ScenarioError(f"param {name!r}: unknown variable {exc.args[0]!r} in 'sum'.") from None
            out[name] = str(sum(parts, Money.zero(currency)))
    return out
