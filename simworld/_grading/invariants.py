"""The world's invariants as reusable checks, each reporting what broke and where.

The world's invariants (docs/world.md), over any seed and any sequence of calls:

====================  ======================================================================
``conservation``       non-cancelled instalments, less the credit schedules granted, sum to the
                       plan's total after adjustments (pro-rata premium changes by the days of
                       the actual term, rounded once, see :mod:`simworld._world.premium`); a credit is
                       granted only when nothing is left owed (a decrease beyond the balance)
``whole_minor_units``  every amount is a whole number of minor units of the plan's currency
``no_negative``        no negative amount; no zero instalment still owed
``paid_unchanged``     paid instalments are unchanged; partially paid ones change only by payment
``even_split``         a re-split's parts are ⌊B/N⌋ or ⌈B/N⌉, the larger ones together at one end
``schedule_order``     seq contiguous from 1, due dates strictly increasing, all within the term
``anchor_dates``       every unpaid due date is the anchor day of its month, clamped to the month end
                       (or, for the last instalment only, the term end)
``transitions``        statuses move only along allowed transitions; nothing leaves paid or cancelled
``quiet_outcome``      decline, request_information and escalate leave the business state unchanged
``refund_bounds``      earned + unearned = premium exactly; 0 <= refund <= the money paid in
``idempotency``        one payment per (plan, idempotency key)
``clock``              the simulated clock never goes back
====================  ======================================================================

:func:`check_plan` judges one plan between two states; :func:`check_episode` judges a
sealed episode (every changed plan, and the episode-wide invariants). The money grader
and ``simworld probe`` both use them. Replay (invariant 13) is checked by
:func:`simworld._episode.replay.replay`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

import attrs

from simworld._world.dates import days_in_month
from simworld._world.models import LOCKED, UNPAID, remade
from simworld._world.money import Money
from simworld._world.premium import cash_received, pro_rata_delta
from simworld._world.state import State

__all__ = ["INVARIANTS", "Violation", "check_episode", "check_plan", "even_split_problem"]

INVARIANTS = ("conservation", "whole_minor_units", "no_negative", "paid_unchanged", "even_split", "schedule_order",
              "anchor_dates", "transitions", "quiet_outcome", "refund_bounds", "idempotency", "clock")

# Which statuses an instalment may move to; paid and cancelled are final.
# (A rescheduled instalment may come back as planned: set_schedule replaces what is owed.)
_OWED = {"planned", "due", "overdue", "paid", "partially_paid", "waived", "cancelled"}
_ALLOWED: dict[str, set[str]] = {
    "planned": _OWED,
    "due": _OWED,
    "overdue": _OWED,
    "partially_paid": {"partially_paid", "paid"},
    "paid": {"paid"},
    "waived": {"waived"},
    "cancelled": {"cancelled"},
}
_ALL = frozenset(INVARIANTS)
# The invariants check_plan works out in one pass over the instalments (conservation needs to know whether
# an amount is in another currency), and those it works out against the instalments before.
_PER_INSTALMENT = frozenset({"whole_minor_units", "no_negative", "conservation"})
_AGAINST_BEFORE = frozenset({"paid_unchanged", "transitions"})
_EVEN_SPLIT = frozenset({"even_split"})


@attrs.frozen
class Violation:
    """One broken invariant: which, where (a record or a call), and what was found."""

    invariant: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant} at {self.where}: {self.detail}"


def _total(plan: Any) -> Money:
    """The plan's non-cancelled instalments summed (as Money arithmetic would, raising on a mixed currency)."""
    currency = plan.currency
    live = [i.amount for i in plan.instalments if i.status != "cancelled"]
    if all(type(a) is Money and a.currency == currency for a in live):
        return Money(sum(a.minor for a in live), currency)
    return sum(live, Money.zero(currency))


def even_split_problem(amounts: list[Money], remainder: str) -> str | None:
    """Why ``amounts`` are not an even split of their total with ``remainder`` placement, or None."""
    n = len(amounts)
    total = sum(a.minor for a in amounts)
    low, extra = divmod(total, n)
    sizes = [a.minor for a in amounts]
    if any(s not in (low, low + 1) for s in sizes) or sizes.count(low + 1) != extra:
        return f"parts {[str(a) for a in amounts]} are not {extra} x {low + 1} and {n - extra} x {low} minor units"
    if extra == 0:
        return None
    first = sizes[:extra] == [low + 1] * extra
    last = sizes[n - extra:] == [low + 1] * extra
    if remainder == "first" and not first or remainder == "last" and not last or not (first or last):
        where = "start or end" if remainder == "either" else remainder
        return f"the {extra} larger part(s) are not together at the {where}"
    return None


def check_plan(initial: State, final: State, plan_id: str, *, rescheduled: bool = False,
               even_split: bool = True, only: Collection[str] | None = None) -> list[Violation]:
    """The invariants of plan ``plan_id`` between ``initial`` and ``final``.

    Args:
        initial: The state before (an episode's initial state, or the state before one call).
        final: The state after.
        plan_id: The plan to judge.
        rescheduled: Whether ``final`` is the state right after a new schedule replaced the unpaid
            instalments of ``initial`` (enables even_split).
        even_split: Whether a re-split with an unchanged total must be an even split.
        only: The invariants to judge (None: all of them); the others are not worked out at all, so a
            caller that wants one pays for that one.
    """
    want = _ALL if only is None else frozenset(only)
    out: list[Violation] = []
    before, after = initial.get("plans", plan_id), final.get("plans", plan_id)
    policy_before = initial.get("policies", after.policy_id)
    policy = final.get("policies", after.policy_id)

    def bad(invariant: str, where: str, detail: str) -> None:
        out.append(Violation(invariant, where, detail))

    mixed = False  # an amount in another currency cannot be summed: reported here, not raised by the sums below
    if want & _PER_INSTALMENT:
        currency = after.currency
        for inst in after.instalments:
            amount, paid = inst.amount, inst.paid_amount
            if amount.currency != currency or paid.currency != currency:
                mixed = True
                bad("whole_minor_units", f"{plan_id}#{inst.seq}", f"amount in {amount.currency}, paid in "
                                                                 f"{paid.currency}, plan in {currency}")
            if amount.minor < 0 or paid.minor < 0:
                bad("no_negative", f"{plan_id}#{inst.seq}", f"amount {amount}, paid {paid}")
            elif amount.minor == 0 and inst.status in UNPAID:
                bad("no_negative", f"{plan_id}#{inst.seq}", "zero and still owed")
    if want & _AGAINST_BEFORE:
        old = {i.seq: i for i in before.instalments}
        for inst in after.instalments:
            prior = old.get(inst.seq)
            if prior is None or (prior is inst and inst.status in _ALLOWED):
                continue  # an instalment left as it was breaks neither (its status may stay what it is)
            where = f"{plan_id}#{inst.seq}"
            if prior.status == "paid" and inst != prior:
                bad("paid_unchanged", where, f"paid instalment changed: {prior.amount} due {prior.due_date} -> "
                                             f"{inst.amount} due {inst.due_date} ({inst.status})")
            elif prior.status == "partially_paid" and (inst.amount, inst.due_date) != (prior.amount, prior.due_date):
                bad("paid_unchanged", where, "partially paid instalment's amount or date changed")
            if inst.status not in _ALLOWED.get(prior.status, set()):
                bad("transitions", where, f"{prior.status} -> {inst.status}")
        kept = {i.seq for i in after.instalments}
        for seq, prior in old.items():
            if prior.status in LOCKED and seq not in kept:
                bad("paid_unchanged", f"{plan_id}#{seq}", f"{prior.status} instalment removed")

    if "conservation" in want and policy.status != "cancelled" and not mixed:
        expected = _total(before)
        for change in final.children("premium_changes", "policy_id", policy.id):
            prior_change = initial.get("premium_changes", change.id)
            as_was = remade(policy_before, annual_premium=change.old_premium)
            delta, _ = pro_rata_delta(as_was, change.new_premium, change.effective_date)
            if prior_change is not None:  # a change corrected since: only the correction is new
                delta = delta - pro_rata_delta(as_was, prior_change.new_premium, change.effective_date)[0]
            expected = expected + delta
        # Credits a schedule granted (or used, negative) in between; a payment's excess is money received, not these.
        granted = sum((c.amount for c in final.children("credits", "plan_id", plan_id)
                       if c.granted and initial.get("credits", c.id) is None), Money.zero(after.currency))
        actual = _total(after)
        if actual - granted != expected:
            drift = actual - granted - expected
            sign = "+" if drift.minor > 0 else ""
            less = f" less {granted} of credit granted" if granted.minor else ""
            bad("conservation", plan_id,
                f"instalments sum to {actual}{less}, expected {expected} ({sign}{drift} drift)")
        elif granted.minor > 0 and (still_owed := Money(sum(i.amount.minor for i in after.instalments
                                                             if i.status in UNPAID), after.currency)).minor > 0:
            bad("conservation", plan_id, f"a credit of {granted} granted while {still_owed} is still owed: a "
                                         "decrease lowers the instalments and credits only what exceeds them")

    owed_after = [i for i in after.instalments if i.status in UNPAID]
    if "even_split" in want and even_split and rescheduled and owed_after:
        owed_before = [i for i in before.instalments if i.status in UNPAID]
        same_total = sum(i.amount.minor for i in owed_before) == sum(i.amount.minor for i in owed_after)
        if same_total and [i.amount for i in owed_before] != [i.amount for i in owed_after]:
            why = even_split_problem([i.amount for i in owed_after], after.remainder)
            if why:
                bad("even_split", plan_id, why)

    if "anchor_dates" in want:
        _anchor_dates(plan_id, after, policy, owed_after, bad)
    if "schedule_order" in want:
        _schedule_order(plan_id, after, policy, bad)
    return out if only is None else [v for v in out if v.invariant in want]


def _anchor_dates(plan_id: str, after: Any, policy: Any, owed_after: list[Any],
                  bad: Callable[[str, str, str], None]) -> None:
    last_live = max((i.due_date for i in after.instalments if i.status != "cancelled"), default=None)
    for i in owed_after:
        day = min(after.anchor_day, days_in_month(i.due_date.year, i.due_date.month))
        # The one exception: the last instalment may fall on the term end, where a premium increase on a
        # paid-off plan is billed when no anchor date is left in the term.
        on_term_end = i.due_date == policy.term_end == last_live
        if i.due_date.day != day and not on_term_end:
            bad("anchor_dates", f"{plan_id}#{i.seq}", f"due {i.due_date}, but anchor day {after.anchor_day} "
                                                     f"gives day {day} of that month")


def _schedule_order(plan_id: str, after: Any, policy: Any, bad: Callable[[str, str, str], None]) -> None:
    seqs = [i.seq for i in after.instalments]
    if seqs != list(range(1, len(seqs) + 1)):
        bad("schedule_order", plan_id, f"seq {seqs} not contiguous from 1")
    live = [i for i in after.instalments if i.status != "cancelled"]
    for a, b in zip(live, live[1:], strict=False):
        if b.due_date <= a.due_date:
            bad("schedule_order", f"{plan_id}#{b.seq}", f"due {b.due_date} not after #{a.seq} due {a.due_date}")
    for i in live:
        if i.status in UNPAID and not policy.term_start <= i.due_date <= policy.term_end:
            bad("schedule_order", f"{plan_id}#{i.seq}", f"due {i.due_date} outside the term "
                                                       f"{policy.term_start}..{policy.term_end}")


def _changed_plans(initial: State, final: State) -> list[str]:
    return sorted({rid for (t, rid), record in final.overlay.items()
                   if t == "plans" and record is not initial.get(t, rid)})


def check_episode(episode: Any, *, even_split: bool = True,
                  only: Iterable[str] | None = None) -> list[Violation]:
    """Every invariant over a sealed episode: each changed plan, and the episode-wide ones.

    With ``only``, just those invariants are worked out (the money grader wants seven of them).
    """
    initial, final = episode.initial_state, episode.final_state
    want = _ALL if only is None else frozenset(only)
    out: list[Violation] = []
    for plan_id in _changed_plans(initial, final):
        out += check_plan(initial, final, plan_id, even_split=False, only=want)
    if even_split and "even_split" in want:
        # A re-split is judged on the state it made, against the state just before it.
        states = list(getattr(episode, "states", ()))
        for i, event in enumerate(episode.events):
            if event.tool == "set_schedule" and event.status == "ok" and isinstance(event.args, dict) and states:
                before = states[i - 1] if i else initial
                out += check_plan(before, states[i], str(event.args.get("plan_id")), rescheduled=True,
                                  only=_EVEN_SPLIT)
    if "quiet_outcome" in want and episode.outcome in ("decline", "request_information", "escalate") and \
            final.business_hash != initial.business_hash:
        out.append(Violation("quiet_outcome", "episode", f"outcome {episode.outcome} but the business state changed"))
    if "refund_bounds" in want:
        for (table, rid) in final.overlay:
            if table == "policies" and final.get(table, rid) is not initial.get(table, rid):
                policy = final.get(table, rid)
                if policy.refund is not None:
                    paid = cash_received(final, policy)
                    if not Money.zero(policy.currency) <= policy.refund <= paid:
                        out.append(Violation("refund_bounds", policy.id, f"refund {policy.refund} outside 0..{paid}"))
    if "idempotency" in want:
        # Only plans that got a payment in this episode can break it; look them up through the index.
        plans = sorted({final.get(t, rid).plan_id for (t, rid) in final.overlay
                        if t == "payments" and initial.get(t, rid) is None})
        for plan_id in plans:
            keys: dict[str, str] = {}
            for payment in final.children("payments", "plan_id", plan_id):
                if payment.idempotency_key in keys:
                    out.append(Violation("idempotency", payment.id, f"same key as {keys[payment.idempotency_key]}"))
                keys[payment.idempotency_key] = payment.id
    if "clock" in want:
        previous = ""
        for event in episode.events:
            if event.at < previous:
                out.append(Violation("clock", f"seq {event.seq}", f"time {event.at} before {previous}"))
            previous = event.at
    return out
