"""The money-invariants grader: in whatever end state the agent left, the money still adds up.

Checked on every plan the episode changed, so drift is caught even where no exact
expectation was written:

- ``conservation``: the plan's non-cancelled instalments sum to their initial total plus
  the pro-rata change of every premium change recorded in the episode (act/365 fixed,
  rounded once), or, when that would take the unpaid balance below zero, the unpaid
  instalments are zero and the excess is a credit;
- ``whole_minor_units``: every amount is in the plan's currency (whole minor units by
  construction);
- ``no_negative_amounts``: no negative amount and no zero instalment still owed;
- ``even_split``: where the unpaid instalments were replaced by a schedule with the same
  total (a re-split), every part is ⌊B/N⌋ or ⌈B/N⌉, the larger ones together at the start or
  the end (at the plan's end if it names one);
- ``schedule_order``: seq contiguous from 1, due dates strictly increasing, all within the term.
"""

from __future__ import annotations

from typing import Any

import attrs

from simworld.models import LOCKED, UNPAID
from simworld.money import Money
from simworld.tools._read import pro_rata_delta
from simworld.verdict import Check, Verdict


def _total(plan: Any) -> Money:
    return sum((i.amount for i in plan.instalments if i.status != "cancelled"), Money.zero(plan.currency))


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


def money_invariants(episode: Any, even_split: bool = True) -> Verdict:
    """Pass if every changed plan keeps the money invariants.

    Args:
        episode: The sealed episode.
        even_split: Whether a re-split must be an even split (turn off for plans with uneven schedules).
    """
    initial, final = episode.initial_state, episode.final_state
    problems: dict[str, list[str]] = {k: [] for k in ("conservation", "whole_minor_units", "no_negative_amounts",
                                                      "even_split", "schedule_order")}
    rescheduled = {e.args.get("plan_id") for e in episode.events
                   if e.tool == "set_schedule" and e.status == "ok" and isinstance(e.args, dict)}
    changed = sorted({rid for (t, rid) in final.overlay
                      if t == "plans" and final.get(t, rid) is not initial.get(t, rid)})
    for plan_id in changed:
        before, after = initial.get("plans", plan_id), final.get("plans", plan_id)
        policy_before = initial.get("policies", after.policy_id)
        policy = final.get("policies", after.policy_id)
        for inst in after.instalments:
            if inst.amount.currency != after.currency or inst.paid_amount.currency != after.currency:
                problems["whole_minor_units"].append(f"{plan_id}#{inst.seq} is in {inst.amount.currency}")
            if inst.amount.minor < 0:
                problems["no_negative_amounts"].append(f"{plan_id}#{inst.seq} is {inst.amount}")
            elif inst.amount.minor == 0 and inst.status in UNPAID:
                problems["no_negative_amounts"].append(f"{plan_id}#{inst.seq} is zero and still owed")
        if policy.status != "cancelled":
            expected = _total(before)
            for change in final.children("premium_changes", "policy_id", policy.id):
                if initial.get("premium_changes", change.id) is None:
                    as_was = attrs.evolve(policy_before, annual_premium=change.old_premium)
                    delta, _ = pro_rata_delta(as_was, change.new_premium, change.effective_date)
                    expected = expected + delta
            locked = sum((i.amount for i in after.instalments if i.status in LOCKED), Money.zero(after.currency))
            actual = _total(after)
            if expected < locked:
                new_credit = sum((c.amount for c in final.children("credits", "plan_id", plan_id)
                                  if initial.get("credits", c.id) is None), Money.zero(after.currency))
                if actual != locked or new_credit != locked - expected:
                    problems["conservation"].append(f"{plan_id}: instalments {actual}, credit {new_credit}; expected "
                                                    f"{locked} and a credit of {locked - expected}")
            elif actual != expected:
                drift = actual - expected
                sign = "+" if drift.minor > 0 else ""
                problems["conservation"].append(f"{plan_id}: instalments sum to {actual}, expected {expected} "
                                                f"({sign}{drift} drift)")
        owed_before = [i for i in before.instalments if i.status in UNPAID]
        owed_after = [i for i in after.instalments if i.status in UNPAID]
        same_total = sum(i.amount.minor for i in owed_before) == sum(i.amount.minor for i in owed_after)
        if even_split and plan_id in rescheduled and owed_after and same_total and \
                [i.amount for i in owed_before] != [i.amount for i in owed_after]:
            why = even_split_problem([i.amount for i in owed_after], after.remainder)
            if why:
                problems["even_split"].append(f"{plan_id}: {why}")
        seqs = [i.seq for i in after.instalments]
        if seqs != list(range(1, len(seqs) + 1)):
            problems["schedule_order"].append(f"{plan_id}: seq {seqs} not contiguous from 1")
        live = [i for i in after.instalments if i.status != "cancelled"]
        for a, b in zip(live, live[1:], strict=False):
            if b.due_date <= a.due_date:
                problems["schedule_order"].append(f"{plan_id}: #{b.seq} due {b.due_date} not after #{a.seq}")
        for i in live:
            if not policy.term_start <= i.due_date <= policy.term_end and i.status in UNPAID:
                problems["schedule_order"].append(f"{plan_id}: #{i.seq} due {i.due_date} outside the term")
    checks = [Check(name, not found, "; ".join(found) if found else f"holds on {len(changed)} changed plan(s)")
              for name, found in problems.items()]
    return Verdict.from_checks(checks)
