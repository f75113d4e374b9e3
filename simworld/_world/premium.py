"""The premium rules: pro-rata by the days of the actual term, and earned premium over the premium's history.

One source for the quotes (:mod:`simworld._world.tools`) and the invariants
(:mod:`simworld._grading.invariants`):

- A term runs from ``term_start`` through ``term_end`` inclusive; its days are the
  days of the actual term (365, or 366 when it holds a 29 February).
- A premium change effective on day ``e`` changes the term's premium by
  ``(new - old) x days from e through term_end / days in the term``, rounded once,
  half to even, to the minor unit. From the first day of the term that is exactly
  ``new - old``, in a 365- or a 366-day term alike.
- Premium earned by a cancellation on day ``c`` is piecewise over the premium's
  history: each premium times the days it was in force before ``c``, over the days
  in the term, summed exactly and rounded once. A cancellation on the term start
  earns nothing.
- The refund is the money received beyond the premium earned: what was paid on the
  instalments plus what payments left unapplied (an overpayment). A credit the world
  grants itself (a premium decrease beyond the unpaid balance) is not money received:
  it is the customer's own payments beyond the lowered premium, already counted in
  what was paid on the instalments.

Arithmetic is on :class:`fractions.Fraction`, so nothing is rounded but the result.
"""

from __future__ import annotations

from datetime import date
from fractions import Fraction
from typing import Any

from simworld._world.models import Policy, remade
from simworld._world.money import Money

__all__ = ["cash_received", "earned_premium", "original_premium", "pro_rata_delta", "round_half_even", "term_days",
           "term_premium"]


def term_days(policy: Policy) -> int:
    """The days of the policy's actual term, its start and end included (365 or 366 for a year)."""
    return (policy.term_end - policy.term_start).days + 1


def round_half_even(value: Fraction) -> int:
    """``value`` rounded once to a whole number, ties to the even neighbour."""
    return round(value)


def pro_rata_delta(policy: Policy, new_premium: Money, effective: date) -> tuple[Money, int]:
    """The change a new annual premium makes to the rest of the term, and the days it covers.

    The days run from ``effective`` through the term end inclusive, over the days in the
    term, against the policy's current ``annual_premium``; rounded once, half to even.
    """
    days = (policy.term_end - effective).days + 1
    exact = Fraction(new_premium.minor - policy.annual_premium.minor) * days / term_days(policy)
    return Money(round_half_even(exact), policy.currency), days


def _changes(state: Any, policy: Policy) -> list[Any]:
    changes: list[Any] = state.children("premium_changes", "policy_id", policy.id)
    return changes


def original_premium(state: Any, policy: Policy) -> Money:
    """The annual premium the term started with, before the changes recorded in ``state``."""
    changed = sum(c.new_premium.minor - c.old_premium.minor for c in _changes(state, policy))
    return Money(policy.annual_premium.minor - changed, policy.currency)


def term_premium(state: Any, policy: Policy) -> Money:
    """The premium of the whole term: the original premium plus each recorded change's pro-rata delta."""
    total = original_premium(state, policy)
    for change in _changes(state, policy):
        as_was = remade(policy, annual_premium=change.old_premium)
        total = total + pro_rata_delta(as_was, change.new_premium, change.effective_date)[0]
    return total


def earned_premium(state: Any, policy: Policy, when: date) -> Money:
    """Premium earned by a cancellation on ``when``, piecewise over the premium's history, rounded once.

    Each premium counts for the days it was in force from the term start up to (not
    including) ``when``. The result is kept within 0 and the term's premium, so that
    earned + unearned is the term's premium exactly.
    """
    days = term_days(policy)
    elapsed = max((when - policy.term_start).days, 0)
    exact = Fraction(original_premium(state, policy).minor * elapsed, days)
    for change in _changes(state, policy):
        in_force = max((when - max(change.effective_date, policy.term_start)).days, 0)
        exact += Fraction((change.new_premium.minor - change.old_premium.minor) * in_force, days)
    ceiling = max(term_premium(state, policy).minor, 0)
    return Money(min(max(round_half_even(exact), 0), ceiling), policy.currency)


def cash_received(state: Any, policy: Policy) -> Money:
    """Money the customer paid in on the policy: paid on its instalments, plus payments' unapplied excess."""
    total = Money.zero(policy.currency)
    for plan in state.children("plans", "policy_id", policy.id):
        total = sum((i.paid_amount for i in plan.instalments), total)
        total = sum((p.unapplied for p in state.children("payments", "plan_id", plan.id) if p.unapplied is not None),
                    total)
    return total
