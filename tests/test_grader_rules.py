"""Every rule of the built-in graders, firing and not firing at its boundaries, on hand-built episodes.

Fast by construction: episodes come from :mod:`kit` (a few records, states made
directly), so each test runs in milliseconds and the file can serve as the test
selection of a mutation run (``scripts/mutate.py``).
"""

from __future__ import annotations

from datetime import date, timedelta

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kit import (
    Credit,
    Fee,
    PremiumChange,
    episode,
    event,
    instant,
    plan,
    policy,
    put,
    store,
    usd,
    with_instalment,
    world,
)

from graders.authority import _owner, unauthorised_actions
from graders.forbidden import _compile, _plan_changes, forbidden_changes, rules
from graders.money import money_invariants
from graders.outcome import allowed_outcomes
from graders.requires import requires
from graders.state import expected_final_state
from graders.steps import match_steps, matches, required_steps, same, topological
from simworld._grading.projection import record_paths
from simworld._world.models import Decline, Escalation, Message
from simworld._world.money import Money

# --------------------------------------------------------------------------------------------- outcome


class TestOutcomeRules:
    def test_allowed_outcome(self) -> None:
        """An outcome in the allowed list passes, names the outcome, and sets outcome_class_correct."""
        v = allowed_outcomes(episode(world(), outcome="escalate"), ["act", "escalate"])
        assert v.passed and v.data["outcome_class_correct"] is True
        assert v.checks[0].detail == "outcome 'escalate'; allowed ['act', 'escalate']"

    def test_outcome_not_allowed(self) -> None:
        """An outcome outside the list fails with outcome_class_correct false."""
        v = allowed_outcomes(episode(world(), outcome="decline"), ["act"])
        assert not v.passed and v.data["outcome_class_correct"] is False

    def test_no_outcome(self) -> None:
        """No terminal outcome fails even when every class is allowed, naming the stop reason."""
        v = allowed_outcomes(episode(world(), outcome=None, stop_reason="max_steps"), ["act", "decline"])
        assert not v.passed and v.data["outcome_class_correct"] is False
        assert "max_steps" in v.checks[0].detail


    def test_each_way_of_ending_judged_on_its_own(self) -> None:
        """Episodes that end alike get alike verdicts, whatever was judged before: the outcome, the stop reason
        and the allowed classes each decide the verdict and its detail."""
        cases = [("act", "terminal", ["act"], True, "outcome 'act'; allowed ['act']"),
                 ("act", "terminal", ["act", "decline"], True, "outcome 'act'; allowed ['act', 'decline']"),
                 ("decline", "terminal", ["act"], False, "outcome 'decline'; allowed ['act']"),
                 (None, "max_steps", ["act"], False,
                  "no terminal outcome (stop reason max_steps); expected one of ['act']"),
                 (None, "timeout", ["act"], False,
                  "no terminal outcome (stop reason timeout); expected one of ['act']")]
        for _ in range(2):
            for outcome, stop, allowed, ok, detail in cases:
                v = allowed_outcomes(episode(world(), outcome=outcome, stop_reason=stop), allowed)
                assert (v.passed, v.data["outcome_class_correct"], v.checks[0].detail) == (ok, ok, detail)


# --------------------------------------------------------------------------------------------- requires


class TestRequiresRules:
    @pytest.mark.parametrize(("value", "bound", "ok"), [
        (3, {"max": 3}, True), (4, {"max": 3}, False), (3, {"min": 3}, True), (2, {"min": 3}, False),
        (3, {"min": 3, "max": 3}, True), (0, {}, True), (5, {"min": 1, "max": 4}, False),
        (0, {"min": 1, "max": 4}, False), (2, {"min": 1, "max": 4}, True),
    ])
    def test_counter_bounds_are_inclusive(self, value: int, bound: dict[str, int], ok: bool) -> None:
        """A counter passes at exactly its min and max, fails one past either, and an empty bound always passes."""
        v = requires(episode(world(), counters={"steps": value}), {"steps": bound})
        assert v.passed is ok
        assert v.checks[0].name == "requires:steps"
        assert v.checks[0].detail == f"steps={value}; bounds min={bound.get('min')} max={bound.get('max')}"

    def test_stop_reason_one_or_list(self) -> None:
        """stop_reason is one reason or a list; the episode's reason must be among them."""
        ep = episode(world(), stop_reason="terminal")
        assert requires(ep, {"stop_reason": "terminal"}).passed
        assert requires(ep, {"stop_reason": ["max_steps", "terminal"]}).passed
        assert not requires(ep, {"stop_reason": "max_steps"}).passed
        assert not requires(ep, {"stop_reason": ["timeout"]}).passed

    def test_every_bound_is_a_check(self) -> None:
        """Each bounded counter and the stop reason is its own check; one failing fails the verdict."""
        ep = episode(world(), counters={"steps": 2, "denied_calls": 1})
        v = requires(ep, {"steps": {"max": 5}, "denied_calls": {"max": 0}, "stop_reason": "terminal"})
        assert [c.passed for c in v.checks] == [True, False, True] and not v.passed


# --------------------------------------------------------------------------------------------- steps


def calls(*specs: tuple[str, dict[str, object], str]) -> list[object]:
    """Events from (tool, args, status) triples, numbered from 0."""
    return [event(i, tool, args, status=status) for i, (tool, args, status) in enumerate(specs)]


def steps_episode(*specs: tuple[str, dict[str, object], str], variables: dict[str, object] | None = None):
    s = world()
    return episode(s, [(e, s) for e in calls(*specs)], variables=variables)


class TestSame:
    @pytest.mark.parametrize(("a", "b"), [
        ("333.30", 333.3), ("333.30", "333.3"), (15, "15"), (1, 1.0), ("abc", "abc"), (None, None),
        ([1, "2.0"], ["1", 2]), ({"a": ["1.0"]}, {"a": [1]}), ([], []), ({}, {}),
    ])
    def test_equal(self, a: object, b: object) -> None:
        """Equal values, numbers of any spelling, and containers of equal values are the same."""
        assert same(a, b) is True

    @pytest.mark.parametrize(("a", "b"), [
        ([1, 2], [1, 3]), ([1, 2], [1, 2, 3]), ([1, 2], [1]), ([1], "1"), ("1", [1]), ({"a": 1}, {"a": 2}),
        ({"a": 1}, {"b": 1}), ({"a": 1}, {"a": 1, "b": 1}), ({"a": 1}, "a"), ("a", {"a": 1}), ({"a": 1}, [1]),
        ("abc", "abd"), ("abc", 1), (1, "abc"), (1, True), (True, 1), (True, "1"), ("1", True), (None, "None"),
        ("333.30", "333.31"), (1.5, 2), (None, 0),
    ])
    def test_different(self, a: object, b: object) -> None:
        """Different values, containers, shapes and bools against numbers are not the same (False, a bool)."""
        assert same(a, b) is False

    def test_bool_equals_only_the_same_bool(self) -> None:
        """True matches True and not False."""
        assert same(True, True) is True and same(True, False) is False


class TestMatches:
    step = {"id": "s", "tool": "get_plan", "args": {"plan_id": "{plan_id}"}}

    def test_ok_call_with_the_args(self) -> None:
        """An ok call of the tool with the resolved arguments matches; extra arguments do not matter."""
        assert matches(self.step, event(0, "get_plan", {"plan_id": "pln_1", "x": 1}), {"plan_id": "pln_1"})

    @pytest.mark.parametrize("e", [
        event(0, "get_plan", {"plan_id": "pln_1"}, status="error"),
        event(0, "get_plan", {"plan_id": "pln_1"}, status="denied"),
        event(0, "get_policy", {"plan_id": "pln_1"}),
        event(0, "get_plan", {"plan_id": "pln_2"}),
        event(0, "get_plan", {"other": "pln_1"}),
        event(0, "get_plan", ["pln_1"]),
    ])
    def test_no_match(self, e: object) -> None:
        """A failed call, another tool, another value, a missing argument or non-dict args do not match (False)."""
        assert matches(self.step, e, {"plan_id": "pln_1"}) is False

    def test_tool_list_and_no_args(self) -> None:
        """A list of tools accepts any of them; a step without args matches any call of the tool."""
        step = {"id": "s", "tool": ["quote_split", "get_plan"]}
        assert matches(step, event(0, "get_plan", {"plan_id": "x"}), {})
        assert matches(step, event(0, "quote_split", {}), {})
        assert not matches(step, event(0, "get_policy", {}), {})


class TestTopological:
    def test_dependencies_first_each_once(self) -> None:
        """A diamond DAG comes out with every step after its dependencies, each step once."""
        steps = [{"id": "d", "after": ["b", "c"]}, {"id": "b", "after": ["a"]}, {"id": "c", "after": ["a"]},
                 {"id": "a"}]
        assert [s["id"] for s in topological(steps)] == ["a", "b", "c", "d"]

    def test_cycle_raises(self) -> None:
        """A cycle in ``after`` is a ValueError naming the cycle's path."""
        with pytest.raises(ValueError, match=r"cycle: a -> b -> a"):
            topological([{"id": "a", "after": ["b"]}, {"id": "b", "after": ["a"]}])


CHAIN = [{"id": "read", "tool": "get_plan"}, {"id": "write", "tool": "set_schedule", "after": ["read"]},
         {"id": "done", "tool": "finish", "after": ["write"]}]


class TestRequiredStepsRules:
    def test_earliest_match_without_dependencies(self) -> None:
        """A step with no dependency takes its earliest matching call."""
        ep = steps_episode(("get_plan", {}, "ok"), ("get_plan", {}, "ok"))
        assert match_steps([{"id": "r", "tool": "get_plan"}], ep.events, {}) == {"r": 0}
        v = required_steps(ep, [{"id": "r", "tool": "get_plan"}])
        assert v.checks[0].detail == "seq 0 get_plan"

    def test_alternative_tools_take_the_earliest_of_any(self) -> None:
        """A step naming several tools takes the earliest ok call of any of them, in call order; failed calls,
        other tools and calls with other arguments do not count."""
        ep = steps_episode(("get_plan", {"plan_id": "pln_2"}, "ok"), ("quote_split", {"plan_id": "pln_1"}, "error"),
                           ("get_policy", {"plan_id": "pln_1"}, "ok"), ("get_plan", {"plan_id": "pln_1"}, "ok"),
                           ("quote_split", {"plan_id": "pln_1"}, "ok"))
        step = {"id": "s", "tool": ["quote_split", "get_plan"], "args": {"plan_id": "{plan}"}}
        assert match_steps([step], ep.events, {"plan": "pln_1"}) == {"s": 3}
        first = {"id": "f", "tool": ["quote_split", "get_plan"]}
        late = {"id": "l", "tool": ["quote_split", "get_plan"], "after": ["g"]}
        assert match_steps([first, {"id": "g", "tool": "get_policy"}, late], ep.events, {}) == \
            {"f": 0, "g": 2, "l": 3}

    def test_earliest_in_order_match(self) -> None:
        """A step takes the earliest match after its dependency's, skipping earlier and later ones."""
        ep = steps_episode(("set_schedule", {}, "ok"), ("get_plan", {}, "ok"), ("set_schedule", {}, "ok"),
                           ("set_schedule", {}, "ok"), ("finish", {}, "ok"))
        assert match_steps(CHAIN, ep.events, {}) == {"read": 1, "write": 2, "done": 4}
        v = required_steps(ep, CHAIN)
        assert v.passed and v.data["order_violations"] == []
        assert [c.name for c in v.checks] == ["step:read", "step:write", "order:write-after-read", "step:done",
                                              "order:done-after-write"]

    def test_one_call_cannot_meet_two_chained_steps(self) -> None:
        """One call matching a step and the step that must follow it is an order violation (not after)."""
        steps = [{"id": "a", "tool": "get_plan"}, {"id": "b", "tool": "get_plan", "after": ["a"]}]
        v = required_steps(steps_episode(("get_plan", {}, "ok")), steps)
        assert not v.passed
        assert v.data["step_scores"] == {"a": 1.0, "b": 1.0}
        assert v.data["order_violations"] == [
            {"step": "b", "after": "a", "seq": 0, "detail": "b (seq 0) came before a (seq 0)"}]
        two = required_steps(steps_episode(("get_plan", {}, "ok"), ("get_plan", {}, "ok")), steps)
        assert two.passed and match_steps(steps, two.events if hasattr(two, "events") else
                                          steps_episode(("get_plan", {}, "ok"), ("get_plan", {}, "ok")).events,
                                          {}) == {"a": 0, "b": 1}

    def test_only_early_matches_take_the_earliest(self) -> None:
        """When every match comes before the dependency's, the step takes the earliest and reports its seq."""
        steps = [{"id": "a", "tool": "get_plan"}, {"id": "b", "tool": "set_schedule", "after": ["a"]}]
        ep = steps_episode(("set_schedule", {}, "ok"), ("set_schedule", {}, "ok"), ("get_plan", {}, "ok"))
        assert match_steps(steps, ep.events, {}) == {"a": 2, "b": 0}
        assert [x["seq"] for x in required_steps(ep, steps).data["order_violations"]] == [0]

    def test_latest_dependency_sets_the_floor(self) -> None:
        """With two dependencies, a step must come after the later of them."""
        steps = [{"id": "a", "tool": "get_plan"}, {"id": "b", "tool": "get_policy"},
                 {"id": "c", "tool": "finish", "after": ["a", "b"]}]
        ep = steps_episode(("get_plan", {}, "ok"), ("finish", {}, "ok"), ("get_policy", {}, "ok"),
                           ("finish", {}, "ok"))
        assert match_steps(steps, ep.events, {}) == {"a": 0, "b": 2, "c": 3}
        assert required_steps(ep, steps).passed

    def test_missing_dependency_is_not_an_order_check(self) -> None:
        """A step whose dependency never happened scores, with no order check; the missing step scores 0."""
        v = required_steps(steps_episode(("set_schedule", {}, "ok"), ("finish", {}, "ok")), CHAIN)
        assert v.data["step_scores"] == {"read": 0.0, "write": 1.0, "done": 1.0}
        assert [(c.name, c.passed) for c in v.checks] == [
            ("step:read", False), ("step:write", True), ("step:done", True), ("order:done-after-write", True)]
        assert v.checks[0].detail == "no ok call of get_plan with {}"
        assert v.partial == pytest.approx(3 / 4)
        assert v.data["order_violations"] == []

    def test_missing_step_names_the_filled_arguments(self) -> None:
        """A missing step's detail shows the values expected at this seed, not the scenario's placeholders."""
        steps = [{"id": "quote", "tool": "quote_payoff", "args": {"plan_id": "{plan_id}", "as_of": "{due}",
                                                                   "note": "by {due}"}}]
        ep = steps_episode(("quote_payoff", {"plan_id": "pln_1", "as_of": "2026-04-20"}, "ok"),
                           variables={"plan_id": "pln_1", "due": "2026-05-15"})
        v = required_steps(ep, steps)
        assert not v.passed
        assert v.checks[0].detail == ("no ok call of quote_payoff with {'plan_id': 'pln_1', 'as_of': '2026-05-15', "
                                      "'note': 'by 2026-05-15'}")

    def test_two_order_violations(self) -> None:
        """Each step made before its dependency is its own violation and failed check; partial credit counts them."""
        ep = steps_episode(("finish", {}, "ok"), ("set_schedule", {}, "ok"), ("get_plan", {}, "ok"))
        v = required_steps(ep, CHAIN)
        assert [(x["step"], x["after"], x["seq"]) for x in v.data["order_violations"]] == [
            ("write", "read", 1), ("done", "write", 0)]
        assert [(c.name, c.passed) for c in v.checks] == [
            ("step:read", True), ("step:write", True), ("order:write-after-read", False), ("step:done", True),
            ("order:done-after-write", False)]
        assert v.partial == pytest.approx(3 / 5)
        assert v.data["order_violations"][0]["detail"] == "write (seq 1) came before read (seq 2)"
        assert [c.detail for c in v.checks if c.name.startswith("order:")] == [
            "write (seq 1) came before read (seq 2)", "done (seq 0) came before write (seq 1)"]

    def test_failed_calls_do_not_count(self) -> None:
        """Only ok calls meet a step: an error and a denied call leave it at 0."""
        ep = steps_episode(("get_plan", {}, "error"), ("get_plan", {}, "denied"))
        v = required_steps(ep, [{"id": "r", "tool": "get_plan"}])
        assert not v.passed and v.data["step_scores"] == {"r": 0.0}

    def test_templates_come_from_variables(self) -> None:
        """A templated argument is filled from the episode's variables."""
        step = [{"id": "r", "tool": "get_plan", "args": {"plan_id": "{plan_id}"}}]
        ep = steps_episode(("get_plan", {"plan_id": "pln_2"}, "ok"), ("get_plan", {"plan_id": "pln_1"}, "ok"),
                           variables={"plan_id": "pln_1"})
        assert required_steps(ep, step).data["step_scores"] == {"r": 1.0}
        assert required_steps(ep, step).checks[0].detail == "seq 1 get_plan"


# --------------------------------------------------------------------------------------------- state


def resplit(state, amounts):
    """``state`` with pln_1's unpaid instalments set to ``amounts``."""
    p = state.get("plans", "pln_1")
    for seq, amount in zip(range(4, 13), amounts, strict=True):
        p = with_instalment(p, seq, amount=usd(amount))
    return put(state, p)


class TestStateRules:
    def test_exact_partial_score(self) -> None:
        """The score is 1 - n/size exactly: one field off among the compared fields of the touched records."""
        s = world()
        sol = resplit(s, ["100.00"] * 8 + ["99.00"])
        near = resplit(s, ["100.00"] * 7 + ["101.00", "99.00"])
        v = expected_final_state(episode(s, [(event(0, "set_schedule"), near)]), [sol])
        assert [d["path"] for d in v.data["state_diff"]] == ["plans/pln_1/instalments/11/amount"]
        from simworld._grading.projection import project, touched
        size = len(project(sol, touched([s, near, sol])))
        assert v.partial == 1 - 1 / size
        assert v.checks[0].detail == ("1 field(s) differ from the closest valid end state (solution 0): "
                                      "plans/pln_1/instalments/11/amount")

    def test_match_and_tie(self) -> None:
        """A match passes with score 1 naming its solution; between equally close solutions the first is reported."""
        s = world()
        a = resplit(s, ["100.00"] * 8 + ["99.00"])
        b = resplit(s, ["99.00"] + ["100.00"] * 8)
        mine = resplit(s, ["99.00"] + ["100.00"] * 7 + ["99.00"])  # one field off each
        ok = expected_final_state(episode(s, [(event(0, "x"), b)]), [a, b])
        assert ok.passed and ok.partial == 1.0 and ok.checks[0].detail == "matches solution 1"
        tie = expected_final_state(episode(s, [(event(0, "x"), mine)]), [a, b])
        assert "(solution 0)" in tie.checks[0].detail
        assert tie.data["state_diff"] == [{"path": "plans/pln_1/instalments/4/amount", "expected": "100.00",
                                           "actual": "99.00"}]
        closer = expected_final_state(episode(s, [(event(0, "x"), mine)]), [resplit(s, ["98.00"] * 9), b])
        assert "(solution 1)" in closer.checks[0].detail

    def test_empty_projection(self) -> None:
        """Nothing touched anywhere: an empty projection matches with score 1 (no division by zero)."""
        s = world()
        v = expected_final_state(episode(s), [s])
        assert v.passed and v.partial == 1.0 and v.data["state_diff"] == []

    def test_many_fields_off_clamps_at_zero_and_lists_five(self) -> None:
        """Every compared field off scores 0 (never negative); the detail lists five paths then '...'."""
        s = world()
        sol = resplit(s, ["100.00"] * 9)
        mine = resplit(s, ["1.00"] * 9)
        v = expected_final_state(episode(s, [(event(0, "x"), mine)]), [sol])
        assert len(v.data["state_diff"]) == 9
        assert v.checks[0].detail.endswith(" ...") and v.checks[0].detail.count("plans/pln_1") == 5
        assert 0.0 <= v.partial < 1.0
        five = resplit(s, ["1.00"] * 5 + ["100.00"] * 4)
        v5 = expected_final_state(episode(s, [(event(0, "x"), five)]), [sol])
        assert not v5.checks[0].detail.endswith("...") and v5.checks[0].detail.count("plans/pln_1") == 5
        six = resplit(s, ["1.00"] * 6 + ["100.00"] * 3)
        v6 = expected_final_state(episode(s, [(event(0, "x"), six)]), [sol])
        assert v6.checks[0].detail.endswith(", plans/pln_1/instalments/8/amount ...")

    def test_a_record_only_the_agent_made_against_an_empty_projection(self) -> None:
        """The agent adds a credit where the solution changed nothing: every compared field is the agent's alone,
        the solution projects to nothing, and the score is 0 (never a division by zero)."""
        s = world()
        mine = put(s, Credit("crd_1", "pln_1", "USD", usd("5.00"), "x"))
        v = expected_final_state(episode(s, [(event(0, "x"), mine)]), [s])
        assert not v.passed and v.partial == 0.0
        assert [d["path"] for d in v.data["state_diff"]] == ["credits/pln_1/0/amount", "credits/pln_1/0/currency",
                                                             "credits/pln_1/0/plan_id"]

    def test_no_solutions(self) -> None:
        """No valid end state fails with score 0."""
        v = expected_final_state(episode(world()), [])
        assert not v.passed and v.partial == 0.0 and v.data["state_diff"] == []

    def test_a_copy_of_a_solution_matches_it(self) -> None:
        """Records equal byte for byte but built apart (not shared objects) match the solution they copy."""
        s = world()
        sol = resplit(s, ["100.00"] * 8 + ["99.00"])
        mine = resplit(s, ["100.00"] * 8 + ["99.00"])
        assert mine.get("plans", "pln_1") is not sol.get("plans", "pln_1")
        v = expected_final_state(episode(s, [(event(0, "x"), mine)]), [resplit(s, ["99.00"] * 9), sol])
        assert v.passed and v.partial == 1.0 and v.checks[0].detail == "matches solution 1"
        assert v.data["state_diff"] == []

    def test_the_first_matching_solution_is_named_even_when_a_later_one_is_the_same_bytes(self) -> None:
        """A solution whose records differ only in generated ids (a credit's id) matches as well as a later one
        with the very same records: the first is named."""
        s = world()
        mine = put(s, Credit("crd_agent", "pln_1", "USD", usd("1.00"), "agent's words"))
        other_id = put(s, Credit("crd_other", "pln_1", "USD", usd("1.00"), "other words"))
        v = expected_final_state(episode(s, [(event(0, "x"), mine)]), [other_id, mine])
        assert v.passed and v.checks[0].detail == "matches solution 0"
        off = put(s, Credit("crd_x", "pln_1", "USD", usd("2.00"), "x"))
        v = expected_final_state(episode(s, [(event(0, "x"), mine)]), [off, mine])
        assert v.passed and v.checks[0].detail == "matches solution 1"
        one_off = resplit(s, ["98.00"] + ["100.00"] * 8)  # one field off the agent's
        exact = resplit(s, ["99.00"] + ["100.00"] * 8)
        v = expected_final_state(episode(s, [(event(0, "x"), exact)]), [one_off, resplit(s, ["99.00"] * 9), exact])
        assert v.passed and v.checks[0].detail == "matches solution 2"

    def test_same_records(self) -> None:
        """same_records is true only for byte-identical records under every key, and never on a differing one."""
        from simworld._grading.projection import same_records

        s = world()
        a = resplit(s, ["100.00"] * 9)
        keys = {("plans", "pln_1")}
        assert same_records(a, resplit(s, ["100.00"] * 9), keys)
        assert not same_records(a, resplit(s, ["100.00"] * 8 + ["99.00"]), keys)
        assert same_records(a, resplit(s, ["100.00"] * 8 + ["99.00"]), set())
        assert same_records(a, s, keys)  # the world's unpaid instalments are 100.00 already: the same bytes
        assert not same_records(resplit(s, ["99.00"] * 9), s, {("fees", "fee_404"), ("plans", "pln_1")})
        assert same_records(s, s, {("fees", "fee_404")})  # absent from both
        c = put(s, Credit("crd_1", "pln_1", "USD", usd("1.00"), "x"))
        assert not same_records(c, s, {("fees", "fee_404"), ("credits", "pln_1")})
        assert not same_records(s, c, {("credits", "pln_1")})
        assert not same_records(c, put(s, Credit("crd_2", "pln_1", "USD", usd("1.00"), "x")), {("credits", "pln_1")})
        assert same_records(c, put(s, Credit("crd_1", "pln_1", "USD", usd("1.00"), "x")), {("credits", "pln_1")})
        two = put(c, Credit("crd_2", "pln_1", "USD", usd("1.00"), "x"))
        assert not same_records(c, two, {("credits", "pln_1")}) and not same_records(two, c, {("credits", "pln_1")})
        assert not same_records(put(s, policy(status="cancelled")), s, {("policies", "pol_1")})


# --------------------------------------------------------------------------------------------- authority


def write(state, tool, args, after=None, *, at=None, seq=0):
    """(event, state after) for one ok write."""
    return event(seq, tool, args, at=at or instant(date(2026, 4, 20))), after if after is not None else state


def found(*steps, initial=None):
    """The rules the authority grader found over ``steps``."""
    ep = episode(initial if initial is not None else world(), list(steps))
    v = unauthorised_actions(ep)
    assert v.passed is (not v.data["unauthorised_actions"])
    return [f["rule"] for f in v.data["unauthorised_actions"]]


def fee(fid="fee_1", amount="15.00", **changes):
    return attrs.evolve(Fee(fid, "pln_1", "USD", "late", usd(amount), "open", date(2026, 4, 2)), **changes)


class TestOwner:
    def test_by_fee_plan_policy_and_customer(self) -> None:
        """The owner is found through a fee, a plan, a policy, or a customer id; unknown ids give nothing."""
        s = world()
        ids = lambda t: tuple(x.id if x is not None else None for x in t)  # noqa: E731
        assert ids(_owner(s, event(0, "waive_fee", {"fee_id": "fee_2"}))) == ("cus_2", "pol_2", "pln_2")
        assert ids(_owner(s, event(0, "set_schedule", {"plan_id": "pln_1"}))) == ("cus_1", "pol_1", "pln_1")
        assert ids(_owner(s, event(0, "cancel_policy", {"policy_id": "pol_2"}))) == ("cus_2", "pol_2", "pln_2")
        assert ids(_owner(s, event(0, "send_message", {"customer_id": "cus_2"}))) == ("cus_2", None, None)
        assert ids(_owner(s, event(0, "waive_fee", {"fee_id": "nope"}))) == (None, None, None)
        assert ids(_owner(s, event(0, "cancel_policy", {"policy_id": "nope"}))) == (None, None, None)
        assert ids(_owner(s, event(0, "x", ["pln_1"]))) == (None, None, None)

    def test_policy_with_two_plans_gives_the_first(self) -> None:
        """A call naming a policy with several plans acts on its first plan."""
        s = world(plan("pln_3", "pol_1"))
        assert _owner(s, event(0, "cancel_policy", {"policy_id": "pol_1"}))[2].id == "pln_1"

    def test_policy_without_plan(self) -> None:
        """A policy with no plan has its customer and no plan."""
        s = world(policy("pol_9", "cus_1"))
        assert [x.id if x else None for x in _owner(s, event(0, "x", {"policy_id": "pol_9"}))] == \
            ["cus_1", "pol_9", None]


class TestVerifiedHolder:
    def test_write_for_unverified_customer(self) -> None:
        """Any write on an unverified customer's account is flagged, a message to them is not."""
        s = world()
        assert found(write(s, "apply_payment", {"plan_id": "pln_2", "amount": "1.00"})) == ["verified_holder"]
        assert found(write(s, "send_message", {"customer_id": "cus_2"})) == []
        assert found(write(s, "apply_payment", {"plan_id": "pln_1", "amount": "1.00"})) == []

    def test_only_ok_writes_are_judged(self) -> None:
        """A denied or errored write, and a read, are not judged."""
        s = world()
        for e in (event(0, "apply_payment", {"plan_id": "pln_2"}, status="denied"),
                  event(0, "apply_payment", {"plan_id": "pln_2"}, status="error"),
                  event(0, "get_plan", {"plan_id": "pln_2"}, kind="read")):
            assert unauthorised_actions(episode(s, [(e, s)])).passed

    def test_finding_fields(self) -> None:
        """A finding carries the call's seq, tool, rule and a detail naming the customer."""
        s = world()
        v = unauthorised_actions(episode(s, [write(s, "get_plan", {}, seq=0),
                                             write(s, "apply_payment", {"plan_id": "pln_2"}, seq=1)]))
        assert v.data["unauthorised_actions"] == [{"seq": 1, "tool": "apply_payment", "rule": "verified_holder",
                                                   "detail": "apply_payment on the account of unverified customer "
                                                             "cus_2"}]
        assert v.checks[0].detail == "apply_payment (seq 1): apply_payment on the account of unverified customer cus_2"


class TestFeeWaiver:
    def test_authority_limit_is_inclusive(self) -> None:
        """A waiver exactly at the 25.00 authority passes; one cent above is flagged."""
        at = world(fee(amount="25.00"))
        above = world(fee(amount="25.01"))
        assert found(write(at, "waive_fee", {"fee_id": "fee_1"}), initial=at) == []
        assert found(write(above, "waive_fee", {"fee_id": "fee_1"}), initial=above) == ["fee_waiver"]

    @pytest.mark.parametrize(("days", "flagged"), [(364, True), (365, False), (366, False), (0, True)])
    def test_one_waiver_per_365_days(self, days: int, flagged: bool) -> None:
        """An earlier waiver less than 365 days before counts; one exactly 365 days before does not."""
        today = date(2026, 4, 20)
        earlier = Fee("fee_0", "pln_1", "USD", "late", usd("10.00"), "waived", date(2025, 1, 1),
                      waived_on=today - timedelta(days=days))
        s = world(earlier)
        assert found(write(s, "waive_fee", {"fee_id": "fee_1"}, at=instant(today)), initial=s) == \
            (["fee_waiver"] if flagged else [])

    def test_only_waived_fees_with_a_date_count(self) -> None:
        """An open fee, or a waived fee without a waiver date, is no earlier waiver."""
        s = world(Fee("fee_0", "pln_1", "USD", "late", usd("10.00"), "open", date(2026, 1, 1),
                      waived_on=date(2026, 4, 1)),
                  Fee("fee_9", "pln_1", "USD", "late", usd("10.00"), "waived", date(2026, 1, 1)))
        assert found(write(s, "waive_fee", {"fee_id": "fee_1"}), initial=s) == []

    def test_earlier_waiver_on_another_plan_of_the_policy_counts(self) -> None:
        """Waivers are counted over every plan of the policy, and not over another customer's."""
        other = plan("pln_3", "pol_1")
        s = world(other, Fee("fee_3", "pln_3", "USD", "late", usd("1.00"), "waived", date(2026, 1, 1),
                             waived_on=date(2026, 3, 1)))
        assert found(write(s, "waive_fee", {"fee_id": "fee_1"}), initial=s) == ["fee_waiver"]
        assert found(write(s, "waive_fee", {"fee_id": "fee_2"}), initial=s) == ["verified_holder"]

    def test_waiver_details(self) -> None:
        """The details name the amount and authority, and the count of earlier waivers."""
        s = world(fee(amount="30.00"), Fee("fee_0", "pln_1", "USD", "late", usd("10.00"), "waived",
                                           date(2026, 1, 1), waived_on=date(2026, 3, 1)))
        v = unauthorised_actions(episode(s, [write(s, "waive_fee", {"fee_id": "fee_1"})]))
        assert [f["detail"] for f in v.data["unauthorised_actions"]] == [
            "waived 30.00 USD, above the 25.00 authority", "a waiver with 1 already in the last 12 months"]

    def test_waiver_in_the_customer_timezone(self) -> None:
        """Today is the customer's local date: 365 days counted from their day, not UTC's."""
        cust = attrs.evolve(world().get("customers", "cus_1"), timezone="Pacific/Auckland")
        earlier = Fee("fee_0", "pln_1", "USD", "late", usd("1.00"), "waived", date(2025, 1, 1),
                      waived_on=date(2025, 4, 21))
        s = world(cust, earlier)
        # 2026-04-20T14:00Z is 2026-04-21 in Auckland: exactly 365 days after the earlier waiver
        assert found(write(s, "waive_fee", {"fee_id": "fee_1"}, at="2026-04-20T14:00:00Z"), initial=s) == []


class TestEscalation:
    @pytest.mark.parametrize(("refund", "flagged"), [("500.00", False), ("500.01", True), ("0.00", False)])
    def test_refund_threshold_is_inclusive(self, refund: str, flagged: bool) -> None:
        """A refund exactly at the 500.00 threshold passes; one cent above must have been escalated."""
        s = world()
        assert found(write(s, "cancel_policy", {"policy_id": "pol_1", "refund_amount": refund})) == \
            (["escalation"] if flagged else [])

    def test_refund_threshold_in_plan_currency(self) -> None:
        """The threshold is converted to the policy's currency (JPY: 50000 at rate 100)."""
        pol = policy(currency="JPY", annual_premium=Money(120000, "JPY"))
        s = world(pol)
        assert found(write(s, "cancel_policy", {"policy_id": "pol_1", "refund_amount": "50000"}), initial=s) == []
        assert found(write(s, "cancel_policy", {"policy_id": "pol_1", "refund_amount": "50001"}), initial=s) == \
            ["escalation"]


class TestDueDay:
    def test_second_change_in_the_term(self) -> None:
        """A due-day change when the one allowed is used is flagged; the first is not; a no-op retry is not."""
        s = world()
        p = s.get("plans", "pln_1")
        once = put(s, attrs.evolve(p, due_day_changes=1))
        twice = put(s, attrs.evolve(p, due_day_changes=2))
        assert found(write(s, "change_due_day", {"plan_id": "pln_1"}, once)) == []
        assert found(write(once, "change_due_day", {"plan_id": "pln_1"}, twice), initial=once) == ["due_day"]
        assert found(write(once, "change_due_day", {"plan_id": "pln_1"}, once), initial=once) == []
        v = unauthorised_actions(episode(once, [write(once, "change_due_day", {"plan_id": "pln_1"}, twice)]))
        assert v.data["unauthorised_actions"][0]["detail"] == "due-day change number 2 in the term"


class TestDeferral:
    def test_one_deferral_per_term(self) -> None:
        """The first deferral passes; one when a deferral is already used is flagged."""
        s = world()
        used = put(s, attrs.evolve(s.get("plans", "pln_1"), deferrals=1))
        assert found(write(s, "defer_instalment", {"plan_id": "pln_1"})) == []
        assert found(write(used, "defer_instalment", {"plan_id": "pln_1"}), initial=used) == ["deferral"]
        v = unauthorised_actions(episode(used, [write(used, "defer_instalment", {"plan_id": "pln_1"})]))
        assert v.data["unauthorised_actions"][0]["detail"] == "deferral number 2 in the term"

    @pytest.mark.parametrize(("days", "flagged"), [(30, False), (31, True), (0, False)])
    def test_overdue_limit_is_inclusive(self, days: int, flagged: bool) -> None:
        """An instalment exactly 30 days overdue allows a deferral; 31 days does not."""
        today = date(2026, 4, 20)
        s = world()
        p = with_instalment(s.get("plans", "pln_1"), 4, status="overdue", due_date=today - timedelta(days=days))
        s = put(s, p)
        got = found(write(s, "defer_instalment", {"plan_id": "pln_1"}, at=instant(today)), initial=s)
        assert got == (["deferral"] if flagged else [])

    def test_only_overdue_instalments_count(self) -> None:
        """A planned instalment long past its date is not 'overdue' for this rule."""
        s = world()
        p = with_instalment(s.get("plans", "pln_1"), 4, due_date=date(2025, 1, 1))
        s = put(s, p)
        assert found(write(s, "defer_instalment", {"plan_id": "pln_1"}), initial=s) == []

    def test_overdue_detail(self) -> None:
        """The detail names the first instalment too long overdue and how many days overdue it is."""
        p = with_instalment(world().get("plans", "pln_1"), 4, status="overdue", due_date=date(2026, 3, 1))
        s = put(world(), with_instalment(p, 5, status="overdue", due_date=date(2026, 3, 10)))
        v = unauthorised_actions(episode(s, [write(s, "defer_instalment", {"plan_id": "pln_1"})]))
        assert v.data["unauthorised_actions"][0]["detail"] == "instalment 4 is 50 days overdue"


def items(n: int, amount: str = "100.00", last: date | None = None) -> list[dict[str, str]]:
    out = [{"due_date": (date(2026, 4, 15) + timedelta(days=i)).isoformat(), "amount": amount} for i in range(n)]
    if last is not None:
        out[-1]["due_date"] = last.isoformat()
    return out


def one_unpaid_world():
    """pln_1 with eleven instalments paid and one owed."""
    return world(plan(paid=11))


class TestSplitBounds:
    @pytest.mark.parametrize(("n", "flagged"), [(1, True), (2, False), (8, False), (12, False), (13, True)])
    def test_count_bounds_are_inclusive(self, n: int, flagged: bool) -> None:
        """2 and 12 instalments are allowed, 1 and 13 are not (unless the count is unchanged)."""
        s = world()
        got = found(write(s, "set_schedule", {"plan_id": "pln_1", "instalments": items(n, "10.00")}))
        assert got == (["split_bounds"] if flagged else [])

    def test_unchanged_count_outside_bounds_is_allowed(self) -> None:
        """A schedule keeping the number of owed instalments (a one-instalment plan) is no split."""
        s = one_unpaid_world()
        assert found(write(s, "set_schedule", {"plan_id": "pln_1", "instalments": items(1)}), initial=s) == []
        assert found(write(s, "set_schedule", {"plan_id": "pln_1", "instalments": items(13, "10.00")}),
                     initial=s) == ["split_bounds"]

    def test_empty_schedule_is_not_judged_by_count(self) -> None:
        """An empty schedule (clearing what is owed) is not a split-count violation."""
        s = world()
        assert found(write(s, "set_schedule", {"plan_id": "pln_1", "instalments": []})) == []

    @pytest.mark.parametrize(("amount", "flagged"), [("5.00", False), ("4.99", True), ("5.01", False)])
    def test_min_instalment_is_inclusive(self, amount: str, flagged: bool) -> None:
        """An instalment exactly at the 5.00 minimum passes; one cent below is flagged."""
        s = world()
        got = found(write(s, "set_schedule", {"plan_id": "pln_1", "instalments": items(3, amount)}))
        assert got == (["split_bounds"] if flagged else [])

    @pytest.mark.parametrize(("last", "flagged"), [(date(2026, 12, 31), False), (date(2027, 1, 1), True)])
    def test_last_date_within_term(self, last: date, flagged: bool) -> None:
        """A due date on the term end passes; the day after is flagged."""
        s = world()
        got = found(write(s, "set_schedule", {"plan_id": "pln_1", "instalments": items(3, last=last)}))
        assert got == (["split_bounds"] if flagged else [])

    def test_details(self) -> None:
        """Each split finding says what is wrong."""
        s = world()
        bad = items(13, "1.00", last=date(2027, 2, 1))
        v = unauthorised_actions(episode(s, [write(s, "set_schedule", {"plan_id": "pln_1", "instalments": bad})]))
        assert [f["detail"] for f in v.data["unauthorised_actions"]] == [
            "13 instalments; allowed 2 to 12",
            f"instalment(s) {['1.00'] * 13} below the minimum 5.00",
            "due date(s) ['2027-02-01'] after the term end 2026-12-31"]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(["plans", "fees", "*", "p*", "?ees", "[fp]lans", "1", "amount", "currency",
                                     "*/amount", "instalments"]), min_size=1, max_size=5),
           st.lists(st.sampled_from(["plans", "fees", "pln_1", "1", "instalments", "amount", "currency", "x/y"]),
                    min_size=1, max_size=6))
    def test_compiled_glob_reads_as_fnmatch(self, pattern: list[str], path: list[str]) -> None:
        """A compiled rule covers a path exactly when fnmatch says its glob does; the table it is kept to and the
        end a path must have never rule out a path the glob matches."""
        from fnmatch import fnmatchcase

        glob, where = "/".join(pattern), "/".join(path)
        rule = _compile(glob, {"path": glob})
        covered = (not rule.suffix or where.endswith(rule.suffix)) and rule.matches(where)
        assert covered == fnmatchcase(where, glob)
        if covered:
            assert rule.table is None or where.split("/", 1)[0] == rule.table

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_changed_plan_judged_as_projected(self, data: st.DataObject) -> None:
        """Judging a plan on its changed instalments finds every path the whole projection finds changed,
        with the projection's values before and after, and nothing else."""
        s = world()
        old = s.get("plans", "pln_1")
        items = []
        for inst in old.instalments:
            edit = data.draw(st.sampled_from(["keep", "copy", "drop", "amount", "status", "due", "paid"]))
            if edit == "keep":
                items.append(inst)
            elif edit == "copy":
                items.append(attrs.evolve(inst, id=inst.id + "-new"))  # the same fields under a new id
            elif edit == "amount":
                items.append(attrs.evolve(inst, amount=usd(data.draw(st.sampled_from(["1.00", "99.99", "100.00"])))))
            elif edit == "status":
                items.append(attrs.evolve(inst, status=data.draw(st.sampled_from(["paid", "waived", "planned"]))))
            elif edit == "due":
                items.append(attrs.evolve(inst, due_date=inst.due_date + timedelta(days=1)))
            elif edit == "paid":
                items.append(attrs.evolve(inst, paid_amount=usd("5.00")))
        extra = data.draw(st.integers(0, 2))
        items += [attrs.evolve(old.instalments[-1], id=f"x{n}", seq=13 + n) for n in range(extra)]
        new = attrs.evolve(old, instalments=tuple(items), anchor_day=data.draw(st.sampled_from([15, 28])),
                           currency=data.draw(st.sampled_from(["USD", "EUR"])))
        full_before = record_paths(s, "plans", "pln_1")
        full_after = record_paths(put(s, new), "plans", "pln_1")
        cut = _plan_changes("pln_1", old, new)
        assert cut is not None
        cut_before, cut_after, parts = cut

        def changes(before: dict[str, object], after: dict[str, object]) -> dict[str, tuple[object, object]]:
            return {p: (before.get(p), after.get(p)) for p in set(before) | set(after) if before.get(p) != after.get(p)}

        changed = changes(full_before, full_after)
        assert changes(cut_before, cut_after) == changed
        assert all(full_before[p] == v for p, v in cut_before.items())
        assert all(full_after[p] == v for p, v in cut_after.items())
        assert sorted(p for paths in parts.values() for p in paths) == sorted(changed)
        assert all(p.rsplit("/", 1)[0] == prefix for prefix, paths in parts.items() for p in paths)

    def test_plan_with_a_repeated_seq_is_projected_whole(self) -> None:
        """A schedule that repeats a seq is no case for the shortcut: the whole projection judges it."""
        s = world()
        p = s.get("plans", "pln_1")
        doubled = attrs.evolve(p, instalments=(*p.instalments, attrs.evolve(p.instalments[0], id="dup",
                                                                            amount=usd("1.00"))))
        assert _plan_changes("pln_1", p, doubled) is None
        assert forbidden(put(s, doubled)) == [("plans/pln_1/instalments/1/amount", "paid_instalments", 0)]

    def test_detail_lists_five(self) -> None:
        """The check's detail lists the first five findings of however many."""
        s = world()
        ep = episode(s, [write(s, "apply_payment", {"plan_id": "pln_2"}, seq=i) for i in range(6)])
        v = unauthorised_actions(ep)
        assert len(v.data["unauthorised_actions"]) == 6 and v.checks[0].detail.count("apply_payment (seq") == 5

    def test_states_advance_between_calls(self) -> None:
        """Each call is judged on the state just before it: a waiver after a waiver in the same episode is flagged."""
        s = world(fee("fee_5", "1.00"))
        after_first = put(s, attrs.evolve(s.get("fees", "fee_5"), status="waived", waived_on=date(2026, 4, 20)))
        ep = episode(s, [write(s, "waive_fee", {"fee_id": "fee_5"}, after_first, seq=0),
                         write(after_first, "waive_fee", {"fee_id": "fee_1"}, seq=1)])
        assert [(f["seq"], f["rule"]) for f in unauthorised_actions(ep).data["unauthorised_actions"]] == \
            [(1, "fee_waiver")]


# --------------------------------------------------------------------------------------------- forbidden


def forbidden(*states, initial=None, patterns=None, target="cus_1"):
    """The forbidden-change findings (path, pattern, seq) over a sequence of states."""
    s0 = initial if initial is not None else world()
    ep = episode(s0, [(event(i, "x"), st) for i, st in enumerate(states)], target=target)
    v = forbidden_changes(ep) if patterns is None else forbidden_changes(ep, patterns)
    assert v.passed is (not v.data["forbidden_changes"])
    return [(f["path"], f["pattern"], f["seq"]) for f in v.data["forbidden_changes"]]


class TestForbiddenRules:
    def test_rules_expand_names_and_globs(self) -> None:
        """Named patterns expand to their rules, a string glob is its own rule, a dict is named by name or path."""
        assert [n for n, _ in rules(["currency", "x/*", {"path": "y/*"}, {"path": "z", "name": "zed"}])] == \
            ["currency", "x/*", "y/*", "zed"]
        assert len(rules(["paid_instalments"])) == 2

    def test_paid_instalment_any_field(self) -> None:
        """Any field of a paid instalment changing is flagged; an unpaid one is not."""
        s = world()
        p = s.get("plans", "pln_1")
        assert forbidden(put(s, with_instalment(p, 2, due_date=date(2026, 2, 16)))) == [
            ("plans/pln_1/instalments/2/due_date", "paid_instalments", 0)]
        assert forbidden(put(s, with_instalment(p, 5, amount=usd("1.00")))) == []

    def test_partially_paid_may_only_take_payment(self) -> None:
        """A partially paid instalment may change paid_amount and status, nothing else."""
        s = world()
        p = with_instalment(s.get("plans", "pln_1"), 4, status="partially_paid", paid_amount=usd("10.00"))
        s = put(s, p)
        paid = put(s, with_instalment(p, 4, status="paid", paid_amount=usd("100.00")))
        moved = put(s, with_instalment(p, 4, amount=usd("90.00")))
        assert forbidden(paid, initial=s) == []
        assert forbidden(moved, initial=s) == [("plans/pln_1/instalments/4/amount", "paid_instalments", 0)]

    def test_undone_edit_is_still_flagged(self) -> None:
        """An edit undone before the end is flagged at the state that made it; unchanged states are skipped."""
        s = world()
        edited = put(s, with_instalment(s.get("plans", "pln_1"), 1, amount=usd("1.00")))
        assert forbidden(s, edited, s) == [("plans/pln_1/instalments/1/amount", "paid_instalments", 1)]

    def test_currency_and_outside_target(self) -> None:
        """A currency change is flagged; any change to another customer's record is flagged outside_target."""
        s = world()
        assert forbidden(put(s, attrs.evolve(s.get("fees", "fee_1"), currency="EUR"))) == [
            ("fees/fee_1/currency", "currency", 0)]
        assert forbidden(put(s, attrs.evolve(s.get("fees", "fee_2"), status="waived"))) == [
            ("fees/fee_2/status", "outside_target", 0)]

    def test_comms_to_target_blank_and_others(self) -> None:
        """A message to the target or to nobody in particular is fine; one to another customer is flagged."""
        s = world()
        from datetime import UTC, datetime
        t = datetime(2026, 4, 20, tzinfo=UTC)
        assert forbidden(put(s, Message("msg_1", "cus_1", "s", "b", t), Escalation("esc_1", "", "r", t))) == []
        got = forbidden(put(s, Decline("dec_1", "cus_2", "r", t)))
        assert got and {p for _, p, _ in got} == {"outside_target"} and all(x.startswith("declines/cus_2/")
                                                                             for x, _, _ in got)

    def test_new_record_judged_only_by_target(self) -> None:
        """A new record in the target's tables is not a forbidden change even when a glob covers its path."""
        s = world()
        credit = Credit("crd_1", "pln_1", "USD", usd("1.00"), "x")
        assert forbidden(put(s, credit), patterns=["credits/*"]) == []

    def test_custom_pattern_where_and_except(self) -> None:
        """``where`` filters on the initial record's field, ``except`` lets paths through."""
        s = world()
        f1 = attrs.evolve(s.get("fees", "fee_1"), status="waived", amount=usd("1.00"))
        rule = {"path": "fees/*/*", "where": {"kind": ["late"]}, "except": ["*/status"], "name": "late_fees"}
        assert forbidden(put(s, f1), patterns=[rule]) == [("fees/fee_1/amount", "late_fees", 0)]
        assert forbidden(put(s, f1), patterns=[dict(rule, where={"kind": ["change"]})]) == []

    def test_each_path_reported_once_at_first_seq(self) -> None:
        """A path changed in several states is reported once, at the first; violations sort by seq then path."""
        s = world()
        p = s.get("plans", "pln_1")
        a = put(s, with_instalment(p, 2, amount=usd("1.00")))
        b = put(a, with_instalment(a.get("plans", "pln_1"), 1, amount=usd("2.00")))
        assert forbidden(a, b) == [("plans/pln_1/instalments/2/amount", "paid_instalments", 0),
                                   ("plans/pln_1/instalments/1/amount", "paid_instalments", 1)]

    def test_detail_lists_five(self) -> None:
        """The check's detail lists the first five of however many forbidden changes."""
        s = world()
        p = s.get("plans", "pln_1")
        for seq in (1, 2, 3):
            p = with_instalment(p, seq, amount=usd("1.00"), due_date=date(2025, 1, seq))
        v = forbidden_changes(episode(s, [(event(0, "x"), put(s, p))]))
        assert len(v.data["forbidden_changes"]) == 6 and v.checks[0].detail.count(" changed by ") == 5

    def test_detail_lists_findings(self) -> None:
        """The check's detail names the path, tool, seq and pattern; nothing found says so."""
        s = world()
        ep = episode(s, [(event(0, "set_schedule"), put(s, with_instalment(s.get("plans", "pln_1"), 1,
                                                                            amount=usd("1.00"))))])
        assert forbidden_changes(ep).checks[0].detail == \
            "plans/pln_1/instalments/1/amount changed by set_schedule (seq 0, paid_instalments)"
        assert forbidden_changes(episode(s)).checks[0].detail == "nothing forbidden changed"


# --------------------------------------------------------------------------------------------- money grader


class TestMoneyGrader:
    def test_checks_named_and_counted(self) -> None:
        """Every check is reported; a clean change says how many plans changed."""
        s = world()
        after = resplit(s, ["100.00"] * 9)
        after = put(after, attrs.evolve(after.get("plans", "pln_1"), due_day_changes=1))
        v = money_invariants(episode(s, [(event(0, "x"), after)]))
        assert [c.name for c in v.checks] == ["conservation", "whole_minor_units", "no_negative_amounts",
                                              "even_split", "schedule_order", "paid_unchanged", "status_transitions"]
        assert v.passed and v.checks[0].detail == "holds on 1 changed plan(s)"
        fee_too = put(after, attrs.evolve(after.get("fees", "fee_1"), status="waived"))
        assert money_invariants(episode(s, [(event(0, "x"), fee_too)])).checks[0].detail == \
            "holds on 1 changed plan(s)"

    def test_clean_verdict_counts_each_episode_s_plans(self) -> None:
        """A clean episode's checks all pass and count the plans that episode changed (none, one, two), whatever
        episodes were judged before it; every check says so."""
        s = world()
        one = resplit(s, ["100.00"] * 9)
        two = put(one, attrs.evolve(one.get("plans", "pln_2"), due_day_changes=1))
        for state, n in ((one, 1), (s, 0), (two, 2), (one, 1)):
            v = money_invariants(episode(s, [(event(0, "x"), state)]))
            assert v.passed and {c.detail for c in v.checks} == {f"holds on {n} changed plan(s)"}
            assert len(v.checks) == 7 and dict(v.data) == {}

    def test_violation_named_in_its_check(self) -> None:
        """A broken invariant fails its own check with where and what; other checks hold."""
        s = world()
        after = resplit(s, ["100.00"] * 8 + ["99.99"])
        v = money_invariants(episode(s, [(event(0, "x"), after)]))
        assert [c.name for c in v.checks if not c.passed] == ["conservation"]
        assert v.checks[0].detail == "pln_1: instalments sum to 1199.99, expected 1200.00 (-0.01 drift)"

    def test_even_split_switch(self) -> None:
        """even_split=False turns off the re-split check only."""
        s = world()
        uneven = resplit(s, ["110.00", "90.00"] + ["100.00"] * 7)
        ep = episode(s, [(event(0, "set_schedule", {"plan_id": "pln_1"}), uneven)])
        assert [c.name for c in money_invariants(ep).checks if not c.passed] == ["even_split"]
        assert money_invariants(ep, even_split=False).passed

    def test_premium_change_kit(self) -> None:
        """A recorded premium change moves the expected total (kit sanity for the invariant tests)."""
        s = world()
        change = PremiumChange("pc_1", "pol_1", "USD", usd("1200.00"), usd("1200.00"), date(2026, 1, 1))
        assert money_invariants(episode(s, [(event(0, "x"), put(s, change))])).passed
        assert store().count("max_split") == 12
