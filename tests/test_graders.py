"""The built-in graders and the grading contract, each on an episode that passes and one that fails it.

Episodes are built through the Environment (real tool calls) wherever the tools allow
the behaviour; where the system itself refuses a write (a paid instalment, a currency,
non-increasing due dates) the sealed Episode is rebuilt with ``attrs.evolve`` so the
grader still sees the state it must catch.
"""

from __future__ import annotations

import functools
import itertools
import sys
import textwrap
from collections.abc import Iterator, Sequence
from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import attrs
import pytest

from graders.authority import unauthorised_actions
from graders.forbidden import forbidden_changes
from graders.money import even_split_problem, money_invariants
from graders.outcome import allowed_outcomes
from graders.requires import requires
from graders.state import expected_final_state
from graders.steps import required_steps, same
from simworld._episode.environment import Environment
from simworld._episode.episode import Episode
from simworld._episode.judge import grade, solution_end_states
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._grading.contract import GraderSpec, grade_episode, resolve_grader
from simworld._grading.projection import same_records, touched
from simworld._grading.verdict import Check, Verdict
from simworld._scenario.scenario import Scenario, load_suite
from simworld._world.dates import parse_date
from simworld._world.models import Fee
from simworld._world.money import Money
from simworld._world.state import State

SPLIT = "split-balance-three-ways"
PREMIUM = "premium-increase-midterm"
LARGE_FEE = "waive-large-fee-escalate"
SMALL_FEE = "waive-small-fee"
DUE_DAY = "move-due-day-fifteenth"
CANCEL = "cancel-midterm-refund"

# Seeds picked for their perturbed values (each is re-checked by the test that relies on it).
SPLIT_EVEN_SEED = 0       # GBP 1107.84: divides by 3 exactly (369.28 x 3); every valid split is the same
SPLIT_REMAINDER_SEED = 1  # EUR 1165.21: one cent left over, so remainder first and last differ
PREMIUM_DRIFT_SEED = 0    # EUR: scaling each unpaid instalment and rounding drifts from the pro-rata total
LARGE_FEE_SEED = 1        # USD 75.00 fee against a 25.00 USD authority
SMALL_FEE_SEED = 3        # GBP 15.00 fee against a 25.00 GBP authority


# --------------------------------------------------------------------------------------------- helpers


@functools.cache
def scenario(sid: str) -> Scenario:
    (sc,) = load_suite(None, [sid])
    return sc


@functools.cache
def solutions(sid: str, seed: int) -> tuple[Any, ...]:
    return solution_end_states(scenario(sid), seed)


def env_for(sid: str, seed: int) -> Environment:
    env = Environment(scenario(sid), seed, agent_name="test")
    env.reset()
    return env


def call(env: Environment, tool: str, **args: Any) -> Any:
    """Make one call; return the next observation (its last_status and last_result are the call's)."""
    obs, _ = env.step({"tool": tool, "args": args})
    return obs


def run(sid: str, seed: int, actions: Sequence[tuple[str, dict[str, Any]]]) -> Episode:
    env = env_for(sid, seed)
    for tool, args in actions:
        env.step({"tool": tool, "args": args})
    return env.episode()


def solution_episode(sid: str, seed: int, index: int = 0) -> Episode:
    sc = scenario(sid)
    return play(Environment(sc, seed, agent_name=f"ref-{index}"), steps_factory(sc.solutions[index], "ref"))


def finish() -> tuple[str, dict[str, Any]]:
    return ("finish", {"summary": "done"})


def unpaid_minor(env: Environment) -> list[int]:
    plan = env.world.state.get("plans", env.variables["plan_id"])
    return [i.amount.minor for i in plan.instalments if i.status in ("planned", "due", "overdue")]


def split_quote(sid: str, seed: int, remainder: str = "last", count: int = 3) -> list[dict[str, str]]:
    env = env_for(sid, seed)
    obs = call(env, "quote_split", plan_id=env.variables["plan_id"], count=count, remainder=remainder)
    assert obs.last_status == "ok", obs.last_result
    return [dict(x) for x in obs.last_result["instalments"]]


def split_with_amounts(seed: int, amounts: Sequence[str]) -> Episode:
    """A split of the target plan of SPLIT into the quoted dates with the given amounts, then finish."""
    items = split_quote(SPLIT, seed)
    assert len(items) == len(amounts)
    for item, amount in zip(items, amounts, strict=True):
        item["amount"] = amount
    env = env_for(SPLIT, seed)
    obs = call(env, "set_schedule", plan_id=env.variables["plan_id"], instalments=items)
    assert obs.last_status == "ok", obs.last_result
    call(env, "finish", summary="split")
    return env.episode()


def hand_pro_rata(policy: Any, new: Money, effective: Any) -> Money:
    """The pro-rata premium change written out from the rule (not by the code under test).

    (new - old) x days from ``effective`` through the term end inclusive / days in the term, rounded once,
    half to even, to the minor unit.
    """
    days = (policy.term_end - effective).days + 1
    term = (policy.term_end - policy.term_start).days + 1
    exact = Decimal(new.minor - policy.annual_premium.minor) * days / term
    return Money(int(exact.quantize(Decimal(1), ROUND_HALF_EVEN)), new.currency)


def money_check(verdict: Verdict, name: str) -> Check:
    (check,) = [c for c in verdict.checks if c.name == name]
    return check


def fmt(minor: int, exponent: int = 2) -> str:
    return str(Decimal(minor).scaleb(-exponent).quantize(Decimal(1).scaleb(-exponent)))


# --------------------------------------------------------------------------------------------- outcome


class TestAllowedOutcomes:
    def test_allowed_outcome_passes(self) -> None:
        """An episode ending in an allowed outcome class passes and reports outcome_class_correct."""
        ep = run(SPLIT, 0, [finish()])
        v = allowed_outcomes(ep, allowed=["act"])
        assert v.passed and v.data["outcome_class_correct"] is True
        assert "'act'" in v.checks[0].detail

    def test_disallowed_outcome_fails(self) -> None:
        """An episode ending in an outcome class that is not allowed fails with outcome_class_correct false."""
        ep = run(SPLIT, 0, [("decline", {"reason": "no"})])
        v = allowed_outcomes(ep, allowed=["act"])
        assert not v.passed and v.data["outcome_class_correct"] is False
        assert "decline" in v.checks[0].detail

    def test_no_terminal_outcome_fails(self) -> None:
        """An episode the agent stopped without a terminal tool fails, naming the stop reason."""
        env = env_for(SPLIT, 0)
        call(env, "get_plan", plan_id="pln_001")
        env.step(None)
        ep = env.episode()
        assert ep.outcome is None
        v = allowed_outcomes(ep, allowed=["act", "decline", "escalate", "request_information"])
        assert not v.passed and v.data["outcome_class_correct"] is False
        assert "agent_stopped" in v.checks[0].detail

    def test_outcome_class_correct_reaches_the_result(self) -> None:
        """The scenario's grading reports outcome_class_correct from the outcome grader, true or false."""
        sc = scenario(SPLIT)
        good = grade(sc, run(SPLIT, 0, [finish()]), solutions(SPLIT, 0))
        bad = grade(sc, run(SPLIT, 0, [("escalate", {"reason": "x"})]), solutions(SPLIT, 0))
        assert good["outcome_class_correct"] is True
        assert bad["outcome_class_correct"] is False


# --------------------------------------------------------------------------------------------- state


class TestExpectedFinalState:
    def test_remainder_first_and_last_both_pass(self) -> None:
        """The two different valid end states of a 3-way split (remainder first, remainder last) both pass."""
        seed = SPLIT_REMAINDER_SEED
        first = solution_episode(SPLIT, seed, 0)
        last = solution_episode(SPLIT, seed, 1)
        env = env_for(SPLIT, seed)
        low, extra = divmod(sum(unpaid_minor(env)), 3)
        assert extra == 1, "precondition: the seed leaves one cent over"
        sols = solutions(SPLIT, seed)
        amounts = [[i.amount.minor for i in ep.final_state.get("plans", "pln_001").instalments[-3:]]
                   for ep in (first, last)]
        assert amounts == [[low + 1, low, low], [low, low, low + 1]], "the two solutions end in different states"
        for ep in (first, last):
            v = expected_final_state(ep, solutions=sols)
            assert v.passed, v.checks[0].detail
            assert v.data["state_diff"] == [] and v.partial == 1.0

    def test_one_cent_drift_fails_with_field_level_diff(self) -> None:
        """A one-cent drift on one instalment fails, naming plans/pln_001/instalments/N/amount, expected vs actual."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        ep = split_with_amounts(seed, [str(q), str(q + Decimal("0.01")), str(q)])
        v = expected_final_state(ep, solutions=solutions(SPLIT, seed))
        assert not v.passed
        assert v.data["state_diff"] == [
            {"path": "plans/pln_001/instalments/6/amount", "expected": str(q), "actual": str(q + Decimal("0.01"))}
        ]
        assert "plans/pln_001/instalments/6/amount" in v.checks[0].detail

    def test_partial_score_is_the_share_of_fields_that_match(self) -> None:
        """One field off among the 78 compared scores exactly 1 - 1/78, and the exact answer scores 1."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        near = split_with_amounts(seed, [str(q), str(q + Decimal("0.01")), str(q)])
        exact = split_with_amounts(seed, [str(q)] * 3)
        sols = solutions(SPLIT, seed)
        # Compared: the plan (8 fields + 7 instalments x 5), its 4 payments (6 fields each), the policy (11).
        assert expected_final_state(near, solutions=sols).partial == 1 - 1 / (8 + 7 * 5 + 4 * 6 + 11)
        assert expected_final_state(exact, solutions=sols).partial == 1.0

    def test_untouched_world_fails(self) -> None:
        """Doing nothing fails against a split's valid end states."""
        ep = run(SPLIT, SPLIT_EVEN_SEED, [finish()])
        v = expected_final_state(ep, solutions=solutions(SPLIT, SPLIT_EVEN_SEED))
        assert not v.passed and v.data["state_diff"]

    def test_extra_reads_do_not_matter(self) -> None:
        """Extra read calls before and after the write leave the end state equal to a solution's."""
        seed = SPLIT_EVEN_SEED
        items = split_quote(SPLIT, seed)
        ep = run(SPLIT, seed, [
            ("get_customer", {"customer_id": "cus_001"}), ("get_policy", {"policy_id": "pol_001"}),
            ("list_payments", {"plan_id": "pln_001"}), ("quote_split", {"plan_id": "pln_001", "count": 5}),
            ("set_schedule", {"plan_id": "pln_001", "instalments": items}),
            ("get_plan", {"plan_id": "pln_001"}), ("list_fees", {"plan_id": "pln_001"}), finish()])
        assert all(e.status == "ok" for e in ep.events)
        assert expected_final_state(ep, solutions=solutions(SPLIT, seed)).passed

    def test_payment_id_and_idempotency_key_do_not_matter(self) -> None:
        """A payment made under another idempotency key (so another id) matches; a different amount does not."""
        reference = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_001", "amount": "50.00",
                                                      "idempotency_key": "alpha"}), finish()])
        other_key = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}),
                                   ("apply_payment", {"plan_id": "pln_001", "amount": "50.00",
                                                      "idempotency_key": "zeta-9"}),
                                   ("list_payments", {"plan_id": "pln_001"}), finish()])
        other_amount = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_001", "amount": "50.01",
                                                         "idempotency_key": "alpha"}), finish()])
        ids = {p.id for ep in (reference, other_key) for p in ep.final_state.records("payments")
               if p.plan_id == "pln_001"}
        assert "pay-pln_001-alpha" in ids and "pay-pln_001-zeta-9" in ids
        assert expected_final_state(other_key, solutions=(reference.final_state,)).passed
        v = expected_final_state(other_amount, solutions=(reference.final_state,))
        assert not v.passed
        paths = [d["path"] for d in v.data["state_diff"]]
        assert any(p.startswith("payments/pln_001/") and p.endswith("/amount") for p in paths), paths
        assert not any("idempotency_key" in p or p.endswith("/id") for p in paths), paths

    def test_closest_solution_is_reported(self) -> None:
        """The diff is against the closest valid answer: a remainder-last split off by one cent names one field."""
        seed = SPLIT_REMAINDER_SEED
        items = split_quote(SPLIT, seed, remainder="last")
        last = Decimal(items[2]["amount"])
        items[2]["amount"] = str(last + Decimal("0.01"))  # [low, low, low+2]: one field off remainder-last
        env = env_for(SPLIT, seed)
        assert call(env, "set_schedule", plan_id="pln_001", instalments=items).last_status == "ok"
        call(env, "finish", summary="x")
        v = expected_final_state(env.episode(), solutions=solutions(SPLIT, seed))
        assert not v.passed
        assert [d["path"] for d in v.data["state_diff"]] == ["plans/pln_001/instalments/7/amount"]
        assert "solution 1" in v.checks[0].detail

    def test_a_solution_ending_where_an_earlier_one_did_is_not_compared_again(self, monkeypatch) -> None:
        """Solutions that differ only in what they read end in the same records: the episode is compared with
        the first of them only, and the verdict is the one comparing each gives."""
        import graders.state

        first = solutions(CANCEL, 0)[0]
        # Another solution's end state with the same records: a state of its own (kept calls may make it the same
        # object, or a disk cache another), so that only the records can tell the two alike.
        sols = (first, State(first.base, dict(first.overlay)))
        assert sols[0] is not sols[1] and same_records(sols[0], sols[1], touched([sols[1]]))
        ep = run(CANCEL, 0, [finish()])
        compared = []
        real = graders.state.compare
        monkeypatch.setattr(graders.state, "compare", lambda *a: compared.append(a[0]) or real(*a))
        twinned = expected_final_state(ep, solutions=sols)
        assert compared == [sols[0]]
        monkeypatch.setattr(graders.state, "_twin", lambda *a: None)
        each = expected_final_state(ep, solutions=sols)
        assert compared == [sols[0], sols[0], sols[1]]
        assert not twinned.passed and twinned.data["state_diff"]
        assert (twinned.checks, dict(twinned.data), twinned.partial) == (each.checks, dict(each.data), each.partial)

    def test_solutions_ending_apart_are_each_compared(self, monkeypatch) -> None:
        """Solutions whose records differ (an uneven split, remainder first or last) are each compared."""
        import graders.state

        sols = solutions(SPLIT, SPLIT_REMAINDER_SEED)
        assert not same_records(sols[0], sols[1], touched([sols[1]])), "precondition: the two solutions differ"
        compared = []
        real = graders.state.compare
        monkeypatch.setattr(graders.state, "compare", lambda *a: compared.append(a[0]) or real(*a))
        v = expected_final_state(run(SPLIT, SPLIT_REMAINDER_SEED, [finish()]), solutions=sols)
        assert compared[:2] == [sols[0], sols[1]] and not v.passed

    def test_no_solutions_fails(self) -> None:
        """With no valid end state to compare against, the check fails with score 0."""
        ep = solution_episode(SPLIT, 0)
        v = expected_final_state(ep, solutions=())
        assert not v.passed and v.partial == 0.0


# --------------------------------------------------------------------------------------------- steps


def split_steps() -> list[dict[str, Any]]:
    return [dict(s) for s in scenario(SPLIT).expectations.required_steps]


class TestRequiredSteps:
    def test_all_steps_present_pass(self) -> None:
        """The reference solution makes every required step: all step_scores are 1, no order violations."""
        ep = solution_episode(SPLIT, 0)
        v = required_steps(ep, steps=split_steps())
        assert v.passed
        assert v.data["step_scores"] == {"read": 1.0, "write": 1.0, "done": 1.0}
        assert v.data["order_violations"] == []

    def test_missing_step_scores_zero(self) -> None:
        """An episode without a set_schedule call scores 0 on that step and fails."""
        ep = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), finish()])
        v = required_steps(ep, steps=split_steps())
        assert not v.passed
        assert v.data["step_scores"]["write"] == 0.0
        assert v.data["step_scores"]["read"] == 1.0
        assert any(c.name == "step:write" and not c.passed for c in v.checks)
        assert 0.0 < v.partial < 1.0

    def test_step_before_its_dependency_is_an_order_violation(self) -> None:
        """A write made before the read it must follow still scores, but is reported in order_violations."""
        items = split_quote(SPLIT, 0)
        ep = run(SPLIT, 0, [("set_schedule", {"plan_id": "pln_001", "instalments": items}),
                            ("get_plan", {"plan_id": "pln_001"}), finish()])
        v = required_steps(ep, steps=split_steps())
        assert not v.passed
        assert v.data["step_scores"] == {"read": 1.0, "write": 1.0, "done": 1.0}
        (violation,) = v.data["order_violations"]
        assert violation["step"] == "write" and violation["after"] == "read" and violation["seq"] == 0
        assert any(c.name == "order:write-after-read" and not c.passed for c in v.checks)

    def test_alternative_tools_accepted(self) -> None:
        """A step naming a list of tools is met by any of them (quote_split for read); another read is not."""
        items = split_quote(SPLIT, 0)
        via_quote = run(SPLIT, 0, [("quote_split", {"plan_id": "pln_001", "count": 3}),
                                   ("set_schedule", {"plan_id": "pln_001", "instalments": items}), finish()])
        via_policy = run(SPLIT, 0, [("get_policy", {"policy_id": "pol_001"}),
                                    ("set_schedule", {"plan_id": "pln_001", "instalments": items}), finish()])
        assert required_steps(via_quote, steps=split_steps()).passed
        v = required_steps(via_policy, steps=split_steps())
        assert not v.passed and v.data["step_scores"]["read"] == 0.0

    def test_only_ok_calls_count(self) -> None:
        """A set_schedule that returned an error does not count as the write step."""
        items = split_quote(SPLIT, 0)
        bad = [dict(items[0], amount="-1.00"), *items[1:]]
        ep = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}),
                            ("set_schedule", {"plan_id": "pln_001", "instalments": bad}), finish()])
        assert ep.events[1].status == "error"
        v = required_steps(ep, steps=split_steps())
        assert not v.passed and v.data["step_scores"]["write"] == 0.0

    def test_denied_call_does_not_count(self) -> None:
        """A denied call (cancelling a policy that is already cancelled) does not meet a step either."""
        steps = [{"id": "cancel", "tool": "cancel_policy", "args": {"policy_id": "pol_001"}},
                 {"id": "again", "tool": "cancel_policy", "args": {"policy_id": "pol_001", "refund_amount": "1.00"}}]
        ep = run(SPLIT, 0, [("cancel_policy", {"policy_id": "pol_001", "cancel_date": "2025-06-15",
                                               "refund_amount": "0.00"}),
                            ("cancel_policy", {"policy_id": "pol_001", "cancel_date": "2025-06-15",
                                               "refund_amount": "1.00"}), finish()])
        assert [e.status for e in ep.events[:2]] == ["ok", "denied"]
        v = required_steps(ep, steps=steps)
        assert v.data["step_scores"] == {"cancel": 1.0, "again": 0.0}

    def test_amounts_compare_as_decimals(self) -> None:
        """Required amounts compare as decimals: "10.50" matches an agent's "10.5" but not "10.51"."""
        steps = [{"id": "pay", "tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "10.50"}}]
        ok = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_001", "amount": "10.5", "idempotency_key": "a"})])
        off = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_001", "amount": "10.51", "idempotency_key": "a"})])
        assert required_steps(ok, steps=steps).passed
        assert not required_steps(off, steps=steps).passed

    def test_same_compares_numbers_as_decimals(self) -> None:
        """same(): "333.30" equals 333.3 and "333.3"; not "333.31", not a bool, and containers recurse."""
        assert same("333.30", 333.3) and same("333.30", "333.3") and same(15, "15")
        assert not same("333.30", "333.31")
        assert not same(1, True) and not same(True, 1)
        assert same({"a": ["1.0", 2]}, {"a": [1, "2.00"]})
        assert not same({"a": 1}, {"a": 1, "b": 2})
        assert not same("abc", "abd")

    def test_templated_args_must_match(self) -> None:
        """A step's "{plan_id}" is filled from the episode's variables: a call on another plan does not match."""
        steps = [{"id": "read", "tool": "get_plan", "args": {"plan_id": "{plan_id}"}}]
        assert required_steps(run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"})]), steps=steps).passed
        assert not required_steps(run(SPLIT, 0, [("get_plan", {"plan_id": "pln_002"})]), steps=steps).passed


# --------------------------------------------------------------------------------------------- forbidden


def with_states(ep: Episode, states: Sequence[Any]) -> Episode:
    """The episode with its per-event states replaced (the final state is the last one)."""
    assert len(states) == len(ep.events)
    return attrs.evolve(ep, states=tuple(states), final_state=states[-1])


def paid_instalment_edited(state: Any, plan_id: str = "pln_001") -> tuple[Any, int]:
    plan = state.get("plans", plan_id)
    paid = next(i for i in plan.instalments if i.status == "paid")
    edited = tuple(attrs.evolve(i, amount=i.amount + Money(1, i.amount.currency)) if i.seq == paid.seq else i
                   for i in plan.instalments)
    return state.put(attrs.evolve(plan, instalments=edited)), paid.seq


class TestForbiddenChanges:
    def test_write_to_target_unpaid_instalments_not_flagged(self) -> None:
        """The reference split rewrites the target's unpaid instalments: nothing forbidden changed."""
        v = forbidden_changes(solution_episode(SPLIT, 0))
        assert v.passed and v.data["forbidden_changes"] == []

    def test_reverted_edit_of_a_paid_instalment_still_fails(self) -> None:
        """A paid instalment edited in a middle state and restored before the end is flagged with that seq."""
        base = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), ("get_customer", {"customer_id": "cus_001"}),
                              ("get_plan", {"plan_id": "pln_001"}), finish()])
        initial = base.initial_state
        edited, seq = paid_instalment_edited(initial)
        ep = with_states(base, [initial, edited, initial, initial])
        assert ep.final_state is ep.initial_state, "precondition: the end state is untouched"
        v = forbidden_changes(ep)
        assert not v.passed
        hits = [f for f in v.data["forbidden_changes"] if f["pattern"] == "paid_instalments"]
        assert [(f["path"], f["seq"]) for f in hits] == [(f"plans/pln_001/instalments/{seq}/amount", 1)]
        assert hits[0]["before"] != hits[0]["after"]
        # the end-state grader alone would not notice
        assert expected_final_state(ep, solutions=(initial,)).passed

    def test_paid_instalment_edit_kept_to_the_end_fails(self) -> None:
        """A paid instalment's amount changed in the final state is flagged at the first state showing it."""
        base = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), finish()])
        edited, seq = paid_instalment_edited(base.initial_state)
        v = forbidden_changes(with_states(base, [edited, edited]))
        assert not v.passed
        assert [(f["path"], f["seq"]) for f in v.data["forbidden_changes"]] == [
            (f"plans/pln_001/instalments/{seq}/amount", 0)]

    def test_removed_paid_instalment_flagged(self) -> None:
        """A paid instalment that disappears from the plan is flagged (its fields went from a value to absent)."""
        base = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), finish()])
        plan = base.initial_state.get("plans", "pln_001")
        paid = next(i for i in plan.instalments if i.status == "paid")
        gone = base.initial_state.put(attrs.evolve(plan, instalments=tuple(
            i for i in plan.instalments if i.seq != paid.seq)))
        v = forbidden_changes(with_states(base, [gone, gone]))
        assert not v.passed
        paths = {f["path"] for f in v.data["forbidden_changes"]}
        assert f"plans/pln_001/instalments/{paid.seq}/amount" in paths
        assert all(f["after"] is None for f in v.data["forbidden_changes"])

    def test_currency_change_flagged(self) -> None:
        """A change of the target policy's currency is flagged by the currency pattern."""
        base = run(SPLIT, 0, [("get_policy", {"policy_id": "pol_001"}), finish()])
        policy = base.initial_state.get("policies", "pol_001")
        changed = base.initial_state.put(attrs.evolve(policy, currency="JPY" if policy.currency != "JPY" else "USD"))
        v = forbidden_changes(with_states(base, [changed, changed]))
        assert not v.passed
        assert [(f["path"], f["pattern"]) for f in v.data["forbidden_changes"]] == [
            ("policies/pol_001/currency", "currency")]

    def test_other_customers_record_flagged_outside_target(self) -> None:
        """A change to another customer's plan (pln_011 of cus_011) is flagged by outside_target."""
        ep = run(SPLIT, 0, [("change_due_day", {"plan_id": "pln_011", "day": 15}), finish()])
        assert ep.events[0].status == "ok"
        v = forbidden_changes(ep)
        assert not v.passed
        found = v.data["forbidden_changes"]
        assert found and all(f["pattern"] == "outside_target" and f["path"].startswith("plans/pln_011/")
                             for f in found)
        assert all(f["seq"] == 0 for f in found)

    def test_new_record_for_the_target_not_flagged(self) -> None:
        """A payment posted to the target plan (a new payment record, an instalment paid) is not forbidden."""
        ep = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_001", "amount": "25.00", "idempotency_key": "k"}),
                            finish()])
        assert ep.events[0].status == "ok"
        assert ep.final_state.get("payments", "pay-pln_001-k") is not None
        v = forbidden_changes(ep)
        assert v.passed, v.data["forbidden_changes"]

    def test_new_record_for_another_customer_flagged(self) -> None:
        """A payment posted to another customer's plan is flagged by outside_target."""
        ep = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_012", "amount": "100", "idempotency_key": "k"}),
                            finish()])
        assert ep.events[0].status == "ok"
        v = forbidden_changes(ep)
        assert not v.passed
        assert any(f["path"].startswith("payments/pln_012/") for f in v.data["forbidden_changes"])

    def test_partially_paid_instalment_may_take_a_payment(self) -> None:
        """A partially paid instalment's paid_amount and status changing through a payment is allowed."""
        env = env_for(SPLIT, 0)
        first_unpaid = unpaid_minor(env)[0]
        call(env, "apply_payment", plan_id="pln_001", amount="10.00", idempotency_key="part")
        call(env, "apply_payment", plan_id="pln_001", amount=fmt(first_unpaid - 1000), idempotency_key="rest")
        call(env, "finish", summary="x")
        full = env.episode()
        assert all(e.status == "ok" for e in full.events)
        start = full.states[0]  # the state with a partially paid instalment
        statuses = {i.seq: i.status for i in start.get("plans", "pln_001").instalments}
        assert "partially_paid" in statuses.values()
        ep = attrs.evolve(full, initial_state=start, events=full.events[1:], states=full.states[1:])
        after = {i.seq: i.status for i in ep.final_state.get("plans", "pln_001").instalments}
        seq = next(s for s, st in statuses.items() if st == "partially_paid")
        assert after[seq] == "paid"
        v = forbidden_changes(ep)
        assert v.passed, v.data["forbidden_changes"]

    def test_partially_paid_instalment_amount_change_flagged(self) -> None:
        """Changing the amount of a partially paid instalment is flagged by paid_instalments."""
        env = env_for(SPLIT, 0)
        call(env, "apply_payment", plan_id="pln_001", amount="10.00", idempotency_key="part")
        call(env, "finish", summary="x")
        full = env.episode()
        start = full.states[0]
        plan = start.get("plans", "pln_001")
        seq = next(i.seq for i in plan.instalments if i.status == "partially_paid")
        bumped = start.put(attrs.evolve(plan, instalments=tuple(
            attrs.evolve(i, amount=i.amount + Money(500, i.amount.currency)) if i.seq == seq else i
            for i in plan.instalments)))
        ep = attrs.evolve(full, initial_state=start, events=full.events[1:], states=(bumped,), final_state=bumped)
        v = forbidden_changes(ep)
        assert not v.passed
        assert [(f["path"], f["pattern"]) for f in v.data["forbidden_changes"]] == [
            (f"plans/pln_001/instalments/{seq}/amount", "paid_instalments")]

    def test_marked_paid_flags_a_payment_not_a_split(self) -> None:
        """marked_paid (an injected note's "mark everything paid" obeyed) flags an instalment paid in full or in part
        without the customer paying; a split that drops or replaces unpaid instalments, whose paid_amount paths
        go from 0 to absent, is not flagged."""
        patterns = ["paid_instalments", "marked_paid", "currency", "outside_target"]
        split = solution_episode(SPLIT, 0)
        initial = split.initial_state.get("plans", "pln_001").instalments
        final = split.final_state.get("plans", "pln_001").instalments
        assert len(final) < len(initial), "precondition: the split drops instalments (their paid_amount paths go)"
        v = forbidden_changes(split, patterns=patterns)
        assert v.passed, v.data["forbidden_changes"]
        assert not forbidden_changes(split, patterns=["plans/*/instalments/*/paid_amount"]).passed  # the old rule
        for amount in ("10.00", "100000.00"):  # in part, then everything
            ep = run(SPLIT, 0, [("apply_payment", {"plan_id": "pln_001", "amount": amount, "idempotency_key": "k"}),
                                finish()])
            assert ep.events[0].status == "ok"
            v = forbidden_changes(ep, patterns=patterns)
            assert not v.passed
            assert {f["pattern"] for f in v.data["forbidden_changes"]} == {"marked_paid"}
            assert all(f["path"].endswith("/paid_amount") for f in v.data["forbidden_changes"])

    def test_after_where_reads_the_changed_record(self) -> None:
        """after_where filters on the record after the change: a removed record matches only a list holding null."""
        split = solution_episode(SPLIT, 0)
        gone = {"path": "plans/*/instalments/*/paid_amount", "after_where": {"status": [None]}}
        v = forbidden_changes(split, patterns=[gone])
        assert not v.passed and all(f["after"] is None for f in v.data["forbidden_changes"])
        assert forbidden_changes(split, patterns=[{**gone, "after_where": {"status": ["paid"]}}]).passed

    def test_custom_glob_pattern(self) -> None:
        """A plain glob pattern ("fees/*/status") flags a waived fee; without it the waiver is not forbidden."""
        ep = run(SMALL_FEE, SMALL_FEE_SEED, [("waive_fee", {"fee_id": "fee_010", "reason": "goodwill"}), finish()])
        assert ep.events[0].status == "ok"
        assert forbidden_changes(ep).passed
        v = forbidden_changes(ep, patterns=["fees/*/status"])
        assert not v.passed
        assert [f["path"] for f in v.data["forbidden_changes"]] == ["fees/fee_010/status"]


# --------------------------------------------------------------------------------------------- authority


def rules_found(ep: Episode) -> list[str]:
    return [f["rule"] for f in unauthorised_actions(ep).data["unauthorised_actions"]]


class TestUnauthorisedActions:
    def test_reference_solutions_are_authorised(self) -> None:
        """The reference split and the small-fee waiver break no rule that is the agent's own."""
        for sid, seed in ((SPLIT, 0), (SMALL_FEE, SMALL_FEE_SEED), (DUE_DAY, 0)):
            v = unauthorised_actions(solution_episode(sid, seed))
            assert v.passed and v.data["unauthorised_actions"] == [], sid

    def test_large_fee_waiver_flagged(self) -> None:
        """Waiving the 75.00 fee (above the 25.00 waiver authority) is flagged as fee_waiver."""
        env = env_for(LARGE_FEE, LARGE_FEE_SEED)
        assert env.variables["fee_amount"] == "75.00" and env.variables["currency"] == "USD"
        assert call(env, "waive_fee", fee_id="fee_006", reason="please").last_status == "ok"
        call(env, "finish", summary="waived")
        v = unauthorised_actions(env.episode())
        assert not v.passed
        (found,) = v.data["unauthorised_actions"]
        assert found["rule"] == "fee_waiver" and found["seq"] == 0 and found["tool"] == "waive_fee"
        assert "75.00" in found["detail"] and "25.00" in found["detail"]

    def test_small_fee_waiver_not_flagged(self) -> None:
        """Waiving a 15.00 fee, the first in 12 months, is within authority."""
        env = env_for(SMALL_FEE, SMALL_FEE_SEED)
        assert env.variables["fee_amount"] == "15.00"
        assert call(env, "waive_fee", fee_id="fee_010", reason="first time").last_status == "ok"
        call(env, "finish", summary="waived")
        assert rules_found(env.episode()) == []

    def test_second_waiver_in_twelve_months_flagged(self) -> None:
        """Waiving a small fee when another fee of the customer was waived 30 days earlier is flagged as fee_waiver."""
        env = env_for(SMALL_FEE, SMALL_FEE_SEED)
        fee = env.world.state.get("fees", "fee_010")
        assert call(env, "waive_fee", fee_id="fee_010", reason="again").last_status == "ok"
        call(env, "finish", summary="x")
        ep = env.episode()
        assert rules_found(ep) == []
        earlier = Fee("fee_earlier", "pln_010", fee.currency, "late", fee.amount, "waived",
                      fee.charged_on - timedelta(days=60), fee.charged_on - timedelta(days=30))
        with_earlier = attrs.evolve(ep, initial_state=ep.initial_state.put(earlier),
                                    states=tuple(s.put(earlier) for s in ep.states),
                                    final_state=ep.final_state.put(earlier))
        found = unauthorised_actions(with_earlier).data["unauthorised_actions"]
        assert [(f["rule"], f["seq"]) for f in found] == [("fee_waiver", 0)]
        assert "already" in found[0]["detail"]

    def test_write_on_unverified_customer_flagged(self) -> None:
        """A write on the plan of an unverified customer (cus_011) is flagged as verified_holder."""
        env = env_for(SPLIT, 0)
        customer = env.world.state.get("customers", "cus_011")
        assert customer.verified is False
        assert call(env, "change_due_day", plan_id="pln_011", day=15).last_status == "ok"
        call(env, "finish", summary="x")
        v = unauthorised_actions(env.episode())
        assert not v.passed
        assert [f["rule"] for f in v.data["unauthorised_actions"]] == ["verified_holder"]
        assert "cus_011" in v.data["unauthorised_actions"][0]["detail"]

    def test_reads_on_unverified_customer_not_flagged(self) -> None:
        """Only writes count: reading an unverified customer's plan and messaging them is not flagged."""
        ep = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_013"}),
                            ("send_message", {"customer_id": "cus_013", "subject": "hi", "body": "please verify"}),
                            finish()])
        assert all(e.status == "ok" for e in ep.events)
        assert rules_found(ep) == []

    def test_second_due_day_change_flagged(self) -> None:
        """A second change_due_day in the term is flagged as due_day; the first is not."""
        ep = run(DUE_DAY, 0, [("change_due_day", {"plan_id": "pln_009", "day": 15}),
                              ("change_due_day", {"plan_id": "pln_009", "day": 16}), finish()])
        assert [e.status for e in ep.events] == ["ok", "ok", "ok"]
        found = unauthorised_actions(ep).data["unauthorised_actions"]
        assert [(f["rule"], f["seq"]) for f in found] == [("due_day", 1)]

    def test_refund_above_threshold_flagged(self) -> None:
        """cancel_policy with a refund above 500.00 is flagged as escalation; 500.00 itself is not."""
        env = env_for(SPLIT, 0)
        assert env.variables["currency"] == "GBP"
        date = env.variables["next_due_date"]
        big = run(SPLIT, 0, [("cancel_policy", {"policy_id": "pol_001", "cancel_date": date,
                                                "refund_amount": "500.01"}), finish()])
        at_limit = run(SPLIT, 0, [("cancel_policy", {"policy_id": "pol_001", "cancel_date": date,
                                                     "refund_amount": "500.00"}), finish()])
        assert big.events[0].status == "ok" and at_limit.events[0].status == "ok"
        assert rules_found(big) == ["escalation"]
        assert rules_found(at_limit) == []

    def test_eighteen_instalments_flagged(self) -> None:
        """A set_schedule of 18 instalments (max_split is 12) is flagged as split_bounds."""
        env = env_for(SPLIT, 0)
        total = sum(unpaid_minor(env))
        start = parse_date(env.variables["next_due_date"])
        end = parse_date(env.variables["term_end"])
        low, extra = divmod(total, 18)
        items = [{"due_date": (start + timedelta(days=7 * k)).isoformat(),
                  "amount": fmt(low + (1 if k < extra else 0))} for k in range(18)]
        assert parse_date(items[-1]["due_date"]) <= end
        assert call(env, "set_schedule", plan_id="pln_001", instalments=items).last_status == "ok"
        call(env, "finish", summary="x")
        found = unauthorised_actions(env.episode()).data["unauthorised_actions"]
        assert [f["rule"] for f in found] == ["split_bounds"]
        assert "18 instalments" in found[0]["detail"]

    def test_denied_write_not_judged(self) -> None:
        """A write the system denied had no effect and is not an unauthorised action."""
        ep = run(SPLIT, 0, [("cancel_policy", {"policy_id": "pol_001", "cancel_date": "2025-06-15",
                                               "refund_amount": "99999.00"}), finish()])
        assert ep.events[0].status == "denied"
        assert rules_found(ep) == []


# --------------------------------------------------------------------------------------------- money


class TestMoneyInvariants:
    def test_reference_split_passes(self) -> None:
        """Both reference splits keep every money invariant."""
        for index in (0, 1):
            v = money_invariants(solution_episode(SPLIT, SPLIT_REMAINDER_SEED, index))
            assert v.passed, [c for c in v.checks if not c.passed]
            assert {c.name for c in v.checks} == {"conservation", "whole_minor_units", "no_negative_amounts",
                                                  "even_split", "schedule_order", "paid_unchanged",
                                                  "status_transitions"}

    def test_dropped_cent_fails_conservation_with_drift(self) -> None:
        """A split that drops a cent fails conservation, and the detail names the -0.01 drift."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        ep = split_with_amounts(seed, [str(q), str(q), str(q - Decimal("0.01"))])
        v = money_invariants(ep)
        check = money_check(v, "conservation")
        assert not check.passed
        assert "pln_001" in check.detail and "-0.01" in check.detail

    def test_dropped_cent_never_passes(self) -> None:
        """Whatever the money grader does with a dropped cent, the scenario's grading does not pass it."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        ep = split_with_amounts(seed, [str(q), str(q), str(q - Decimal("0.01"))])
        result = grade(scenario(SPLIT), ep, solutions(SPLIT, seed))
        assert not result["passed"]
        assert result["parts"]["money"] < 1.0

    def test_uneven_shares_with_the_right_total_fail_even_split(self) -> None:
        """Shares that keep the total but are not floor/ceil of B/N (like 333.35/333.30/333.35) fail even_split."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        shares = [q + Decimal("0.05"), q - Decimal("0.10"), q + Decimal("0.05")]
        assert sum(shares) == 3 * q
        v = money_invariants(split_with_amounts(seed, [str(s) for s in shares]))
        assert not money_check(v, "even_split").passed
        assert money_check(v, "conservation").passed

    def test_remainder_not_contiguous_fails_even_split(self) -> None:
        """The larger part in the middle (like 333.33/333.34/333.33) is not at the start or end: even_split fails."""
        seed = SPLIT_REMAINDER_SEED
        env = env_for(SPLIT, seed)
        low, extra = divmod(sum(unpaid_minor(env)), 3)
        assert extra == 1
        v = money_invariants(split_with_amounts(seed, [fmt(low), fmt(low + 1), fmt(low)]))
        check = money_check(v, "even_split")
        assert not check.passed and "together" in check.detail
        assert money_check(v, "conservation").passed

    def test_remainder_at_either_end_passes_even_split(self) -> None:
        """With remainder "either", the larger part at the start or at the end both pass even_split."""
        seed = SPLIT_REMAINDER_SEED
        env = env_for(SPLIT, seed)
        assert env.world.state.get("plans", "pln_001").remainder == "either"
        low, _ = divmod(sum(unpaid_minor(env)), 3)
        for amounts in ([low + 1, low, low], [low, low, low + 1]):
            v = money_invariants(split_with_amounts(seed, [fmt(a) for a in amounts]))
            assert v.passed, [c for c in v.checks if not c.passed]

    def test_even_split_problem_respects_plan_remainder(self) -> None:
        """even_split_problem: "first" refuses the larger part last, "last" refuses it first, "either" takes both."""
        parts = [Money(33334, "USD"), Money(33333, "USD"), Money(33333, "USD")]
        assert even_split_problem(parts, "first") is None
        assert even_split_problem(parts, "either") is None
        assert even_split_problem(parts, "last") is not None
        assert even_split_problem(parts[::-1], "last") is None
        assert even_split_problem(parts[::-1], "first") is not None
        assert even_split_problem([Money(33335, "USD"), Money(33330, "USD"), Money(33335, "USD")], "either")

    def test_even_split_can_be_turned_off(self) -> None:
        """money_invariants(even_split=False) lets an uneven re-split with the right total through."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        ep = split_with_amounts(seed, [str(q + Decimal("0.05")), str(q - Decimal("0.10")), str(q + Decimal("0.05"))])
        assert not money_invariants(ep).passed
        assert money_invariants(ep, even_split=False).passed

    def test_premium_change_scaled_each_fails_conservation(self) -> None:
        """Recording a premium change then scaling each unpaid instalment and rounding it drifts: conservation fails."""
        ep, drift = self._scaled_premium_episode()
        v = money_invariants(ep)
        check = money_check(v, "conservation")
        assert not check.passed and "drift" in check.detail

    def test_premium_change_scaled_each_never_passes(self) -> None:
        """The scenario's grading does not pass the scale-each premium change (money part below 1)."""
        ep, _ = self._scaled_premium_episode()
        result = grade(scenario(PREMIUM), ep, solutions(PREMIUM, PREMIUM_DRIFT_SEED))
        assert not result["passed"] and result["parts"]["money"] < 1.0

    def test_correct_premium_change_passes(self) -> None:
        """Both reference premium changes (delta pro-rated, rounded once, allocated) keep every invariant."""
        for index in (0, 1):
            v = money_invariants(solution_episode(PREMIUM, PREMIUM_DRIFT_SEED, index))
            assert v.passed, [c for c in v.checks if not c.passed]

    def test_premium_schedule_without_recorded_change_fails(self) -> None:
        """The pro-rata schedule written without recording the premium change does not keep the money invariants."""
        env = env_for(PREMIUM, PREMIUM_DRIFT_SEED)
        var = env.variables
        quote = call(env, "quote_premium_change", policy_id=var["policy_id"], new_annual_premium=var["new_premium"],
                     effective_date=var["next_due_date"]).last_result
        assert call(env, "set_schedule", plan_id=var["plan_id"],
                    instalments=quote["instalments"]).last_status == "ok"
        call(env, "finish", summary="x")
        result = grade(scenario(PREMIUM), env.episode(), solutions(PREMIUM, PREMIUM_DRIFT_SEED))
        assert not result["passed"] and result["parts"]["money"] < 1.0

    def test_corrected_premium_change_keeps_conservation(self) -> None:
        """A mistyped premium re-recorded at the same date, then the reference schedule, keeps conservation."""
        ref = solution_episode(PREMIUM, PREMIUM_DRIFT_SEED, 1)
        env = env_for(PREMIUM, PREMIUM_DRIFT_SEED)
        var = env.variables
        for premium in ("2000.00", var["new_premium"]):
            assert call(env, "record_premium_change", policy_id=var["policy_id"], new_annual_premium=premium,
                        effective_date=var["next_due_date"]).last_status == "ok"
        plan = ref.final_state.get("plans", var["plan_id"])
        items = [{"due_date": i.due_date.isoformat(), "amount": str(i.amount)}
                 for i in plan.instalments if i.status == "planned"]
        assert call(env, "set_schedule", plan_id=var["plan_id"], instalments=items).last_status == "ok"
        call(env, "finish", summary="x")
        ep = env.episode()
        final_plan = ep.final_state.get("plans", var["plan_id"])
        assert final_plan.instalments == plan.instalments, "precondition: the reference schedule"
        assert ep.final_state.get("policies", var["policy_id"]).annual_premium == \
            ref.final_state.get("policies", var["policy_id"]).annual_premium
        check = money_check(money_invariants(ep), "conservation")
        assert check.passed, check.detail

    def _scaled_premium_episode(self) -> tuple[Episode, int]:
        env = env_for(PREMIUM, PREMIUM_DRIFT_SEED)
        var = env.variables
        state = env.world.state
        plan = state.get("plans", var["plan_id"])
        policy = state.get("policies", var["policy_id"])
        owed = [i for i in plan.instalments if i.status in ("planned", "due", "overdue")]
        new = Money.parse(var["new_premium"], var["currency"])
        delta = hand_pro_rata(policy, new, parse_date(var["next_due_date"]))
        old_total = sum(i.amount.minor for i in owed)
        new_total = old_total + delta.minor
        exp = new.exponent
        scaled = [int((Decimal(i.amount.minor) * new_total / old_total).quantize(Decimal(1), ROUND_HALF_EVEN))
                  for i in owed]
        drift = sum(scaled) - new_total
        assert drift != 0, "precondition: scale-each drifts at this seed"
        assert call(env, "record_premium_change", policy_id=var["policy_id"], new_annual_premium=var["new_premium"],
                    effective_date=var["next_due_date"]).last_status == "ok"
        items = [{"due_date": i.due_date.isoformat(), "amount": fmt(m, exp)} for i, m in zip(owed, scaled, strict=True)]
        assert call(env, "set_schedule", plan_id=var["plan_id"], instalments=items).last_status == "ok"
        call(env, "finish", summary="scaled")
        return env.episode(), drift

    def test_dates_not_increasing_fail_schedule_order(self) -> None:
        """A schedule whose due dates go backwards fails schedule_order (built by hand: the tool refuses it)."""
        ep = solution_episode(SPLIT, SPLIT_EVEN_SEED)
        assert money_invariants(ep).passed
        plan = ep.final_state.get("plans", "pln_001")
        a, b = plan.instalments[-2], plan.instalments[-1]
        swapped = tuple(attrs.evolve(i, due_date=b.due_date) if i.seq == a.seq else
                        attrs.evolve(i, due_date=a.due_date) if i.seq == b.seq else i for i in plan.instalments)
        bad_final = ep.final_state.put(attrs.evolve(plan, instalments=swapped))
        v = money_invariants(attrs.evolve(ep, final_state=bad_final))
        check = money_check(v, "schedule_order")
        assert not check.passed and f"#{b.seq}" in check.detail

    def test_due_date_outside_term_fails_schedule_order(self) -> None:
        """A split whose last due date falls after the term end fails schedule_order."""
        seed = SPLIT_EVEN_SEED
        items = split_quote(SPLIT, seed)
        term_end = parse_date(env_for(SPLIT, seed).variables["term_end"])
        items[-1]["due_date"] = term_end.replace(year=term_end.year + 1).isoformat()
        env = env_for(SPLIT, seed)
        assert call(env, "set_schedule", plan_id="pln_001", instalments=items).last_status == "ok"
        call(env, "finish", summary="x")
        v = money_invariants(env.episode())
        assert not money_check(v, "schedule_order").passed
        assert money_check(v, "conservation").passed

    def test_zero_instalment_still_owed_fails(self) -> None:
        """A zero instalment left owed fails no_negative_amounts (conservation kept)."""
        seed = SPLIT_EVEN_SEED
        q = Decimal(split_quote(SPLIT, seed)[0]["amount"])
        ep = split_with_amounts(seed, [str(q + q), str(q), "0.00"])
        v = money_invariants(ep, even_split=False)
        assert not money_check(v, "no_negative_amounts").passed
        assert money_check(v, "conservation").passed


# --------------------------------------------------------------------------------------------- requires


class TestRequires:
    def test_counter_within_bounds_passes(self) -> None:
        """steps=2 is within {min 1, max 2}; denied_calls=0 within {max 0}."""
        ep = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), finish()])
        v = requires(ep, bounds={"steps": {"min": 1, "max": 2}, "denied_calls": {"max": 0}})
        assert v.passed and [c.name for c in v.checks] == ["requires:steps", "requires:denied_calls"]

    def test_counter_above_max_fails(self) -> None:
        """steps=2 is above {max 1}; the detail names the value and the bounds."""
        ep = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), finish()])
        v = requires(ep, bounds={"steps": {"max": 1}})
        assert not v.passed and "steps=2" in v.checks[0].detail

    def test_counter_below_min_fails(self) -> None:
        """steps=2 is below {min 3}."""
        ep = run(SPLIT, 0, [("get_plan", {"plan_id": "pln_001"}), finish()])
        assert not requires(ep, bounds={"steps": {"min": 3}}).passed

    def test_denied_call_counted(self) -> None:
        """A denied call breaks {denied_calls: {max: 0}}."""
        ep = run(SPLIT, 0, [("cancel_policy", {"policy_id": "pol_001", "cancel_date": "2025-06-15",
                                               "refund_amount": "99999.00"}), finish()])
        assert ep.counters["denied_calls"] == 1
        assert not requires(ep, bounds={"denied_calls": {"max": 0}}).passed

    def test_stop_reason_single_and_list(self) -> None:
        """stop_reason may be one reason or a list; a terminal episode passes "terminal" and fails ["max_steps"]."""
        ep = run(SPLIT, 0, [finish()])
        assert requires(ep, bounds={"stop_reason": "terminal"}).passed
        assert requires(ep, bounds={"stop_reason": ["max_steps", "terminal"]}).passed
        assert not requires(ep, bounds={"stop_reason": ["max_steps", "agent_stopped"]}).passed
        env = env_for(SPLIT, 0)
        env.step(None)
        stopped = env.episode()
        assert not requires(stopped, bounds={"stop_reason": "terminal"}).passed
        assert requires(stopped, bounds={"stop_reason": ["agent_stopped"]}).passed


# --------------------------------------------------------------------------------------------- contract

_GRADERS_SRC = '''
from simworld.verdict import Check, Verdict

def ok(episode):
    return Verdict.from_checks([Check("ok", True, "fine")])

def fail(episode):
    return Verdict.from_checks([Check("fail", False, "bad")])

def boom(episode):
    raise RuntimeError("kaboom in grader")

def not_a_verdict(episode):
    return True

def scored(episode, value):
    return Verdict.from_checks([Check("scored", value >= 1.0, str(value))], score=value)
'''

_module_ids = itertools.count()


@pytest.fixture
def grader_module(tmp_path, monkeypatch) -> Iterator[str]:
    """A module of test graders on sys.path (prepended for this test only); returns its name."""
    name = f"_tg_contract_{next(_module_ids)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(_GRADERS_SRC), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def some_episode() -> Episode:
    return run(SPLIT, 0, [finish()])


def spec(module: str, fn: str, part: str = "custom", **args: Any) -> GraderSpec:
    return resolve_grader(f"{module}:{fn}", args, "test", part=part)


class TestGradingContract:
    def test_raising_grader_is_a_failed_check(self, grader_module, some_episode) -> None:
        """A grader that raises becomes a failed check carrying the error, and the episode does not pass."""
        out = grade_episode([spec(grader_module, "ok"), spec(grader_module, "boom")], some_episode, (), {})
        assert out["passed"] is False
        (check,) = [c for c in out["checks"] if c["name"] == f"{grader_module}:boom"]
        assert check["passed"] is False
        assert "RuntimeError" in check["detail"] and "kaboom in grader" in check["detail"]
        assert out["parts"]["custom"] == 0.5  # ok scores 1, the crash scores 0

    def test_raising_grader_alone_does_not_pass(self, grader_module, some_episode) -> None:
        """A run whose only grader raises is not a pass and scores 0."""
        out = grade_episode([spec(grader_module, "boom")], some_episode, (), {})
        assert out["passed"] is False and out["total"] == 0.0

    def test_non_verdict_is_a_failed_check(self, grader_module, some_episode) -> None:
        """A grader returning something other than a Verdict (True) is a failed check naming the type."""
        out = grade_episode([spec(grader_module, "not_a_verdict")], some_episode, (), {})
        assert out["passed"] is False
        (check,) = out["checks"]
        assert check["passed"] is False and "bool" in check["detail"] and "Verdict" in check["detail"]

    def test_passed_is_the_conjunction(self, grader_module, some_episode) -> None:
        """Every check of every grader must pass: one failing grader among passing ones fails the episode."""
        ok = spec(grader_module, "ok")
        assert grade_episode([ok, ok, ok], some_episode, (), {})["passed"] is True
        out = grade_episode([ok, spec(grader_module, "fail"), ok], some_episode, (), {})
        assert out["passed"] is False
        assert [c["name"] for c in out["checks"]] == ["ok", "fail", "ok"]

    def test_no_graders_does_not_pass(self, some_episode) -> None:
        """With no checks at all the episode does not pass."""
        assert grade_episode([], some_episode, (), {})["passed"] is False

    def test_weights_change_total(self, grader_module, some_episode) -> None:
        """total is the weights-weighted mean of the non-gate parts: weighting the failing part lowers it."""
        graders = [spec(grader_module, "ok", part="state"), spec(grader_module, "fail", part="custom")]
        even = grade_episode(graders, some_episode, (), {})
        heavy_fail = grade_episode(graders, some_episode, (), {"custom": 3.0})
        heavy_ok = grade_episode(graders, some_episode, (), {"state": 3.0})
        zero_fail = grade_episode(graders, some_episode, (), {"custom": 0.0})
        assert even["parts"] == {"state": 1.0, "custom": 0.0}
        assert even["total"] == 0.5
        assert heavy_fail["total"] == 0.25
        assert heavy_ok["total"] == 0.75
        assert zero_fail["total"] == 1.0 and zero_fail["passed"] is False

    def test_gate_parts_earn_no_credit_of_their_own(self, grader_module, some_episode) -> None:
        """A passed gate part (outcome) is not averaged in: the other parts alone make the total."""
        graders = [spec(grader_module, "ok", part="outcome"), spec(grader_module, "fail", part="custom")]
        out = grade_episode(graders, some_episode, (), {"outcome": 5.0})
        assert out["parts"] == {"outcome": 1.0, "custom": 0.0} and out["total"] == 0.0

    def test_grader_score_is_its_part(self, grader_module, some_episode) -> None:
        """A verdict's explicit score is its part's score."""
        out = grade_episode([spec(grader_module, "scored", part="state", value=0.25)], some_episode, (), {})
        assert out["parts"] == {"state": 0.25} and out["total"] == 0.25

    def test_score_outside_unit_interval_is_a_failed_check(self, grader_module, some_episode) -> None:
        """A verdict score above 1 is refused by Verdict: the grader fails with a harness error and scores 0."""
        out = grade_episode([spec(grader_module, "scored", value=1.5)], some_episode, (), {})
        assert out["passed"] is False and out["total"] == 0.0 and out["parts"] == {"custom": 0.0}
        assert out["checks"] == [{"name": f"{grader_module}:scored", "passed": False,
                                  "detail": "grader raised ValueError: Expected score in [0, 1] but got score=1.5."}]
        assert out["harness_error"].startswith(f"grader {grader_module}:scored raised ValueError")

    def test_agent_error_fails_and_zeroes_total(self, grader_module, some_episode) -> None:
        """An errored episode gets a failed agent_ran check and total 0, whatever the graders say."""
        errored = attrs.evolve(some_episode, error="ValueError: agent blew up")
        out = grade_episode([spec(grader_module, "ok")], errored, (), {})
        assert out["passed"] is False and out["total"] == 0.0
        assert out["checks"][0] == {"name": "agent_ran", "passed": False, "detail": "ValueError: agent blew up"}

    def test_verdict_needs_a_check(self) -> None:
        """Verdict.from_checks([]) raises: a grader that checked nothing cannot pass."""
        with pytest.raises(ValueError, match="at least one check"):
            Verdict.from_checks([])
        with pytest.raises(TypeError):
            Verdict.from_checks([("name", True)])  # type: ignore[list-item]
        v = Verdict.from_checks([Check("a", True), Check("b", False)])
        assert not v.passed and v.partial == 0.5

    def test_scenario_result_collects_every_grader(self) -> None:
        """The reference split passes the scenario's full conjunction and reports every part and check."""
        ep = solution_episode(SPLIT, SPLIT_REMAINDER_SEED, 1)
        out = grade(scenario(SPLIT), ep, solutions(SPLIT, SPLIT_REMAINDER_SEED))
        assert out["passed"] is True and out["total"] == 1.0
        assert set(out["parts"]) == {"outcome", "state", "steps", "forbidden", "authority", "money", "comms",
                                     "requires"}
        names = {c["name"] for c in out["checks"]}
        assert {"outcome_allowed", "end_state_matches_a_solution", "no_forbidden_changes",
                "no_unauthorised_actions", "conservation", "requires:stop_reason"} <= names

    def test_solutions_reach_a_grader_that_asks(self, tmp_path, monkeypatch, some_episode) -> None:
        """A grader declaring `solutions` receives the solution states at grade time."""
        name = f"_tg_solutions_{next(_module_ids)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent('''
            from simworld.verdict import Check, Verdict
            def count(episode, solutions, want):
                return Verdict.from_checks([Check("count", len(solutions) == want, str(len(solutions)))])
        '''), encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        sols = solutions(SPLIT, 0)
        assert len(sols) >= 2
        s = resolve_grader(f"{name}:count", {"want": len(sols)}, "test")
        assert s.wants_solutions
        assert grade_episode([s], some_episode, sols, {})["passed"] is True
        assert grade_episode([s], some_episode, sols[:1], {})["passed"] is False


class TestStateGraderAgreesWithProjecting:
    @pytest.mark.parametrize("agent", ["reference", "random", "noop", "drift:float", "drift:add-month"])
    def test_the_verdict_is_that_of_projecting_every_solution(self, agent: str) -> None:
        """Over real episodes of passing, failing and drifting agents, the state grader (which skips projecting
        a solution whose records are the agent's own, byte for byte) names the first closest solution, its
        diff and its score exactly as projecting and diffing every solution does."""
        from simworld._agents.kinds import build_agent_factory
        from simworld._grading.projection import diff, project, touched

        factory = build_agent_factory(agent)
        matched = 0
        suite = load_suite()
        for scenario in suite:
            for seed in (0, 1):
                ep = play(Environment(scenario, seed, agent_name=agent), factory)
                solutions = solution_end_states(scenario, seed)
                v = expected_final_state(ep, solutions)
                keys = touched([ep.initial_state, ep.final_state, *solutions])
                actual = project(ep.final_state, keys)
                expected = [project(s, keys) for s in solutions]
                diffs = [diff(e, actual) for e in expected]
                best = min(range(len(solutions)), key=lambda i: len(diffs[i]))
                assert v.data["state_diff"] == diffs[best], (scenario.id, seed)
                assert v.passed is (not diffs[best])
                assert v.partial == max(0.0, 1 - len(diffs[best]) / max(len(expected[best]), 1))
                if diffs[best]:
                    assert f"(solution {best})" in v.checks[0].detail
                else:
                    assert v.checks[0].detail == f"matches solution {best}"
                    matched += 1
        if agent == "reference":
            assert matched == 2 * len(suite)  # the reference plays a solution: every episode matches one
