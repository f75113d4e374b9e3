"""READ tools: look-ups and quotes. No side effect; quotes compute the correct answer."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Literal

import attrs

from simworld.dates import parse_date, schedule_dates
from simworld.errors import DateError, ToolArgumentError
from simworld.models import UNPAID, Plan, Policy, to_json
from simworld.money import Money, allocate
from simworld.tools._registry import Amount, IsoDate, Kind, tool
from simworld.world import World

__all__ = ["READ_TOOLS"]


def date_arg(value: str, name: str) -> Any:
    """Parse an agent's date argument as a ToolArgumentError if malformed."""
    try:
        return parse_date(value, name=name)
    except DateError as exc:
        raise ToolArgumentError(str(exc)) from None


def unpaid(plan: Plan) -> list[Any]:
    """The plan's instalments still owed and reschedulable, in seq order."""
    return [i for i in plan.instalments if i.status in UNPAID]


def unpaid_balance(plan: Plan) -> Money:
    """The sum of the plan's unpaid instalments."""
    return sum((i.amount for i in unpaid(plan)), Money.zero(plan.currency))


def plan_view(plan: Plan) -> dict[str, Any]:
    """A plan as the agent sees it, with its unpaid balance."""
    view = to_json(plan)
    view["unpaid_balance"] = str(unpaid_balance(plan))
    return view


def received(world: World, policy: Policy) -> Money:
    """Money received on the policy: paid on its instalments plus unapplied credit on its plans."""
    total = Money.zero(policy.currency)
    for plan in world.state.children("plans", "policy_id", policy.id):
        total = sum((i.paid_amount for i in plan.instalments), total)
        total = sum((c.amount for c in world.state.children("credits", "plan_id", plan.id)), total)
    return total


def round_once(value: Decimal, currency_exponent: int) -> int:
    """Round an exact Decimal amount to whole minor units, half to even, once."""
    return int(value.scaleb(currency_exponent).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def pro_rata_delta(policy: Policy, new_premium: Money, effective: Any) -> tuple[Money, int]:
    """The premium change for the rest of the term, act/365 fixed, rounded once.

    The term end is the last day covered, so the days run from the effective date
    through the term end inclusive (a change effective on the term start covers the
    whole term, as a cancellation on the term start earns nothing).
    """
    days = (policy.term_end - effective).days + 1
    exact = (new_premium.to_decimal() - policy.annual_premium.to_decimal()) * Decimal(days) / Decimal(365)
    return Money(round_once(exact, new_premium.exponent), policy.currency), days


@tool(Kind.READ, latency=0.3)
def find_customer(world: World, query: str) -> dict[str, Any]:
    """Find customers by id, e-mail address, or part of their name.

    Args:
        query: A customer id, an e-mail address, or part of a name (case does not matter).
    """
    q = query.strip().lower()
    if not q:
        raise ToolArgumentError("find_customer: query is empty; pass an id, an e-mail or part of a name.")
    found = [
        {"id": c.id, "name": c.name, "email": c.email}
        for c in world.state.records("customers")
        if q == c.id.lower() or q == c.email.lower() or q in c.name.lower()
    ]
    return {"customers": found[:20]}


@tool(Kind.READ, latency=0.2)
def get_customer(world: World, customer_id: str) -> dict[str, Any]:
    """Get a customer: contact details, verification, time zone, notes, and their policy ids.

    Args:
        customer_id: The customer's id, e.g. 'cus_001'.
    """
    customer = world.customer(customer_id)
    view = to_json(customer)
    view["policy_ids"] = [p.id for p in world.state.children("policies", "customer_id", customer.id)]
    return view


@tool(Kind.READ, latency=0.2)
def get_policy(world: World, policy_id: str) -> dict[str, Any]:
    """Get a policy: product, currency, term, annual premium, status, and its plan ids.

    Args:
        policy_id: The policy's id, e.g. 'pol_001'.
    """
    policy = world.policy_record(policy_id)
    view = to_json(policy)
    view["plan_ids"] = [p.id for p in world.state.children("plans", "policy_id", policy.id)]
    return view


@tool(Kind.READ, latency=0.2)
def get_plan(world: World, plan_id: str) -> dict[str, Any]:
    """Get an instalment plan with every instalment (seq, due date, amount, paid amount, status, draft date).

    Args:
        plan_id: The plan's id, e.g. 'pln_001'.
    """
    return plan_view(world.plan(plan_id))


@tool(Kind.READ, latency=0.2)
def list_fees(world: World, plan_id: str) -> dict[str, Any]:
    """List the fees charged on a plan, open, paid and waived.

    Args:
        plan_id: The plan's id.
    """
    plan = world.plan(plan_id)
    return {"fees": [to_json(f) for f in world.state.children("fees", "plan_id", plan.id)]}


@tool(Kind.READ, latency=0.2)
def list_payments(world: World, plan_id: str) -> dict[str, Any]:
    """List the payments received on a plan and any unapplied credit.

    Args:
        plan_id: The plan's id.
    """
    plan = world.plan(plan_id)
    return {
        "payments": [to_json(p) for p in world.state.children("payments", "plan_id", plan.id)],
        "credits": [to_json(c) for c in world.state.children("credits", "plan_id", plan.id)],
    }


@tool(Kind.READ, latency=0.4)
def quote_split(world: World, plan_id: str, count: int, remainder: Literal["first", "last"] = "last") -> dict[str, Any]:
    """Quote a correct schedule that splits the plan's unpaid balance into `count` monthly instalments.

    The first new due date falls in the month of the first unpaid instalment; every date
    is derived from the plan's anchor day. Amounts are allocated once from the exact
    balance. The quote changes nothing and does not judge the policy: check the rules.

    Args:
        plan_id: The plan's id.
        count: How many instalments, e.g. 3.
        remainder: Which instalment takes the leftover minor unit: 'first' or 'last'.
    """
    plan = world.plan(plan_id)
    if not 1 <= count <= 60:
        raise ToolArgumentError(f"quote_split: count must be between 1 and 60 but got count={count!r}.")
    owed = unpaid(plan)
    if not owed:
        raise ToolArgumentError(f"quote_split: plan {plan.id!r} has no unpaid instalments to split.")
    balance = unpaid_balance(plan)
    dates = schedule_dates(owed[0].due_date, plan.anchor_day, count)
    amounts = allocate(balance, count, remainder)
    return {
        "plan_id": plan.id,
        "currency": plan.currency,
        "total": str(balance),
        "instalments": [{"due_date": d.isoformat(), "amount": str(a)} for d, a in zip(dates, amounts, strict=True)],
    }


@tool(Kind.READ, latency=0.4)
def quote_premium_change(world: World, policy_id: str, new_annual_premium: Amount, effective_date: IsoDate,
                         remainder: Literal["first", "last"] = "last") -> dict[str, Any]:
    """Quote a mid-term premium change: the pro-rata delta and a correct new schedule for the unpaid instalments.

    The delta is (new - old) x days from the effective date through the term end / 365, rounded
    once, then allocated over the unpaid instalments, each keeping its due date. If the
    unpaid balance would go negative, the quote empties the schedule and returns a credit.

    Args:
        policy_id: The policy's id.
        new_annual_premium: The new annual premium, e.g. '1320.00'.
        effective_date: The date the new premium takes effect, YYYY-MM-DD, within the term.
        remainder: Which unpaid instalment takes the delta's leftover minor unit: 'first' or 'last'.
    """
    policy = world.policy_record(policy_id)
    new = world.money(new_annual_premium, policy.currency, "new_annual_premium")
    effective = date_arg(effective_date, "effective_date")
    if not policy.term_start <= effective <= policy.term_end:
        raise ToolArgumentError(f"quote_premium_change: effective_date={effective_date!r} is outside the term "
                                f"{policy.term_start.isoformat()}..{policy.term_end.isoformat()}.")
    plans = world.state.children("plans", "policy_id", policy.id)
    if not plans:
        raise ToolArgumentError(f"quote_premium_change: policy {policy.id!r} has no plan.")
    plan = plans[0]
    earlier = world.state.get("premium_changes", f"pc-{policy.id}-{effective.isoformat()}")
    if earlier is None:
        delta, days = pro_rata_delta(policy, new, effective)
    else:
        # A second change from the same date corrects the first: the total change from the original premium
        # is rounded once, less what the first change already added.
        as_was = attrs.evolve(policy, annual_premium=earlier.old_premium)
        delta, days = pro_rata_delta(as_was, new, effective)
        delta = delta - pro_rata_delta(as_was, earlier.new_premium, effective)[0]
    owed = unpaid(plan)
    balance = unpaid_balance(plan)
    new_balance = balance + delta
    credit = Money.zero(plan.currency)
    if new_balance.minor < 0:
        schedule: list[dict[str, str]] = []
        credit = -new_balance
    else:
        shares = allocate(delta, len(owed), remainder) if owed else []
        amounts = [i.amount + s for i, s in zip(owed, shares, strict=True)]
        if any(a.minor < 0 for a in amounts):
            amounts = allocate(new_balance, len(owed), remainder)
        schedule = [{"due_date": i.due_date.isoformat(), "amount": str(a)} for i, a in zip(owed, amounts, strict=True)]
    return {
        "policy_id": policy.id,
        "plan_id": plan.id,
        "currency": policy.currency,
        "old_annual_premium": str(policy.annual_premium),
        "new_annual_premium": str(new),
        "days_remaining": days,
        "delta": str(delta),
        "unpaid_balance": str(balance),
        "new_unpaid_balance": str(max(new_balance, Money.zero(plan.currency))),
        "credit": str(credit),
        "instalments": schedule,
    }


@tool(Kind.READ, latency=0.4)
def quote_cancellation(world: World, policy_id: str, cancel_date: IsoDate) -> dict[str, Any]:
    """Quote a cancellation: premium earned to the cancel date (act/365 fixed, rounded once) and the refund due.

    Earned plus unearned is the premium exactly; the refund is what was received (paid on
    instalments plus unapplied credit) beyond the earned premium, never negative and never
    more than was received.

    Args:
        policy_id: The policy's id.
        cancel_date: The cancellation date, YYYY-MM-DD, within the term.
    """
    policy = world.policy_record(policy_id)
    when = date_arg(cancel_date, "cancel_date")
    if not policy.term_start <= when <= policy.term_end:
        raise ToolArgumentError(f"quote_cancellation: cancel_date={cancel_date!r} is outside the term "
                                f"{policy.term_start.isoformat()}..{policy.term_end.isoformat()}.")
    premium = policy.annual_premium
    days = (when - policy.term_start).days
    earned_minor = round_once(premium.to_decimal() * Decimal(days) / Decimal(365), premium.exponent)
    earned = Money(min(max(earned_minor, 0), premium.minor), premium.currency)
    paid = received(world, policy)
    refund = max(paid - earned, Money.zero(policy.currency))
    return {"policy_id": policy.id, "currency": policy.currency, "days_elapsed": days, "earned": str(earned),
            "unearned": str(premium - earned), "paid": str(paid), "refund": str(refund)}


@tool(Kind.READ, latency=0.3)
def quote_payoff(world: World, plan_id: str, as_of: IsoDate) -> dict[str, Any]:
    """Quote the amount that pays the plan off, good through the date `as_of`.

    Unpaid instalments plus fees open on that date, less unapplied credit.

    Args:
        plan_id: The plan's id.
        as_of: The date the quote must be good through, YYYY-MM-DD.
    """
    plan = world.plan(plan_id)
    when = date_arg(as_of, "as_of")
    owed = unpaid_balance(plan)
    fees = sum((f.amount for f in world.state.children("fees", "plan_id", plan.id)
                if f.status == "open" and f.charged_on <= when), Money.zero(plan.currency))
    credit = sum((c.amount for c in world.state.children("credits", "plan_id", plan.id)), Money.zero(plan.currency))
    payoff = max(owed + fees - credit, Money.zero(plan.currency))
    return {"plan_id": plan.id, "currency": plan.currency, "as_of": when.isoformat(), "unpaid": str(owed),
            "open_fees": str(fees), "credit": str(credit), "payoff": str(payoff)}


READ_TOOLS = [find_customer, get_customer, get_policy, get_plan, list_fees, list_payments, quote_split,
              quote_premium_change, quote_cancellation, quote_payoff]
