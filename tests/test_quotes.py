"""Every quote, followed exactly by the matching write, leaves a world that keeps every invariant.

Two kinds of test:

- regressions, one per disagreement an independent reimplementation of the rules found, on
  the small snapshot (each fails on the code before the fix);
- properties over worlds built here directly (any currency exponent, one-year terms with and
  without a 29 February, partial payments, paid-off plans, balances of 0 and 1 minor unit,
  fees and credits): quote_split -> set_schedule, quote_premium_change ->
  record_premium_change + set_schedule, quote_cancellation -> cancel_policy, quote_payoff ->
  apply_payment, each checked with simworld.invariants; and payoff, pro-rata and refund
  computed a second time here, from the written rules, with Fraction.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from simworld._grading.invariants import check_episode, check_plan
from simworld._world.clock import SimClock
from simworld._world.events import Event
from simworld._world.models import Credit, Customer, Fee, Instalment, Plan, Policy
from simworld._world.money import EXPONENTS, Money, format_minor
from simworld._world.policy import DEFAULT_POLICY, PolicyStore
from simworld._world.state import Base, State
from simworld._world.tools import TOOLS
from simworld._world.world import World

STORE = PolicyStore.from_json(DEFAULT_POLICY)
OWED = ("planned", "due", "overdue")


# -- helpers ---------------------------------------------------------------------------------------------------


def ok(world: World, tool: str, args: dict[str, Any]) -> Event:
    """Call ``tool`` and require status ok."""
    done = world.call(tool, args)
    assert done.status == "ok", (tool, args, done.result)
    return done


def broken(world: World, initial: State, since: int, plan_id: str) -> list[str]:
    """Every invariant the calls from event ``since`` on broke, on the plan and episode-wide."""
    found = check_plan(initial, world.state, plan_id)
    episode = SimpleNamespace(initial_state=initial, final_state=world.state, events=world.events[since:],
                              states=world.states[since:], outcome=None)
    found += check_episode(episode)
    return [str(v) for v in found]


def half_even(value: Fraction) -> int:
    """Round once to a whole number, ties to even, written out (not Python's round)."""
    floor = value.numerator // value.denominator
    rest = value - floor
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2 == 1):
        return floor + 1
    return floor


def days_in_term(start: date, end: date) -> int:
    return (end - start).days + 1


def minor(text: str, currency: str) -> int:
    """A decimal string of ``currency`` as minor units, by hand."""
    sign = -1 if text.startswith("-") else 1
    whole, _, fraction = text.lstrip("-").partition(".")
    exp = EXPONENTS[currency]
    assert len(fraction) == exp, text
    return sign * int(whole + fraction)


# -- regressions on the small snapshot ---------------------------------------------------------------------------
# pol_034 / pln_034: USD 1,200.00 over 2026-01-01..2026-12-31, 12 x 100.00 due on the 1st, seq 1-4 paid.
# pol_009: USD 1,200.00 over 2026, 4 x 100.00 paid.


class TestPayoffCountsPartiallyPaidInstalments:
    def test_the_unpaid_rest_of_a_partial_instalment_is_owed(self, world: World) -> None:
        """Regression: 12 x 100.00, 4 paid, #5 paid 40.00 of 100.00 pays off with 760.00, not 700.00."""
        ok(world, "apply_payment", {"plan_id": "pln_034", "amount": "40.00", "idempotency_key": "part"})
        plan = world.state.get("plans", "pln_034")
        assert [(i.status, str(i.paid_amount)) for i in plan.instalments[3:6]] == [
            ("paid", "100.00"), ("partially_paid", "40.00"), ("planned", "0.00")]
        quote = ok(world, "quote_payoff", {"plan_id": "pln_034", "as_of": "2026-04-20"}).result
        assert (quote["unpaid"], quote["payoff"]) == ("760.00", "760.00")

    def test_paying_the_payoff_pays_every_instalment(self, world: World) -> None:
        """Paying the quoted 760.00 leaves all 12 instalments paid and a payoff of 0.00, with no credit."""
        initial = world.state
        ok(world, "apply_payment", {"plan_id": "pln_034", "amount": "40.00", "idempotency_key": "part"})
        payoff = ok(world, "quote_payoff", {"plan_id": "pln_034", "as_of": "2026-04-20"}).result["payoff"]
        ok(world, "apply_payment", {"plan_id": "pln_034", "amount": payoff, "idempotency_key": "payoff"})
        assert {i.status for i in world.state.get("plans", "pln_034").instalments} == {"paid"}
        assert world.state.children("credits", "plan_id", "pln_034") == []
        assert ok(world, "quote_payoff", {"plan_id": "pln_034", "as_of": "2026-04-20"}).result["payoff"] == "0.00"
        assert broken(world, initial, 0, "pln_034") == []


class TestPremiumChangeNeverQuotesAZeroInstalment:
    def _three_owed(self, world: World) -> State:
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [
            {"due_date": f"2026-{m}-01", "amount": "100.00"} for m in (10, 11, 12)]})
        return world.state

    def test_a_balance_smaller_than_the_count_goes_on_fewer_instalments(self, world: World) -> None:
        """Regression: 3 x 100.00 owed, new balance 0.02 quoted [0.01, 0.01, 0.00]; now [0.01, 0.01], followable."""
        before = self._three_owed(world)
        since = len(world.events)
        # From the term's first day the delta is exactly the annual difference: 900.02 - 1200.00 = -299.98.
        args = {"policy_id": "pol_034", "new_annual_premium": "900.02", "effective_date": "2026-01-01"}
        quote = ok(world, "quote_premium_change", args).result
        assert (quote["delta"], quote["new_unpaid_balance"], quote["credit"]) == ("-299.98", "0.02", "0.00")
        assert quote["instalments"] == [{"due_date": "2026-10-01", "amount": "0.01"},
                                        {"due_date": "2026-11-01", "amount": "0.01"}]
        ok(world, "record_premium_change", args)
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": quote["instalments"],
                                   "credit": quote["credit"]})
        assert broken(world, before, since, "pln_034") == []

    @pytest.mark.parametrize(("new", "expected"), [
        ("900.00", []),                                   # balance 0.00: nothing owed, no credit
        ("900.01", ["0.01"]),                             # one minor unit: one instalment
        ("900.03", ["0.01", "0.01", "0.01"]),             # as many minor units as instalments
        ("900.04", ["0.02", "0.01", "0.01"]),             # the delta's leftover unit goes last: -99.99 there
    ])
    def test_tiny_balances(self, world: World, new: str, expected: list[str]) -> None:
        """New balances of 0 to 4 minor units over 3 instalments: no zero instalment, each followable."""
        before = self._three_owed(world)
        since = len(world.events)
        args = {"policy_id": "pol_034", "new_annual_premium": new, "effective_date": "2026-01-01"}
        quote = ok(world, "quote_premium_change", args).result
        assert [i["amount"] for i in quote["instalments"]] == expected and quote["credit"] == "0.00"
        ok(world, "record_premium_change", args)
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": quote["instalments"]})
        assert broken(world, before, since, "pln_034") == []

    def test_a_share_that_would_zero_one_instalment_resplits_evenly(self, world: World) -> None:
        """0.01 + 500.00 owed, delta -0.02: the shares would leave 0.00 and 499.99; the balance is split instead."""
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [
            {"due_date": "2026-11-01", "amount": "0.01"}, {"due_date": "2026-12-01", "amount": "500.00"}]})
        quote = ok(world, "quote_premium_change", {"policy_id": "pol_034", "new_annual_premium": "1199.98",
                                                   "effective_date": "2026-01-01"}).result
        assert [i["amount"] for i in quote["instalments"]] == ["249.99", "250.00"]


class TestQuoteSplitNeverQuotesAZeroInstalment:
    def test_more_parts_than_minor_units_is_refused(self, world: World) -> None:
        """0.02 owed into 3 would be [0.01, 0.01, 0.00]: refused, naming the most parts; 2 parts are quoted."""
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [{"due_date": "2026-12-01", "amount": "0.02"}]})
        refused = world.call("quote_split", {"plan_id": "pln_034", "count": 3})
        assert refused.status == "error" and "at most 2" in refused.result["error"]
        quote = ok(world, "quote_split", {"plan_id": "pln_034", "count": 2}).result
        assert [i["amount"] for i in quote["instalments"]] == ["0.01", "0.01"]


class TestChangesAfterADecreaseToACredit:
    def _never_paid(self, world: World) -> State:
        plan = world.state.get("plans", "pln_034")
        world.put(attrs.evolve(plan, instalments=tuple(
            attrs.evolve(i, seq=i.seq - 4, id=f"pln_034-{i.seq - 4}") for i in plan.instalments if i.seq > 4)))
        return world.state

    def _follow(self, world: World, new: str, effective: str = "2026-01-01") -> dict[str, Any]:
        args = {"policy_id": "pol_034", "new_annual_premium": new, "effective_date": effective}
        quote = ok(world, "quote_premium_change", args).result
        ok(world, "record_premium_change", args)
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": quote["instalments"],
                                   "credit": quote["credit"]})
        return quote

    def test_an_empty_schedule_on_a_plan_left_with_no_instalments_is_accepted(self, world: World) -> None:
        """A decrease empties a never-paid plan; the next quote's empty schedule is written, not refused."""
        before, since = self._never_paid(world), len(world.events)
        assert self._follow(world, "1.00")["credit"] == "399.00"  # 800.00 owed, -1,199.00
        assert (self._follow(world, "1.00")["credit"], world.state.get("plans", "pln_034").instalments) == ("0.00", ())
        assert broken(world, before, since, "pln_034") == []

    def test_an_increase_is_paid_from_the_credit_first(self, world: World) -> None:
        """After a decrease left 399.00 of credit, +1.00 uses 1.00 of it (credit -1.00), with no new instalment."""
        before, since = self._never_paid(world), len(world.events)
        self._follow(world, "1.00")
        quote = self._follow(world, "2.00")
        assert (quote["delta"], quote["instalments"], quote["credit"]) == ("1.00", [], "-1.00")
        assert ok(world, "quote_payoff", {"plan_id": "pln_034", "as_of": "2026-04-20"}).result["credit"] == "398.00"
        assert broken(world, before, since, "pln_034") == []

    def test_an_increase_beyond_the_credit_bills_the_rest(self, world: World) -> None:
        """+500.00 against 399.00 of credit uses it all and bills 101.00 on the next anchor date."""
        before, since = self._never_paid(world), len(world.events)
        self._follow(world, "1.00")
        quote = self._follow(world, "501.00")
        assert (quote["credit"], quote["instalments"]) == ("-399.00", [{"due_date": "2026-01-01", "amount": "101.00"}])
        assert broken(world, before, since, "pln_034") == []

    def test_a_schedule_cannot_use_credit_the_plan_does_not_hold(self, world: World) -> None:
        """set_schedule with a negative credit beyond what the plan holds is an argument error, changing nothing."""
        before = world.state.hash
        done = world.call("set_schedule", {"plan_id": "pln_034", "instalments": [], "credit": "-0.01"})
        assert done.status == "error" and "credit the plan holds" in done.result["error"]
        assert world.state.hash == before

    def test_a_credit_granted_while_instalments_stay_owed_breaks_conservation(self, world: World) -> None:
        """Crediting a decrease instead of lowering the instalments nets out, but is still flagged."""
        before, since = world.state, len(world.events)
        args = {"policy_id": "pol_034", "new_annual_premium": "1100.00", "effective_date": "2026-01-01"}
        ok(world, "record_premium_change", args)
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [
            {"due_date": f"2026-{m:02d}-01", "amount": "100.00"} for m in range(5, 13)], "credit": "100.00"})
        found = set(broken(world, before, since, "pln_034"))  # the plan's check and the episode's, alike
        assert len(found) == 1 and "granted while 800.00 is still owed" in found.pop()


class TestPremiumIncreaseOnAPaidOffPlan:
    def test_the_increase_is_a_new_instalment_at_the_term_end(self, world: World) -> None:
        """Regression: a paid-off plan's +50.41 quoted no instalment and no credit; now one, on the term end."""
        ok(world, "apply_payment", {"plan_id": "pln_034", "amount": "800.00", "idempotency_key": "all"})
        before, since = world.state, len(world.events)
        args = {"policy_id": "pol_034", "new_annual_premium": "1250.41", "effective_date": "2026-01-01"}
        quote = ok(world, "quote_premium_change", args).result
        # The last instalment is due on 1 December; the next anchor date (1 January) is past the term.
        assert (quote["delta"], quote["new_unpaid_balance"], quote["credit"]) == ("50.41", "50.41", "0.00")
        assert quote["instalments"] == [{"due_date": "2026-12-31", "amount": "50.41"}]
        ok(world, "record_premium_change", args)
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": quote["instalments"]})
        plan = world.state.get("plans", "pln_034")
        assert [(i.seq, str(i.amount), i.status) for i in plan.instalments[-2:]] == [
            (12, "100.00", "paid"), (13, "50.41", "planned")]
        assert broken(world, before, since, "pln_034") == []

    def test_the_increase_falls_on_the_next_anchor_date(self, world: World) -> None:
        """Paid off by June, an increase from 15 July falls due on the next anchor date, 1 August."""
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [
            {"due_date": "2026-05-01", "amount": "400.00"}, {"due_date": "2026-06-01", "amount": "400.00"}]})
        ok(world, "apply_payment", {"plan_id": "pln_034", "amount": "800.00", "idempotency_key": "all"})
        before, since = world.state, len(world.events)
        args = {"policy_id": "pol_034", "new_annual_premium": "1250.41", "effective_date": "2026-07-15"}
        quote = ok(world, "quote_premium_change", args).result
        assert quote["delta"] == "23.48"  # 50.41 x 170 / 365 = 23.4788...
        assert quote["instalments"] == [{"due_date": "2026-08-01", "amount": "23.48"}]
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": quote["instalments"]})
        ok(world, "record_premium_change", args)
        assert broken(world, before, since, "pln_034") == []

    def test_no_date_left_in_the_term_is_refused_by_quote_and_write_alike(self, world: World) -> None:
        """With an instalment paid on the term end itself there is no date to bill on: both refuse, alike."""
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [
            {"due_date": "2026-12-31", "amount": "800.00"}]})
        ok(world, "apply_payment", {"plan_id": "pln_034", "amount": "800.00", "idempotency_key": "all"})
        args = {"policy_id": "pol_034", "new_annual_premium": "1250.41", "effective_date": "2026-06-01"}
        quote, write = world.call("quote_premium_change", args), world.call("record_premium_change", args)
        assert (quote.status, write.status) == ("error", "error")
        assert "no due date is left in the term" in quote.result["error"]
        assert quote.result["error"].replace("quote_premium_change", "record_premium_change") == write.result["error"]


class TestCancellationEarnsOverThePremiumHistory:
    def test_earned_is_split_at_the_change_date(self, world: World) -> None:
        """Regression: 1,200 -> 2,400 from 2025-07-01, cancelled 2025-10-01, earns 1,200.00 (was 1,795.07).

        1,200 x 181/365 + 2,400 x 92/365 = 438,000 / 365 = 1,200 exactly.
        """
        policy = world.state.get("policies", "pol_009")
        world.put(attrs.evolve(policy, term_start=date(2025, 1, 1), term_end=date(2025, 12, 31)))
        assert Fraction(1200 * 181 + 2400 * 92, 365) == 1200
        ok(world, "record_premium_change", {"policy_id": "pol_009", "new_annual_premium": "2400.00",
                                            "effective_date": "2025-07-01"})
        quote = ok(world, "quote_cancellation", {"policy_id": "pol_009", "cancel_date": "2025-10-01"}).result
        # The term's premium: 1,200.00 + 1,200 x 184/365 (604.93) for the rest of the term at 2,400.
        assert (quote["earned"], quote["premium"], quote["unearned"]) == ("1200.00", "1804.93", "604.93")
        assert (quote["paid"], quote["refund"]) == ("400.00", "0.00")

    def test_a_cancellation_before_the_change_earns_at_the_old_premium(self, world: World) -> None:
        """A change effective after the cancel date earns nothing at the new premium."""
        ok(world, "record_premium_change", {"policy_id": "pol_009", "new_annual_premium": "2400.00",
                                            "effective_date": "2026-07-01"})
        quote = ok(world, "quote_cancellation", {"policy_id": "pol_009", "cancel_date": "2026-04-20"}).result
        assert quote["earned"] == format_minor(half_even(Fraction(120000 * 109, 365)), "USD") == "358.36"

    def test_a_premium_decrease_credit_is_not_money_paid_in(self, world: World) -> None:
        """A decrease beyond the balance leaves a credit; cancelling refunds what was paid in, not that twice."""
        # pln_034 has 400.00 paid and 800.00 unpaid; 1,200 -> 300 from day one: credit 100.00.
        args = {"policy_id": "pol_034", "new_annual_premium": "300.00", "effective_date": "2026-01-01"}
        quote = ok(world, "quote_premium_change", args).result
        assert (quote["instalments"], quote["credit"]) == ([], "100.00")
        ok(world, "record_premium_change", args)
        ok(world, "set_schedule", {"plan_id": "pln_034", "instalments": [], "credit": quote["credit"]})
        cancel = ok(world, "quote_cancellation", {"policy_id": "pol_034", "cancel_date": "2026-04-20"}).result
        earned = half_even(Fraction(30000 * 109, 365))  # 89.59
        assert (cancel["paid"], cancel["earned"]) == ("400.00", format_minor(earned, "USD"))
        assert cancel["refund"] == format_minor(40000 - earned, "USD") == "310.41"  # not 410.41


class TestProRataByTheDaysOfTheTerm:
    def _leap(self, world: World, policy_id: str = "pol_001") -> Policy:
        policy = attrs.evolve(world.state.get("policies", policy_id), term_start=date(2028, 1, 1),
                              term_end=date(2028, 12, 31))
        world.put(policy)
        return policy

    def test_a_change_from_day_one_of_a_leap_term_is_the_annual_difference(self, world: World) -> None:
        """Regression: +120.00 from 2028-01-01 was 120 x 366/365 = 120.33; it is 120.00 over 366 of 366 days."""
        self._leap(world)
        quote = ok(world, "quote_premium_change", {"policy_id": "pol_001", "new_annual_premium": "1620.00",
                                                   "effective_date": "2028-01-01"}).result
        assert (quote["delta"], quote["days_remaining"], quote["days_in_term"]) == ("120.00", 366, 366)

    def test_cancelling_on_the_last_day_of_a_leap_term_earns_365_of_366_days(self, world: World) -> None:
        """1,500.00 x 365/366 = 1,495.90: below the premium by the rule itself, with no cap needed."""
        self._leap(world)
        quote = ok(world, "quote_cancellation", {"policy_id": "pol_001", "cancel_date": "2028-12-31"}).result
        assert (quote["earned"], quote["unearned"], quote["days_in_term"]) == ("1495.90", "4.10", 366)

    @pytest.mark.parametrize(("new", "delta"), [("1500.01", "0.00"), ("1500.03", "0.02"), ("1500.05", "0.02")])
    def test_exact_halves_round_to_even(self, world: World, new: str, delta: str) -> None:
        """183 of 366 days is exactly half: 0.005 -> 0.00, 0.015 -> 0.02, 0.025 -> 0.02 (rounded once, half even)."""
        self._leap(world)
        quote = ok(world, "quote_premium_change", {"policy_id": "pol_001", "new_annual_premium": new,
                                                   "effective_date": "2028-07-02"}).result
        assert (quote["days_remaining"], quote["delta"]) == (183, delta)


class TestReadsAndWritesAcceptTheSameInputs:
    @pytest.mark.parametrize("premium", ["0", "0.00", "-5.00"])
    def test_a_premium_of_zero_or_below_is_refused_by_both(self, world: World, premium: str) -> None:
        """Regression: quote_premium_change quoted a new premium of 0 or below that record_premium_change refuses."""
        args = {"policy_id": "pol_001", "new_annual_premium": premium, "effective_date": "2026-05-01"}
        quote, write = world.call("quote_premium_change", args), world.call("record_premium_change", args)
        assert (quote.status, write.status) == ("error", "error")
        assert "must be positive" in quote.result["error"] and "must be positive" in write.result["error"]

    def test_a_cancelled_policy_is_denied_by_both(self, world: World) -> None:
        """After cancel_policy, the premium-change and cancellation quotes are denied like their writes."""
        ok(world, "cancel_policy", {"policy_id": "pol_001", "cancel_date": "2026-04-20", "refund_amount": "0.00"})
        for quote, write, args in [
            ("quote_premium_change", "record_premium_change",
             {"policy_id": "pol_001", "new_annual_premium": "1620.00", "effective_date": "2026-05-01"}),
            ("quote_cancellation", "cancel_policy", {"policy_id": "pol_001", "cancel_date": "2026-04-20"})]:
            assert world.call(quote, args).status == "denied"
            write_args = {**args, "refund_amount": "0.00"} if write == "cancel_policy" else args
            assert world.call(write, write_args).status == "denied"

    def test_no_quote_gives_an_amount_the_writes_refuse(self, world: World) -> None:
        """Regression: a quote could give an amount past the 15 integer digits set_schedule accepts; now refused."""
        top = "999999999999999.00"
        ok(world, "set_schedule", {"plan_id": "pln_001", "instalments": [
            {"due_date": "2026-05-01", "amount": top}, {"due_date": "2026-06-01", "amount": top}]})
        refusals = [
            world.call("quote_split", {"plan_id": "pln_001", "count": 3}),
            world.call("quote_payoff", {"plan_id": "pln_001", "as_of": "2026-04-20"}),
            world.call("quote_premium_change", {"policy_id": "pol_001", "new_annual_premium": "2600.00",
                                                "effective_date": "2026-01-01"}),
            world.call("record_premium_change", {"policy_id": "pol_001", "new_annual_premium": "2600.00",
                                                 "effective_date": "2026-01-01"}),
        ]
        assert [e.status for e in refusals] == ["error"] * 4
        assert all("15 integer digits" in e.result["error"] for e in refusals)
        # What a quote gives at the limit, a write takes.
        assert world.call("set_schedule", {"plan_id": "pln_001", "instalments": [
            {"due_date": "2026-05-01", "amount": top}]}).status == "ok"


# -- properties over built worlds --------------------------------------------------------------------------------


def _term_end(start: date) -> date:
    """The day before the first anniversary (1 March after a 29 February in a common year)."""
    try:
        anniversary = date(start.year + 1, start.month, start.day)
    except ValueError:
        anniversary = date(start.year + 1, 3, 1)
    return anniversary - timedelta(days=1)


def _anchor_dates(start: date, end: date, anchor: int) -> list[date]:
    out = []
    for k in range(14):
        year, month = start.year + (start.month - 1 + k) // 12, (start.month - 1 + k) % 12 + 1
        last = (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
        day = date(year, month, min(anchor, last))
        if start <= day <= end:
            out.append(day)
    return out


@st.composite
def worlds(draw: st.DrawFn) -> SimpleNamespace:
    """A world of one customer, one policy over a one-year term and its plan, in any state of payment."""
    currency = draw(st.sampled_from(["USD", "EUR", "JPY", "KRW", "KWD", "BHD"]))
    start = draw(st.one_of(
        st.dates(date(2023, 1, 1), date(2030, 12, 31)),
        # terms holding a 29 February, starting on one, and ending the day before one
        st.sampled_from([date(2024, 1, 1), date(2023, 3, 1), date(2027, 12, 31), date(2024, 2, 29),
                         date(2028, 2, 28), date(2023, 3, 31), date(2027, 3, 1), date(2025, 3, 1)])))
    end = _term_end(start)
    anchor = draw(st.one_of(st.integers(28, 31), st.integers(1, 31)))
    dates = _anchor_dates(start, end, anchor)
    n = draw(st.integers(1, min(len(dates), 12)))
    offset = draw(st.integers(0, len(dates) - n))
    due = dates[offset:offset + n]
    tiny = st.integers(1, 3)
    amounts = draw(st.lists(st.one_of(tiny, st.integers(1, 10**7), st.integers(1, 10**12)), min_size=n, max_size=n))
    paid = draw(st.integers(0, n))
    partial = paid < n and amounts[paid] >= 2 and draw(st.booleans())
    instalments = []
    for seq, (day, amount) in enumerate(zip(due, amounts, strict=True), 1):
        if seq <= paid:
            status, paid_amount = "paid", amount
        elif seq == paid + 1 and partial:
            status, paid_amount = "partially_paid", draw(st.integers(1, amount - 1))
        else:
            status, paid_amount = "planned", 0
        instalments.append(Instalment(f"pln_t-{seq}", seq, day, Money(amount, currency), Money(paid_amount, currency),
                                      status, day))
    total = sum(amounts)
    premium = draw(st.one_of(st.just(total), st.integers(1, 2 * total + 10)))
    today = start + timedelta(days=draw(st.integers(0, (end - start).days)))
    tables: dict[str, dict[str, Any]] = {
        "customers": {"cus_t": Customer("cus_t", "Test Holder", "holder@example.com", True, "UTC")},
        "policies": {"pol_t": Policy("pol_t", "cus_t", "home", currency, start, end, Money(premium, currency))},
        "plans": {"pln_t": Plan("pln_t", "pol_t", currency, anchor, "monthly",
                                draw(st.sampled_from(["first", "last", "either"])), tuple(instalments))},
        "fees": {}, "credits": {},
    }
    if draw(st.booleans()):
        charged = start + timedelta(days=draw(st.integers(0, (end - start).days)))
        tables["fees"]["fee_t"] = Fee("fee_t", "pln_t", currency, "late", Money(draw(st.integers(1, 10**5)), currency),
                                      draw(st.sampled_from(["open", "open", "waived"])), charged)
    if draw(st.booleans()):
        tables["credits"]["cr_t"] = Credit("cr_t", "pln_t", currency, Money(draw(st.integers(1, 10**5)), currency),
                                           "goodwill")
    state = State.of(Base.build(tables))
    world = World(state, SimClock(datetime(today.year, today.month, today.day, 12, tzinfo=UTC)), STORE, dict(TOOLS))
    owed = sum(a for a, i in zip(amounts, instalments, strict=True) if i.status in OWED)
    event(f"{currency} exponent {EXPONENTS[currency]}")
    event("term holds 29 February" if (end - start).days == 365 else "365-day term")
    event("paid off" if paid == n else "partially paid" if partial else "unpaid left")
    event("balance of 0 or 1 minor unit" if owed <= 1 else "larger balance")
    return SimpleNamespace(world=world, initial=state, currency=currency, start=start, end=end, premium=premium)


def _new_premium(draw: st.DrawFn, w: SimpleNamespace, effective: date) -> int:
    """A new annual premium: anywhere, or one that leaves the unpaid balance at a few minor units."""
    plan = w.world.state.get("plans", "pln_t")
    owed = sum(i.amount.minor for i in plan.instalments if i.status in OWED)
    # From the term's first day the delta is the annual difference, so the new balance is old + new - premium.
    near_zero = [w.premium - owed + k for k in range(-2, 5)] if effective == w.start else []
    choices = [p for p in near_zero if p > 0]
    anywhere = st.integers(1, 3 * w.premium + 100)
    return draw(st.one_of(anywhere, st.sampled_from(choices)) if choices else anywhere)


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _follow_premium_change(world: World, args: dict[str, str]) -> bool:
    """Quote a premium change and, when the quote is ok, record it and write its schedule exactly."""
    quote = world.call("quote_premium_change", args)
    if quote.status != "ok":
        return False
    ok(world, "record_premium_change", args)
    ok(world, "set_schedule", {"plan_id": "pln_t", "instalments": quote.result["instalments"],
                               "credit": quote.result["credit"]})
    return True


class TestQuotesFollowedExactly:
    @PROPERTY
    @given(w=worlds(), count=st.integers(1, 12), remainder=st.sampled_from(["first", "last"]))
    def test_quote_split_then_set_schedule(self, w: SimpleNamespace, count: int, remainder: str) -> None:
        """A split quote written back keeps every invariant, asked as the policy says (the plan's remainder end,
        the last date within the term)."""
        world = w.world
        side = world.state.get("plans", "pln_t").remainder
        remainder = side if side in ("first", "last") else remainder
        quote = world.call("quote_split", {"plan_id": "pln_t", "count": count, "remainder": remainder})
        if quote.status != "ok":
            plan = world.state.get("plans", "pln_t")
            owed = sum(i.amount.minor for i in plan.instalments if i.status in OWED)
            assert owed < count, quote.result["error"]  # nothing to split, or fewer minor units than parts
            return
        if quote.result["instalments"][-1]["due_date"] > w.end.isoformat():
            return  # quote_split does not judge the policy: a split past the term end breaks split_bounds
        ok(world, "set_schedule", {"plan_id": "pln_t", "instalments": quote.result["instalments"]})
        assert broken(world, w.initial, 0, "pln_t") == []

    @PROPERTY
    @given(w=worlds(), data=st.data(), remainder=st.sampled_from(["first", "last"]), write_first=st.booleans())
    def test_quote_premium_change_then_record_and_set_schedule(self, w: SimpleNamespace, data: st.DataObject,
                                                                remainder: str, write_first: bool) -> None:
        """A premium-change quote followed by record_premium_change and set_schedule keeps every invariant."""
        world = w.world
        effective = data.draw(st.one_of(st.just(w.start), st.dates(w.start, w.end)))
        new = _new_premium(data.draw, w, effective)
        args = {"policy_id": "pol_t", "new_annual_premium": format_minor(new, w.currency),
                "effective_date": effective.isoformat()}
        quote = world.call("quote_premium_change", {**args, "remainder": remainder})
        if quote.status != "ok":
            write = world.call("record_premium_change", args)  # the write refuses it the same way
            assert (write.status, write.result["error"]) == (
                quote.status, quote.result["error"].replace("quote_premium_change", "record_premium_change"))
            return
        q = quote.result
        amounts = [minor(i["amount"], w.currency) for i in q["instalments"]]
        assert all(a > 0 for a in amounts)
        new_balance = minor(q["unpaid_balance"], w.currency) + minor(q["delta"], w.currency)
        credit = minor(q["credit"], w.currency)
        assert sum(amounts) - credit == new_balance  # what is billed, less the credit left (or plus what is used)
        assert credit <= 0 or amounts == []  # a credit only when nothing stays owed
        if credit < 0:  # an increase on a paid-off plan, paid from the credit the plan holds first
            assert q["unpaid_balance"] == format_minor(0, w.currency)
            assert -credit <= sum(c.amount.minor for c in world.state.records("credits"))
        calls = [("record_premium_change", args),
                 ("set_schedule", {"plan_id": "pln_t", "instalments": q["instalments"], "credit": q["credit"]})]
        for tool, call_args in reversed(calls) if write_first else calls:  # the scenarios' solutions do both
            ok(world, tool, call_args)
        assert broken(world, w.initial, 0, "pln_t") == []

    @PROPERTY
    @given(w=worlds(), data=st.data())
    def test_quote_cancellation_then_cancel_policy(self, w: SimpleNamespace, data: st.DataObject) -> None:
        """After any premium changes (each followed), a cancellation quote written back keeps every invariant."""
        world = w.world
        for effective in sorted(data.draw(st.sets(st.dates(w.start, w.end), max_size=2))):
            args = {"policy_id": "pol_t", "new_annual_premium": format_minor(_new_premium(data.draw, w, effective),
                                                                             w.currency),
                    "effective_date": effective.isoformat()}
            if not _follow_premium_change(world, args):
                break
        when = data.draw(st.dates(w.start, w.end))
        q = ok(world, "quote_cancellation", {"policy_id": "pol_t", "cancel_date": when.isoformat()}).result
        assert minor(q["earned"], w.currency) + minor(q["unearned"], w.currency) == minor(q["premium"], w.currency)
        assert 0 <= minor(q["refund"], w.currency) <= minor(q["paid"], w.currency)
        ok(world, "cancel_policy", {"policy_id": "pol_t", "cancel_date": when.isoformat(),
                                    "refund_amount": q["refund"]})
        assert broken(world, w.initial, 0, "pln_t") == []

    @PROPERTY
    @given(w=worlds(), data=st.data())
    def test_quote_payoff_then_apply_payment(self, w: SimpleNamespace, data: st.DataObject) -> None:
        """Paying the quoted payoff keeps every invariant and leaves a payoff of zero."""
        world = w.world
        as_of = data.draw(st.dates(w.start, w.end)).isoformat()
        payoff = ok(world, "quote_payoff", {"plan_id": "pln_t", "as_of": as_of}).result["payoff"]
        if minor(payoff, w.currency) == 0:
            return
        ok(world, "apply_payment", {"plan_id": "pln_t", "amount": payoff, "idempotency_key": "payoff"})
        assert broken(world, w.initial, 0, "pln_t") == []
        assert minor(ok(world, "quote_payoff", {"plan_id": "pln_t", "as_of": as_of}).result["payoff"], w.currency) == 0


# -- the same figures, computed again from the written rules --------------------------------------------------------


def rule_payoff(state: State, as_of: date) -> int:
    """Owed on instalments (unpaid, and the rest of partially paid ones) + fees open by as_of - credit, >= 0."""
    plan = state.get("plans", "pln_t")
    owed = sum(i.amount.minor - i.paid_amount.minor for i in plan.instalments
               if i.status in ("planned", "due", "overdue", "partially_paid"))
    fees = sum(f.amount.minor for f in state.records("fees") if f.status == "open" and f.charged_on <= as_of)
    credit = sum(c.amount.minor for c in state.records("credits"))
    return max(owed + fees - credit, 0)


def rule_delta(start: date, end: date, old: int, new: int, effective: date) -> int:
    """(new - old) x days from the effective date through the term end / days in the term, rounded once."""
    return half_even(Fraction((new - old) * ((end - effective).days + 1), days_in_term(start, end)))


def rule_cancellation(start: date, end: date, history: list[tuple[date, int]], paid_in: int,
                      when: date) -> tuple[int, int, int]:
    """(term premium, earned, refund): each premium over the days it was in force before ``when``.

    ``history`` is the premium in force from each date on, the first from the term start, in date order.
    """
    days = days_in_term(start, end)
    bounds = [d for d, _ in history] + [end + timedelta(days=1)]
    earned = Fraction(0)
    for (since, premium), until in zip(history, bounds[1:], strict=True):
        earned += Fraction(premium * max((min(until, when) - since).days, 0), days)
    term = history[0][1] + sum(rule_delta(start, end, old, new, since)
                               for (_, old), (since, new) in zip(history, history[1:], strict=False))
    earned_minor = min(max(half_even(earned), 0), term)
    return term, earned_minor, max(paid_in - earned_minor, 0)


class TestTheRulesComputedTwice:
    @PROPERTY
    @given(w=worlds(), data=st.data())
    def test_payoff(self, w: SimpleNamespace, data: st.DataObject) -> None:
        """quote_payoff is the rule's payoff, as of any date."""
        as_of = data.draw(st.dates(w.start - timedelta(days=30), w.end))
        q = ok(w.world, "quote_payoff", {"plan_id": "pln_t", "as_of": as_of.isoformat()}).result
        assert minor(q["payoff"], w.currency) == rule_payoff(w.world.state, as_of)

    @PROPERTY
    @given(w=worlds(), data=st.data())
    def test_pro_rata(self, w: SimpleNamespace, data: st.DataObject) -> None:
        """quote_premium_change's delta is the rule's, over the days of the actual term."""
        effective = data.draw(st.one_of(st.just(w.start), st.just(w.end), st.dates(w.start, w.end)))
        new = _new_premium(data.draw, w, effective)
        result = w.world.call("quote_premium_change", {"policy_id": "pol_t", "new_annual_premium": format_minor(
            new, w.currency), "effective_date": effective.isoformat()})
        if result.status == "ok":
            assert minor(result.result["delta"], w.currency) == rule_delta(w.start, w.end, w.premium, new, effective)
            if effective == w.start:
                assert minor(result.result["delta"], w.currency) == new - w.premium

    @PROPERTY
    @given(w=worlds(), data=st.data())
    def test_refund(self, w: SimpleNamespace, data: st.DataObject) -> None:
        """quote_cancellation's premium, earned and refund are the rule's, after any premium changes."""
        world = w.world
        history = [(w.start, w.premium)]
        for effective in sorted(data.draw(st.sets(st.dates(w.start + timedelta(days=1), w.end), max_size=3))):
            new = _new_premium(data.draw, w, effective)
            args = {"policy_id": "pol_t", "new_annual_premium": format_minor(new, w.currency),
                    "effective_date": effective.isoformat()}
            if not _follow_premium_change(world, args):
                break
            history.append((effective, new))
        plan = world.state.get("plans", "pln_t")
        paid_in = sum(i.paid_amount.minor for i in plan.instalments)  # no payment here left anything unapplied
        when = data.draw(st.one_of(st.just(w.start), st.just(w.end), st.dates(w.start, w.end)))
        q = ok(world, "quote_cancellation", {"policy_id": "pol_t", "cancel_date": when.isoformat()}).result
        term, earned, refund = rule_cancellation(w.start, w.end, history, paid_in, when)
        assert (minor(q["premium"], w.currency), minor(q["earned"], w.currency), minor(q["refund"], w.currency)) == (
            term, earned, refund)

