"""Every invariant of :mod:`simworld.invariants`, firing and not firing at its boundaries, on hand-built states.

The kit's plan ``pln_1``: twelve instalments of 100.00 due on the 15th of each month of
2026 (the term), the first three paid; its policy's premium is 1200.00.
"""

from __future__ import annotations

from datetime import date

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kit import (
    Credit,
    Payment,
    PremiumChange,
    episode,
    event,
    instalments,
    plan,
    policy,
    put,
    usd,
    with_instalment,
    world,
)

from simworld._grading.invariants import INVARIANTS, Violation, check_episode, check_plan, even_split_problem
from simworld._world.money import Money


def found(initial, final, **kw):
    """(invariant, where) of every violation of pln_1 between two states."""
    return [(v.invariant, v.where) for v in check_plan(initial, final, "pln_1", **kw)]


def changed(s, seq, **changes):
    """``s`` with instalment ``seq`` of pln_1 evolved."""
    return put(s, with_instalment(s.get("plans", "pln_1"), seq, **changes))


def with_plan(s, **changes):
    return put(s, attrs.evolve(s.get("plans", "pln_1"), **changes))


def amounts(s, values, first=4):
    p = s.get("plans", "pln_1")
    for seq, v in enumerate(values, first):
        p = with_instalment(p, seq, amount=usd(v))
    return put(s, p)


class TestViolation:
    def test_str(self) -> None:
        """A violation reads 'invariant at where: detail'."""
        assert str(Violation("clock", "seq 2", "back")) == "clock at seq 2: back"
        assert INVARIANTS[0] == "conservation" and len(INVARIANTS) == 12


class TestUnchangedPlan:
    def test_untouched_plan_holds_everything(self) -> None:
        """The kit's plan keeps every invariant against itself."""
        s = world()
        assert found(s, s) == []
        assert found(s, s, rescheduled=True) == []


class TestWholeMinorUnits:
    def test_amount_in_another_currency(self) -> None:
        """An instalment amount in another currency than the plan's is flagged, and reported, not raised."""
        s = world()
        got = check_plan(s, changed(s, 5, amount=Money(10000, "EUR")), "pln_1", rescheduled=True)
        assert [(v.invariant, v.where, v.detail) for v in got] == [
            ("whole_minor_units", "pln_1#5", "amount in EUR, paid in USD, plan in USD")]

    def test_paid_amount_in_another_currency(self) -> None:
        """A paid amount in another currency is flagged too."""
        s = world()
        assert found(s, changed(s, 5, paid_amount=Money(0, "EUR"))) == [("whole_minor_units", "pln_1#5")]


class TestNoNegative:
    @pytest.mark.parametrize(("minor", "bad"), [(-1, True), (0, True), (1, False)])
    def test_owed_amount(self, minor: int, bad: bool) -> None:
        """An owed instalment of -0.01 or 0.00 is flagged; 0.01 is not."""
        s = world()
        got = found(s, changed(s, 12, amount=Money(minor, "USD")), )
        assert (("no_negative", "pln_1#12") in got) is bad

    def test_negative_paid_amount(self) -> None:
        """A negative paid amount is flagged."""
        s = world()
        assert ("no_negative", "pln_1#12") in found(s, changed(s, 12, paid_amount=Money(-1, "USD")))

    def test_zero_not_owed(self) -> None:
        """A zero instalment that is waived or cancelled is not owed, so not flagged."""
        s = world()
        for status in ("waived", "cancelled"):
            got = found(s, changed(s, 12, amount=Money(0, "USD"), status=status))
            assert ("no_negative", "pln_1#12") not in got

    def test_details(self) -> None:
        """The details show the amounts, or say it is zero and owed."""
        s = world()
        (v,) = [v for v in check_plan(s, changed(s, 12, amount=Money(-1, "USD")), "pln_1")
                if v.invariant == "no_negative"]
        assert v.detail == "amount -0.01, paid 0.00"
        (z,) = [v for v in check_plan(s, changed(s, 12, amount=Money(0, "USD")), "pln_1")
                if v.invariant == "no_negative"]
        assert z.detail == "zero and still owed"


class TestPaidUnchanged:
    def test_paid_changed(self) -> None:
        """Any change to a paid instalment is flagged (here its draft date)."""
        s = world()
        assert found(s, changed(s, 2, draft_date=date(2026, 2, 16))) == [("paid_unchanged", "pln_1#2")]

    def test_partially_paid_amount_or_date(self) -> None:
        """A partially paid instalment's amount or due date changing is flagged; its payment is not."""
        s = changed(world(), 4, status="partially_paid", paid_amount=usd("10.00"))
        assert found(s, changed(s, 4, amount=usd("90.00"))) == [("paid_unchanged", "pln_1#4"),
                                                                ("conservation", "pln_1")]
        assert ("paid_unchanged", "pln_1#4") in found(s, changed(s, 4, due_date=date(2026, 4, 14)))
        assert found(s, changed(s, 4, paid_amount=usd("100.00"), status="paid")) == []
        assert found(s, changed(s, 4, paid_amount=usd("50.00"))) == []

    def test_removed_locked_instalment(self) -> None:
        """A paid or partially paid instalment that disappears is flagged; a removed owed one is not by this rule."""
        s = changed(world(), 4, status="partially_paid", paid_amount=usd("10.00"))
        p = s.get("plans", "pln_1")
        no_paid = with_plan(s, instalments=p.instalments[1:])
        assert ("paid_unchanged", "pln_1#1") in found(s, no_paid)
        no_partial = with_plan(s, instalments=p.instalments[:3] + p.instalments[4:])
        assert ("paid_unchanged", "pln_1#4") in found(s, no_partial)
        no_owed = with_plan(s, instalments=p.instalments[:11])
        assert not [f for f in found(s, no_owed) if f[0] == "paid_unchanged"]


class TestTransitions:
    @pytest.mark.parametrize(("before", "after", "ok"), [
        ("planned", "cancelled", True), ("due", "paid", True), ("overdue", "waived", True),
        ("partially_paid", "paid", True), ("partially_paid", "planned", False), ("paid", "planned", False),
        ("cancelled", "planned", False), ("waived", "due", False), ("paid", "paid", True),
    ])
    def test_allowed_moves(self, before: str, after: str, ok: bool) -> None:
        """Statuses move only along allowed transitions; nothing leaves paid, waived or cancelled."""
        s = changed(world(), 6, status=before)
        got = [(v.invariant, v.detail) for v in check_plan(s, changed(s, 6, status=after), "pln_1")
               if v.invariant == "transitions"]
        assert got == ([] if ok else [("transitions", f"{before} -> {after}")])

    def test_new_seq_has_no_prior(self) -> None:
        """An instalment with a new seq has no transition to judge."""
        s = with_plan(world(), instalments=world().get("plans", "pln_1").instalments[:11])
        assert not [f for f in found(s, world()) if f[0] == "transitions"]


class TestConservation:
    def test_drift_both_ways(self) -> None:
        """One cent more or less than the plan's total is flagged with the signed drift."""
        s = world()
        (up,) = check_plan(s, amounts(s, ["100.01"]), "pln_1")
        assert (up.invariant, up.detail) == ("conservation",
                                              "instalments sum to 1200.01, expected 1200.00 (+0.01 drift)")
        (down,) = check_plan(s, amounts(s, ["99.99"]), "pln_1")
        assert down.detail == "instalments sum to 1199.99, expected 1200.00 (-0.01 drift)"

    def test_cancelled_instalments_do_not_count(self) -> None:
        """A cancelled instalment's amount is out of the total: cancelling one breaks conservation."""
        s = world()
        assert found(s, changed(s, 12, status="cancelled")) == [("conservation", "pln_1")]
        gone = changed(s, 12, status="cancelled")
        assert found(gone, changed(gone, 12, amount=usd("5.00"))) == []

    def test_cancelled_policy_is_exempt(self) -> None:
        """A cancelled policy's plan is not held to conservation."""
        s = world()
        after = put(changed(s, 12, status="cancelled"), policy(status="cancelled"))
        assert found(s, after) == []

    def test_premium_change_pro_rata(self) -> None:
        """A recorded premium change adds its pro-rata delta (365.00 more a year, 1 day: 1.00) to the total."""
        s = world()
        change = PremiumChange("pc_1", "pol_1", "USD", usd("1200.00"), usd("1565.00"), date(2026, 12, 31))
        after = put(amounts(s, ["101.00"], first=12), change, policy(annual_premium=usd("1565.00")))
        assert found(s, after) == []
        assert found(s, put(s, change)) == [("conservation", "pln_1")]
        one_more = put(amounts(s, ["102.00"], first=12), change)
        (v,) = check_plan(s, one_more, "pln_1")
        assert v.detail == "instalments sum to 1202.00, expected 1201.00 (+1.00 drift)"

    def test_correction_counts_only_the_difference(self) -> None:
        """A premium change corrected in the episode adds only the correction's delta."""
        first = PremiumChange("pc_1", "pol_1", "USD", usd("1200.00"), usd("1565.00"), date(2026, 12, 31))
        s = amounts(put(world(), first), ["101.00"], first=12)
        fixed = attrs.evolve(first, new_premium=usd("1930.00"))
        assert found(s, amounts(put(s, fixed), ["102.00"], first=12)) == []
        assert found(s, amounts(put(s, fixed), ["103.00"], first=12)) == [("conservation", "pln_1")]

    def test_granted_credit(self) -> None:
        """A credit a schedule granted makes up what the instalments lost, only when nothing is left owed."""
        s = world()
        p = s.get("plans", "pln_1")
        cleared = put(s, attrs.evolve(p, instalments=p.instalments[:3] + tuple(
            attrs.evolve(i, status="cancelled") for i in p.instalments[3:])))
        credit = Credit("cr-pln_1-schedule-1", "pln_1", "USD", usd("-900.00"), "used")
        assert found(s, put(cleared, credit)) == []
        granted = Credit("cr-pln_1-schedule-1", "pln_1", "USD", usd("10.00"), "decrease")
        lowered = amounts(s, ["100.00"] * 8 + ["90.00"])
        (v,) = check_plan(s, put(lowered, granted), "pln_1")
        assert v.invariant == "conservation"
        assert v.detail == "instalments sum to 1190.00 less 10.00 of credit granted, expected 1200.00 (-20.00 drift)"

    def test_credit_while_owed(self) -> None:
        """A credit granted while instalments are still owed is flagged even when the sum holds."""
        s = world()
        granted = Credit("cr-pln_1-schedule-1", "pln_1", "USD", usd("10.00"), "decrease")
        (v,) = check_plan(s, put(amounts(s, ["110.00"]), granted), "pln_1")
        assert v.invariant == "conservation" and v.detail.startswith("a credit of 10.00 granted while 900.00+")is False
        assert v.detail.startswith("a credit of 10.00 granted while 910.00 is still owed")

    def test_payment_excess_and_old_credits_are_not_granted(self) -> None:
        """A payment's excess credit, or one that existed before, is not counted as granted."""
        old = Credit("cr-pln_1-schedule-0", "pln_1", "USD", usd("10.00"), "old")
        s = world(old)
        assert found(s, s) == []
        excess = Credit("cr-pln_1-payment-1", "pln_1", "USD", usd("10.00"), "overpaid")
        assert found(s, put(s, excess)) == []

    def test_credit_beyond_a_cleared_balance(self) -> None:
        """A decrease beyond what is owed: nothing left owed and the excess granted as credit keeps conservation."""
        s = world()
        p = s.get("plans", "pln_1")
        cleared = put(s, attrs.evolve(p, instalments=p.instalments[:3] + tuple(
            attrs.evolve(i, status="cancelled") for i in p.instalments[3:])))
        to_zero = PremiumChange("pc_1", "pol_1", "USD", usd("1200.00"), usd("0.00"), date(2026, 1, 1))
        credit = Credit("cr-pln_1-schedule-1", "pln_1", "USD", usd("300.00"), "decrease")
        assert found(s, put(cleared, to_zero, credit)) == []

    def test_smallest_credit_while_smallest_amount_owed(self) -> None:
        """A credit of 0.01 granted while 0.01 is still owed is flagged (the boundary of both amounts)."""
        s = world()
        p = s.get("plans", "pln_1")
        left = put(s, attrs.evolve(p, instalments=p.instalments[:3] + (attrs.evolve(p.instalments[3],
                                                                                   amount=usd("0.01")),) + tuple(
            attrs.evolve(i, status="cancelled") for i in p.instalments[4:])))
        to_300 = PremiumChange("pc_1", "pol_1", "USD", usd("1200.00"), usd("300.00"), date(2026, 1, 1))
        credit = Credit("cr-pln_1-schedule-1", "pln_1", "USD", usd("0.01"), "decrease")
        (v,) = check_plan(s, put(left, to_300, credit), "pln_1")
        assert v.detail.startswith("a credit of 0.01 granted while 0.01 is still owed")

    def test_zero_credit_while_owed_is_fine(self) -> None:
        """A zero credit granted while owed is no credit."""
        s = world()
        assert found(s, put(s, Credit("cr-pln_1-schedule-1", "pln_1", "USD", usd("0.00"), "none"))) == []


class TestEvenSplit:
    def test_resplit_must_be_even(self) -> None:
        """A re-split with the same total but uneven parts is flagged only when rescheduled and enabled."""
        s = world()
        uneven = amounts(s, ["101.00", "99.00"])
        assert found(s, uneven, rescheduled=True) == [("even_split", "pln_1")]
        assert found(s, uneven) == []
        assert found(s, uneven, rescheduled=True, even_split=False) == []

    def test_unchanged_amounts_are_not_a_resplit(self) -> None:
        """The same owed amounts (even if uneven to begin with) are not judged again."""
        s = amounts(world(), ["101.00", "99.00"])
        assert found(s, with_plan(s, anchor_day=15), rescheduled=True) == []

    def test_changed_total_is_not_a_resplit(self) -> None:
        """A schedule with a different owed total is judged by conservation, not even_split."""
        s = world()
        assert found(s, amounts(s, ["101.00", "99.01"]), rescheduled=True) == [("conservation", "pln_1")]

    def test_nothing_owed_after(self) -> None:
        """A schedule leaving nothing owed has no split to judge."""
        s = amounts(world(), ["101.00", "99.00"])
        p = s.get("plans", "pln_1")
        paid = put(s, attrs.evolve(p, instalments=tuple(attrs.evolve(i, status="paid", paid_amount=i.amount)
                                                         for i in p.instalments)))
        assert not [f for f in found(s, paid, rescheduled=True) if f[0] == "even_split"]

    def test_even_split_problem(self) -> None:
        """Parts must be floor/ceil, the right number of larger ones, together at the plan's end."""
        m = lambda *xs: [Money(x, "USD") for x in xs]  # noqa: E731
        assert even_split_problem(m(34, 33, 33), "first") is None
        assert even_split_problem(m(33, 33, 34), "last") is None
        assert even_split_problem(m(33, 33, 34), "either") is None
        assert even_split_problem(m(34, 33, 33), "either") is None
        assert even_split_problem(m(33, 33, 33), "first") is None
        assert even_split_problem(m(34, 33, 33), "last") == "the 1 larger part(s) are not together at the last"
        assert even_split_problem(m(33, 33, 34), "first") == "the 1 larger part(s) are not together at the first"
        assert even_split_problem(m(34, 33, 34, 34), "either") == \
            "the 3 larger part(s) are not together at the start or end"
        assert even_split_problem(m(35, 33, 32), "either") == \
            "parts ['0.35', '0.33', '0.32'] are not 1 x 34 and 2 x 33 minor units"
        assert even_split_problem(m(34, 34, 32), "either") is not None
        assert even_split_problem(m(2, 1, 1, 2), "either") is not None
        assert even_split_problem(m(2, 2, 1, 1), "first") is None and even_split_problem(m(1, 1, 2, 2), "last") is None
        assert even_split_problem(m(2, 2, 1, 1), "either") is None
        assert even_split_problem(m(1, 1, 2, 2), "either") is None
        assert even_split_problem(m(1, 2, 2, 1), "either") is not None


class TestAnchorDates:
    def test_off_anchor(self) -> None:
        """An owed instalment off its anchor day is flagged; a paid one is not judged."""
        s = world()
        got = check_plan(s, changed(s, 6, due_date=date(2026, 6, 16)), "pln_1")
        assert [(v.invariant, v.where, v.detail) for v in got] == [
            ("anchor_dates", "pln_1#6", "due 2026-06-16, but anchor day 15 gives day 15 of that month")]
        assert not [v for v in check_plan(s, changed(s, 2, due_date=date(2026, 2, 16), status="paid"), "pln_1")
                    if v.invariant == "anchor_dates"]

    def test_clamped_to_month_end(self) -> None:
        """Anchor 31 gives Feb 28 and Apr 30: those pass, Apr 29 does not."""
        p = plan(amounts=("100.00",) * 12, paid=0, anchor_day=31,
                 instalments=instalments("pln_1", ["100.00"] * 4, anchor=28, start=(2026, 1)))
        fixed = tuple(attrs.evolve(i, due_date=d) for i, d in zip(p.instalments, [
            date(2026, 1, 31), date(2026, 2, 28), date(2026, 3, 31), date(2026, 4, 30)], strict=True))
        s = world(attrs.evolve(p, instalments=fixed))
        assert not [v for v in check_plan(s, s, "pln_1") if v.invariant == "anchor_dates"]
        off = changed(s, 4, due_date=date(2026, 4, 29))
        assert [v.where for v in check_plan(s, off, "pln_1") if v.invariant == "anchor_dates"] == ["pln_1#4"]

    def test_term_end_exception_for_the_last_only(self) -> None:
        """The last live instalment may fall on the term end; any other off-anchor one may not."""
        s = world()
        last = changed(s, 12, due_date=date(2026, 12, 31))
        assert found(s, last) == []
        p = s.get("plans", "pln_1")
        not_last = put(s, with_instalment(with_instalment(p, 12, due_date=date(2027, 1, 15)),
                                          11, due_date=date(2026, 12, 31)))
        assert ("anchor_dates", "pln_1#11") in found(s, not_last)
        p = last.get("plans", "pln_1")
        cancelled_after = put(last, with_instalment(with_instalment(p, 12, status="cancelled"),
                                                    11, due_date=date(2026, 12, 31), amount=usd("200.00")))
        assert found(s, cancelled_after) == []  # #12 cancelled: #11 is now the last live instalment

    def test_term_end_exception_needs_the_term_end(self) -> None:
        """The last instalment off-anchor but not on the term end is flagged."""
        s = world()
        assert found(s, changed(s, 12, due_date=date(2026, 12, 30))) == [("anchor_dates", "pln_1#12")]


class TestScheduleOrder:
    def test_seq_contiguous_from_one(self) -> None:
        """Seqs must run 1..n: a gap or a start at 0 is flagged."""
        s = world()
        p = s.get("plans", "pln_1")
        gap = with_plan(s, instalments=p.instalments[:11] + (attrs.evolve(p.instalments[11], seq=13),))
        assert ("schedule_order", "pln_1") in found(s, gap)
        assert ("schedule_order", "pln_1") not in found(s, s)

    def test_equal_due_dates(self) -> None:
        """Two live instalments on the same date are flagged (strictly increasing)."""
        s = world()
        got = check_plan(s, changed(s, 7, due_date=date(2026, 6, 15)), "pln_1")
        assert [(v.where, v.detail) for v in got if v.invariant == "schedule_order"] == [
            ("pln_1#7", "due 2026-06-15 not after #6 due 2026-06-15")]

    def test_cancelled_ones_are_not_ordered(self) -> None:
        """A cancelled instalment's date is not judged for order or term."""
        s = world()
        got = found(s, changed(s, 12, status="cancelled", due_date=date(2027, 1, 15)))
        assert not [f for f in got if f[0] == "schedule_order"]

    @pytest.mark.parametrize(("start", "end", "bad"), [
        (date(2026, 1, 15), date(2026, 12, 15), False), (date(2026, 1, 16), date(2026, 12, 31), True),
        (date(2026, 1, 1), date(2026, 12, 14), True), (date(2026, 1, 1), date(2026, 12, 15), False),
    ])
    def test_owed_dates_within_the_term(self, start: date, end: date, bad: bool) -> None:
        """An owed instalment due exactly on the term start or end is within the term; a day outside is not."""
        s = world()
        p = s.get("plans", "pln_1")
        owed_first = put(s, attrs.evolve(p, instalments=tuple(attrs.evolve(i, status="planned",
                                                                            paid_amount=usd("0.00"))
                                                               for i in p.instalments)))
        s2 = put(owed_first, policy(term_start=start, term_end=end))
        got = [v for v in check_plan(s2, s2, "pln_1") if v.invariant == "schedule_order"]
        assert bool(got) is bad
        if got:
            assert "outside the term" in got[0].detail

    def test_paid_outside_term_is_fine(self) -> None:
        """A paid instalment before the term start is not judged against the term."""
        s = world()
        s2 = put(s, policy(term_start=date(2026, 2, 1)))
        assert not [v for v in check_plan(s2, s2, "pln_1") if v.invariant == "schedule_order"]


def ep(initial, *states, outcome="act", events=None):
    evs = events or [event(i, "x") for i in range(len(states))]
    return episode(initial, list(zip(evs, states, strict=True)), outcome=outcome)


def kinds(e, **kw):
    return [(v.invariant, v.where) for v in check_episode(e, **kw)]


class TestCheckEpisode:
    def test_changed_plans_only(self) -> None:
        """Only plans the episode changed are judged (a broken untouched plan is not)."""
        broken = amounts(world(), ["99.00"])
        assert kinds(ep(broken, broken)) == []
        assert kinds(ep(world(), broken)) == [("conservation", "pln_1")]

    def test_resplit_judged_on_its_own_state(self) -> None:
        """An uneven re-split is flagged from its set_schedule's states, even when a later call evens it out."""
        s = world()
        uneven = amounts(s, ["101.00", "99.00"])
        e = ep(s, uneven, s, events=[event(0, "set_schedule", {"plan_id": "pln_1"}), event(1, "x")])
        assert kinds(e) == [("even_split", "pln_1")]
        assert kinds(e, even_split=False) == []
        second = ep(s, s, uneven, events=[event(0, "x"), event(1, "set_schedule", {"plan_id": "pln_1"})])
        assert kinds(second) == [("even_split", "pln_1")]
        failed = ep(s, uneven, events=[event(0, "set_schedule", {"plan_id": "pln_1"}, status="error")])
        assert kinds(failed) == []
        other = ep(s, uneven, events=[event(0, "change_due_day", {"plan_id": "pln_1"})])
        assert kinds(other) == []
        bad_args = ep(s, uneven, events=[event(0, "set_schedule", ["pln_1"])])
        assert kinds(bad_args) == []

    @pytest.mark.parametrize("outcome", ["decline", "request_information", "escalate"])
    def test_quiet_outcome(self, outcome: str) -> None:
        """Decline, request_information and escalate with a business change are flagged; act is not."""
        s = world()
        moved = with_plan(s, due_day_changes=1)
        assert kinds(ep(s, moved, outcome=outcome)) == [("quiet_outcome", "episode")]
        assert kinds(ep(s, moved, outcome="act")) == []
        assert kinds(ep(s, moved, outcome=None)) == []

    def test_quiet_outcome_allows_communication(self) -> None:
        """A quiet outcome that only files a communication is fine."""
        from datetime import UTC, datetime

        from simworld._world.models import Decline
        s = world()
        said = put(s, Decline("dec_1", "cus_1", "no", datetime(2026, 4, 20, tzinfo=UTC)))
        assert kinds(ep(s, said, outcome="decline")) == []

    @pytest.mark.parametrize(("refund", "bad"), [("300.00", False), ("300.01", True), ("0.00", False),
                                                 ("-0.01", True)])
    def test_refund_bounds(self, refund: str, bad: bool) -> None:
        """A refund from 0 up to exactly the money paid in (300.00) is fine; below 0 or above is flagged."""
        s = world()
        cancelled = put(s, policy(status="cancelled", refund=usd(refund)))
        got = check_episode(ep(s, cancelled))
        assert [(v.invariant, v.where) for v in got] == ([("refund_bounds", "pol_1")] if bad else [])
        if bad:
            assert got[0].detail == f"refund {refund} outside 0..300.00"

    def test_refund_counts_payment_excess(self) -> None:
        """Unapplied money from a payment counts as paid in."""
        pay = Payment("pay_1", "pln_1", "USD", usd("50.00"), date(2026, 4, 1), "k", unapplied=usd("50.00"))
        s = world(pay)
        assert kinds(ep(s, put(s, policy(status="cancelled", refund=usd("350.00"))))) == []
        assert kinds(ep(s, put(s, policy(status="cancelled", refund=usd("350.01"))))) == [("refund_bounds", "pol_1")]

    def test_policy_without_refund(self) -> None:
        """A changed policy with no refund is not judged."""
        s = world()
        assert kinds(ep(s, put(s, policy(product="car")))) == []

    def test_idempotency(self) -> None:
        """Two payments on a plan under one key are flagged; under two keys, or on two plans, they are not."""
        s = world()
        a = Payment("pay_1", "pln_1", "USD", usd("1.00"), date(2026, 4, 20), "k1")
        b = Payment("pay_2", "pln_1", "USD", usd("1.00"), date(2026, 4, 20), "k1")
        c = Payment("pay_3", "pln_1", "USD", usd("1.00"), date(2026, 4, 20), "k2")
        d = Payment("pay_4", "pln_2", "USD", usd("1.00"), date(2026, 4, 20), "k1")
        got = check_episode(ep(s, put(s, a, b)))
        assert [(v.invariant, v.where, v.detail) for v in got] == [("idempotency", "pay_2", "same key as pay_1")]
        assert kinds(ep(s, put(s, a, c, d))) == []

    def test_idempotency_against_an_existing_payment(self) -> None:
        """A new payment repeating the key of one made before the episode is flagged; old ones alone are not."""
        old = Payment("pay_0", "pln_1", "USD", usd("1.00"), date(2026, 4, 1), "k1")
        old2 = Payment("pay_9", "pln_1", "USD", usd("1.00"), date(2026, 4, 1), "k1")
        s = world(old, old2)
        assert kinds(ep(s, s)) == []
        new = Payment("pay_1", "pln_2", "USD", usd("1.00"), date(2026, 4, 20), "k1")
        assert kinds(ep(s, put(s, new))) == []
        new1 = Payment("pay_1", "pln_1", "USD", usd("1.00"), date(2026, 4, 20), "k1")
        assert ("idempotency", "pay_1") in kinds(ep(s, put(s, new1)))

    def test_clock(self) -> None:
        """An event earlier than the one before is flagged; equal times are fine."""
        s = world()
        evs = [event(0, "x", at="2026-04-20T14:00:00Z"), event(1, "x", at="2026-04-20T14:00:00Z"),
               event(2, "x", at="2026-04-20T13:59:59Z")]
        got = check_episode(ep(s, s, s, s, events=evs))
        assert [(v.invariant, v.where, v.detail) for v in got] == [
            ("clock", "seq 2", "time 2026-04-20T13:59:59Z before 2026-04-20T14:00:00Z")]

    def test_only(self) -> None:
        """``only`` keeps the named invariants; None keeps all."""
        s = world()
        broken = amounts(s, ["99.00"])
        assert kinds(ep(s, broken), only=["clock"]) == []
        assert kinds(ep(s, broken), only=["conservation"]) == [("conservation", "pln_1")]


class TestOnly:
    """Judging some invariants finds exactly what judging all of them finds of those."""

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_a_subset_finds_its_share(self, data: st.DataObject) -> None:
        """check_plan with ``only`` returns the violations of those invariants that a full check returns, in order,
        whatever else is broken (another currency, a negative amount, a paid instalment moved or dropped)."""
        s = world()
        old = s.get("plans", "pln_1")
        items = []
        for inst in old.instalments:
            edit = data.draw(st.sampled_from(["keep", "keep", "drop", "amount", "status", "due", "currency"]))
            if edit == "keep":
                items.append(inst)
            elif edit == "amount":
                items.append(attrs.evolve(inst, amount=usd(data.draw(st.sampled_from(["-1.00", "0.00", "99.99"])))))
            elif edit == "status":
                items.append(attrs.evolve(inst, status=data.draw(st.sampled_from(["paid", "cancelled", "planned"]))))
            elif edit == "due":
                items.append(attrs.evolve(inst, due_date=date(2027, 1, 3)))
            elif edit == "currency":
                items.append(attrs.evolve(inst, amount=Money(inst.amount.minor, "EUR")))
        final = put(s, attrs.evolve(old, instalments=tuple(items)))
        only = data.draw(st.sets(st.sampled_from(INVARIANTS)))
        rescheduled = data.draw(st.booleans())
        every = check_plan(s, final, "pln_1", rescheduled=rescheduled)
        assert check_plan(s, final, "pln_1", rescheduled=rescheduled, only=only) == \
            [v for v in every if v.invariant in only]

    def test_episode_subset(self) -> None:
        """check_episode with ``only`` returns the share of a full check, the episode-wide invariants included."""
        s = world()
        broken = amounts(s, ["99.00"])
        evs = [event(0, "set_schedule", {"plan_id": "pln_1"}, at="2026-04-20T14:00:00Z"),
               event(1, "x", at="2026-04-20T13:00:00Z")]
        sealed = episode(s, list(zip(evs, [broken, broken], strict=True)), outcome="decline")
        every = check_episode(sealed)
        assert {v.invariant for v in every} >= {"conservation", "quiet_outcome", "clock"}
        for only in (["clock"], ["conservation", "quiet_outcome"], ["even_split"], []):
            assert check_episode(sealed, only=only) == [v for v in every if v.invariant in only]
