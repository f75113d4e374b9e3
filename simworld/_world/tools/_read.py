"""READ tools: look-ups and quotes. No side effect; quotes compute the correct answer."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any, Literal

import orjson

from simworld._world.dates import next_due_date, parse_date, schedule_dates
from simworld._world.models import LOCKED, UNPAID, Plan, Policy, json_list, json_with, json_with_bytes, memo, remade
from simworld._world.money import MAX_MAJOR_DIGITS, Money, allocate, max_minor
from simworld._world.premium import cash_received, earned_premium, pro_rata_delta, term_days, term_premium
from simworld._world.tools._registry import Amount, IsoDate, Kind, tool
from simworld._world.world import World
from simworld.errors import DateError, PolicyDenied, ToolArgumentError

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
    """The sum of the plan's unpaid instalments (kept on the plan: it is immutable)."""
    return memo(plan, "_unpaid_balance", _unpaid_balance)


def _unpaid_balance(plan: Plan) -> Money:
    return Money.total((i.amount for i in unpaid(plan)), plan.currency)


def plan_view(plan: Plan) -> orjson.Fragment:
    """A plan as the agent sees it, with its unpaid balance after its own fields.

    The plan's cached JSON with one key added, as the piece of JSON the world records: a plan
    is the largest thing a tool returns, and parsing it here only to write it again would double
    what reading it costs. Kept on the plan (it is immutable), for the next call that shows it:
    the agent's get_plan and each solution's show the same plan of a seed's world.
    """
    return orjson.Fragment(memo(plan, "_view_json", _plan_view_json))


def _plan_view_json(plan: Plan) -> bytes:
    return json_with_bytes(plan, {"unpaid_balance": str(unpaid_balance(plan))})


def received(world: World, policy: Policy) -> Money:
    """Money paid in on the policy (see :func:`simworld._world.premium.cash_received`)."""
    return cash_received(world.state, policy)


def owed_on_instalments(plan: Plan) -> Money:
    """What is still owed on the plan's instalments: the unpaid ones, and the rest of the partially paid ones."""
    return sum((i.amount - i.paid_amount for i in plan.instalments if i.status in UNPAID or i.status in LOCKED),
               Money.zero(plan.currency))


def fits(amount: Money, what: str, tool: str) -> Money:
    """``amount`` if a write tool would accept it, else a ToolArgumentError: quotes give only writable amounts."""
    if abs(amount.minor) > max_minor(amount.currency):
        raise ToolArgumentError(f"{tool}: the {what} would be {amount} {amount.currency}, more than the "
                                f"{MAX_MAJOR_DIGITS} integer digits the billing system accepts; escalate.")
    return amount


def _in_term(policy: Policy, value: str, name: str, tool: str) -> date:
    day: date = date_arg(value, name)
    if not policy.term_start <= day <= policy.term_end:
        raise ToolArgumentError(f"{tool}: {name}={value!r} is outside the term "
                                f"{policy.term_start.isoformat()}..{policy.term_end.isoformat()}.")
    return day


def premium_change_args(world: World, tool: str, policy_id: str, new_annual_premium: Any,
                        effective_date: str) -> tuple[Policy, Money, date]:
    """The checked arguments of a premium change, the same for the quote and for the write."""
    policy = world.policy_record(policy_id)
    if policy.status == "cancelled":
        raise PolicyDenied(f"Policy {policy.id!r} is cancelled; it accepts no changes (rule cancelled_frozen).")
    new = world.money(new_annual_premium, policy.currency, "new_annual_premium")
    if new.minor <= 0:
        raise ToolArgumentError(f"{tool}: new_annual_premium={new_annual_premium!r} must be positive.")
    effective = _in_term(policy, effective_date, "effective_date", tool)
    return policy, new, effective


def premium_change(world: World, tool: str, policy: Policy, new: Money, effective: date,
                   remainder: Literal["first", "last"]) -> dict[str, Any]:
    """The correct premium change: its pro-rata delta, the new unpaid schedule and any credit.

    - The delta is rounded once and allocated over the unpaid instalments, each keeping
      its due date.
    - If that leaves an instalment at zero or below, the new unpaid balance is split
      evenly instead, over as many of the unpaid instalments (the earliest) as it has
      minor units, at most all of them: never a zero instalment.
    - If the new balance is below zero, nothing stays owed and the excess is a credit.
    - If nothing is unpaid (the plan is paid off) and the premium goes up, the increase is
      paid first from the credit the plan holds (a negative ``credit``: set_schedule uses
      it), and the rest is one new instalment, due on the plan's first anchor date on or
      after the effective date and after every instalment the plan keeps, or on the term
      end when no anchor date is left in the term.
    """
    plans = world.state.children("plans", "policy_id", policy.id)
    if not plans:
        raise ToolArgumentError(f"{tool}: policy {policy.id!r} has no plan.")
    plan = plans[0]
    earlier = world.state.get("premium_changes", f"pc-{policy.id}-{effective.isoformat()}")
    if earlier is None:
        delta, days = pro_rata_delta(policy, new, effective)
    else:
        # A second change from the same date corrects the first: the total change from the original premium
        # is rounded once, less what the first change already added.
        as_was = remade(policy, annual_premium=earlier.old_premium)
        delta, days = pro_rata_delta(as_was, new, effective)
        delta = delta - pro_rata_delta(as_was, earlier.new_premium, effective)[0]
    owed = unpaid(plan)
    balance = unpaid_balance(plan)
    new_balance = balance + delta
    zero = Money.zero(plan.currency)
    credit = zero
    rows: list[tuple[date, Money]] = []
    if new_balance.minor < 0:
        credit = -new_balance
    elif new_balance.minor > 0 and not owed:
        # Nothing left to reschedule: the increase is paid from the plan's credit first, the rest billed once.
        held = sum((c.amount.minor for c in world.state.children("credits", "plan_id", plan.id)), 0)
        credit = -Money(min(max(held, 0), new_balance.minor), plan.currency)
        if (new_balance + credit).minor:
            rows = [(_increase_due_date(plan, policy, effective, tool), new_balance + credit)]
    elif new_balance.minor > 0:
        shares = allocate(delta, len(owed), remainder)
        amounts = [i.amount + s for i, s in zip(owed, shares, strict=True)]
        if any(a.minor <= 0 for a in amounts):
            count = min(len(owed), new_balance.minor)
            amounts = allocate(new_balance, count, remainder)
        rows = [(i.due_date, a) for i, a in zip(owed, amounts, strict=False)]
    for what, amount in (("new unpaid balance", new_balance), ("credit", credit)):
        fits(amount, what, tool)
    return {
        "policy_id": policy.id,
        "plan_id": plan.id,
        "currency": policy.currency,
        "old_annual_premium": str(policy.annual_premium),
        "new_annual_premium": str(new),
        "days_remaining": days,
        "days_in_term": term_days(policy),
        "delta": str(delta),
        "unpaid_balance": str(balance),
        "new_unpaid_balance": str(max(new_balance, zero)),
        "credit": str(credit),
        "instalments": [{"due_date": d.isoformat(), "amount": str(a)} for d, a in rows],
    }


def _increase_due_date(plan: Plan, policy: Policy, effective: date, tool: str) -> date:
    """When a paid-off plan's premium increase falls due: see :func:`premium_change`."""
    kept = [i.due_date for i in plan.instalments if i.status != "cancelled"]
    start = max([effective, *(d + timedelta(days=1) for d in kept)])
    due = min(next_due_date(start, plan.anchor_day), policy.term_end)
    if due < start:
        raise ToolArgumentError(f"{tool}: plan {plan.id!r} has an instalment due on the term end "
                                f"{policy.term_end.isoformat()}, so no due date is left in the term to bill the "
                                "increase; escalate.")
    return due


def cancellation_args(world: World, tool: str, policy_id: str, cancel_date: str) -> tuple[Policy, date]:
    """The checked arguments of a cancellation, the same for the quote and for the write."""
    policy = world.policy_record(policy_id)
    if policy.status == "cancelled":
        raise PolicyDenied(f"{tool}: policy {policy.id!r} is already cancelled.")
    return policy, _in_term(policy, cancel_date, "cancel_date", tool)


def _query_given(world: World, query: str) -> None:
    """find_customer's one check."""
    if not query.strip():
        raise ToolArgumentError("find_customer: query is empty; pass an id, an e-mail or part of a name.")


def _customer_named(world: World, customer_id: str) -> None:
    world.customer(customer_id)


def _policy_named(world: World, policy_id: str) -> None:
    world.policy_record(policy_id)


def _plan_named(world: World, plan_id: str) -> None:
    world.plan(plan_id)


@tool(Kind.READ, latency=0.3, checks=_query_given)
def find_customer(world: World, query: str) -> dict[str, Any]:
    """Find customers by id, e-mail address, or part of their name.

    Args:
        query: A customer id, an e-mail address, or part of a name (case does not matter).
    """
    _query_given(world, query)
    q = query.strip().lower()
    state = world.state
    if any(table == "customers" for table, _ in state.overlay):
        return {"customers": _found(state.records("customers"), q)}
    # No customer changed since the snapshot: its answers, kept on it (a seed's start changes no customer).
    answers: dict[str, list[dict[str, str]]] = memo(state.base, "_find_customer", _no_answers)
    found = answers.get(q)
    if found is None:
        found = _found(state.records("customers"), q)
        if len(answers) < 4096:
            answers[q] = found
    return {"customers": found}  # read by the world as JSON: the agent gets its own copy


def _no_answers(base: Any) -> dict[str, list[dict[str, str]]]:
    return {}


def _found(customers: Iterable[Any], q: str) -> list[dict[str, str]]:
    """The first 20 customers whose id or e-mail is ``q``, or whose name holds it (``q`` in lower case)."""
    found = []
    for c in customers:
        keys = c.__dict__.get("_search_keys") or memo(c, "_search_keys", _search_keys)
        if q == keys[0] or q == keys[1] or q in keys[2]:
            found.append({"id": c.id, "name": c.name, "email": c.email})
    return found[:20]


def _search_keys(customer: Any) -> tuple[str, str, str]:
    """What find_customer compares a query with: the customer's id, e-mail and name in lower case (kept on the
    record: every search reads every customer)."""
    return customer.id.lower(), customer.email.lower(), customer.name.lower()


@tool(Kind.READ, latency=0.2, checks=_customer_named)
def get_customer(world: World, customer_id: str) -> orjson.Fragment:
    """Get a customer: contact details, verification, time zone, notes, and their policy ids.

    Args:
        customer_id: The customer's id, e.g. 'cus_001'.
    """
    customer = world.customer(customer_id)
    return json_with(customer, {"policy_ids": [p.id for p in world.state.children("policies", "customer_id",
                                                                                  customer.id)]})


@tool(Kind.READ, latency=0.2, checks=_policy_named)
def get_policy(world: World, policy_id: str) -> orjson.Fragment:
    """Get a policy: product, currency, term, annual premium, status, and its plan ids.

    Args:
        policy_id: The policy's id, e.g. 'pol_001'.
    """
    policy = world.policy_record(policy_id)
    return json_with(policy, {"plan_ids": [p.id for p in world.state.children("plans", "policy_id", policy.id)]})


@tool(Kind.READ, latency=0.2, checks=_plan_named)
def get_plan(world: World, plan_id: str) -> orjson.Fragment:
    """Get an instalment plan with every instalment (seq, due date, amount, paid amount, status, draft date).

    Args:
        plan_id: The plan's id, e.g. 'pln_001'.
    """
    return plan_view(world.plan(plan_id))


@tool(Kind.READ, latency=0.2, checks=_plan_named)
def list_fees(world: World, plan_id: str) -> dict[str, Any]:
    """List the fees charged on a plan, open, paid and waived.

    Args:
        plan_id: The plan's id.
    """
    plan = world.plan(plan_id)
    return {"fees": json_list(world.state.children("fees", "plan_id", plan.id))}


@tool(Kind.READ, latency=0.2, checks=_plan_named)
def list_payments(world: World, plan_id: str) -> dict[str, Any]:
    """List the payments received on a plan and any unapplied credit.

    Args:
        plan_id: The plan's id.
    """
    plan = world.plan(plan_id)
    return {
        "payments": json_list(world.state.children("payments", "plan_id", plan.id)),
        "credits": json_list(world.state.children("credits", "plan_id", plan.id)),
    }


@tool(Kind.READ, latency=0.4)
def quote_split(world: World, plan_id: str, count: int, remainder: Literal["first", "last"] = "last") -> dict[str, Any]:
    """Quote a correct schedule that splits the plan's unpaid balance into `count` monthly instalments.

    The first new due date falls in the month of the first unpaid instalment; every date
    is derived from the plan's anchor day. Amounts are allocated once from the exact
    balance. The quote changes nothing and does not judge the policy (the number of
    instalments, the minimum instalment, the term end): check the rules. It refuses only
    what no schedule may hold: an instalment of zero, when the count exceeds the balance
    in minor units.

    Args:
        plan_id: The plan's id.
        count: How many instalments, e.g. 3.
        remainder: Where the leftover minor units (balance mod count of them) go, one each: to the first
            instalments ('first') or to the last ones ('last').
    """
    plan, _policy = world.writable_plan(plan_id)
    if not 1 <= count <= 60:
        raise ToolArgumentError(f"quote_split: count must be between 1 and 60 but got count={count!r}.")
    owed = unpaid(plan)
    if not owed:
        raise ToolArgumentError(f"quote_split: plan {plan.id!r} has no unpaid instalments to split.")
    balance = fits(unpaid_balance(plan), "total", "quote_split")
    if count > balance.minor:
        raise ToolArgumentError(f"quote_split: a balance of {balance} {balance.currency} cannot be split into "
                                f"count={count} instalments without one of zero; at most {balance.minor}.")
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

    The delta is (new - old) x days from the effective date through the term end / days in the term
    (365 or 366), rounded once, then allocated over the unpaid instalments, each keeping its due
    date. No instalment is left at zero: where one would be, the new balance is split evenly
    instead, over fewer instalments (the earliest) if it has fewer minor units. If the unpaid
    balance would go negative, the quote empties the schedule and returns a credit; if the plan is
    paid off, an increase is paid from the plan's credit first (a negative credit) and the rest is
    one new instalment on the next anchor date (or the term end). Follow it with
    record_premium_change and set_schedule (instalments and credit as quoted).

    Args:
        policy_id: The policy's id.
        new_annual_premium: The new annual premium, e.g. '1320.00'.
        effective_date: The date the new premium takes effect, YYYY-MM-DD, within the term.
        remainder: Where the delta's leftover minor units go, one each: to the first unpaid instalments ('first')
            or to the last ones ('last').
    """
    policy, new, effective = premium_change_args(world, "quote_premium_change", policy_id, new_annual_premium,
                                                 effective_date)
    return premium_change(world, "quote_premium_change", policy, new, effective, remainder)


@tool(Kind.READ, latency=0.4)
def quote_cancellation(world: World, policy_id: str, cancel_date: IsoDate) -> dict[str, Any]:
    """Quote a cancellation: the premium earned to the cancel date and the refund due.

    Earned premium is piecewise over the premium's history: each annual premium x the days it was
    in force before the cancel date / days in the term (365 or 366), summed and rounded once.
    Earned plus unearned is the term's premium (the annual premium as changed by its pro-rata
    changes) exactly; the refund is the money paid in (on instalments, plus what payments left
    unapplied) beyond the earned premium, never negative and never more than was paid in. A credit
    from a premium decrease is not money paid in: it is already in what was paid on instalments.

    Args:
        policy_id: The policy's id.
        cancel_date: The cancellation date, YYYY-MM-DD, within the term.
    """
    policy, when = cancellation_args(world, "quote_cancellation", policy_id, cancel_date)
    premium = term_premium(world.state, policy)
    earned = earned_premium(world.state, policy, when)
    paid = received(world, policy)
    refund = fits(max(paid - earned, Money.zero(policy.currency)), "refund", "quote_cancellation")
    return {"policy_id": policy.id, "currency": policy.currency, "days_elapsed": (when - policy.term_start).days,
            "days_in_term": term_days(policy), "premium": str(premium), "earned": str(earned),
            "unearned": str(premium - earned), "paid": str(paid), "refund": str(refund)}


@tool(Kind.READ, latency=0.3)
def quote_payoff(world: World, plan_id: str, as_of: IsoDate) -> dict[str, Any]:
    """Quote the amount that pays the plan off, good through the date `as_of`.

    What is owed on the instalments (the unpaid ones, and the rest of any partially paid one),
    plus fees open on that date, less unapplied credit, never below zero. Paying it with
    apply_payment leaves a payoff of zero.

    Args:
        plan_id: The plan's id.
        as_of: The date the quote must be good through, YYYY-MM-DD.
    """
    plan = world.plan(plan_id)
    when = date_arg(as_of, "as_of")
    owed = owed_on_instalments(plan)
    fees = sum((f.amount for f in world.state.children("fees", "plan_id", plan.id)
                if f.status == "open" and f.charged_on <= when), Money.zero(plan.currency))
    credit = sum((c.amount for c in world.state.children("credits", "plan_id", plan.id)), Money.zero(plan.currency))
    payoff = fits(max(owed + fees - credit, Money.zero(plan.currency)), "payoff", "quote_payoff")
    return {"plan_id": plan.id, "currency": plan.currency, "as_of": when.isoformat(), "unpaid": str(owed),
            "open_fees": str(fees), "credit": str(credit), "payoff": str(payoff)}


READ_TOOLS = [find_customer, get_customer, get_policy, get_plan, list_fees, list_payments, quote_split,
              quote_premium_change, quote_cancellation, quote_payoff]
