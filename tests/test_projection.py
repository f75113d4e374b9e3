"""The canonical projection: comparing two states record by record is comparing their whole projections."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import attrs
import pytest

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.judge import solution_end_states
from simworld._episode.play import play
from simworld._grading.projection import compare, diff, project, projected_size, touched
from simworld._scenario.scenario import load_suite
from simworld._world.models import Message, PremiumChange
from simworld._world.money import Money
from simworld._world.state import State

SUITE = load_suite()
BY_ID = {s.id: s for s in SUITE}


def _whole(expected: State, actual: State, keys: Any) -> tuple[list[dict[str, Any]], int]:
    """What :func:`compare` stands for: both whole projections, diffed."""
    e = project(expected, keys)
    return diff(e, project(actual, keys)), len(e)


def _start() -> State:
    return BY_ID["premium-increase-midterm"].instance(0).state


class TestCompare:
    @pytest.mark.parametrize("agent", ["random", "drift:round-each", "noop"])
    def test_real_end_states_compare_as_their_projections_diff(self, agent: str) -> None:
        """Every solution against an episode that matches none, or some, of them: the same differences in the
        same order, and the same number of fields, as diffing the whole projections."""
        factory = build_agent_factory(agent)
        differing = 0
        for scenario in SUITE:
            episode = play(Environment(scenario, 1, agent_name=agent), factory)
            for solution in solution_end_states(scenario, 1):
                keys = touched([episode.initial_state, episode.final_state, solution])
                found = compare(solution, episode.final_state, keys)
                assert found == _whole(solution, episode.final_state, keys), (agent, scenario.id)
                assert projected_size(solution, keys) == found[1]
                differing += bool(found[0])
        assert differing  # the comparison saw records that differ, not only equal ones

    def test_two_premium_changes_under_one_policy_and_date(self) -> None:
        """Premium changes are projected under their policy and date, not their id: a change the agent filed
        under another id is the expected one, and two under one date project as the last."""
        start = _start()
        policy = next(iter(start.records("policies")))
        usd = policy.currency

        def change(rid: str, day: date, amount: str) -> PremiumChange:
            return PremiumChange(rid, policy.id, usd, Money.parse("100", usd), Money.parse(amount, usd), day)

        expected = start.put(change("pc_a", date(2030, 1, 1), "120"))
        actual = start.put_all([change("pc_a", date(2030, 2, 1), "120"), change("pc_b", date(2030, 1, 1), "120")])
        keys = touched([expected, actual])
        found = compare(expected, actual, keys)
        assert found == _whole(expected, actual, keys)
        assert found[0] and all("2030-02-01" in d["path"] for d in found[0])  # pc_b stands for pc_a's January
        assert projected_size(expected, keys) == found[1]

    def test_ids_that_hold_a_slash(self) -> None:
        """A message to customer ``a/b`` with id ``m1`` and one to ``a`` with id ``b/m1`` project under the same
        paths: compared as whole projections, only their differing fields differ."""
        start = _start()
        at = datetime(2030, 1, 1, tzinfo=UTC)
        expected = start.put(Message("m1", "a/b", "Hello", "Your plan", at))
        actual = start.put(Message("b/m1", "a", "Hello", "Your plan", at))
        keys = [("messages", "m1"), ("messages", "b/m1")]
        found = compare(expected, actual, keys)
        assert found == _whole(expected, actual, keys)
        assert {d["path"].rsplit("/", 1)[1] for d in found[0]} == {"id", "customer_id"}
        assert projected_size(expected, keys) == found[1]

    def test_a_plan_with_two_instalments_under_one_seq(self) -> None:
        """Two instalments with one seq project under one path, as the last: the fields counted for a record
        the two states share are the fields its projection holds, not one per instalment field."""
        start = _start()
        plan = next(iter(start.records("plans")))
        first = plan.instalments[0]
        twin = attrs.evolve(plan.instalments[1], seq=first.seq)
        doubled = attrs.evolve(plan, instalments=(first, twin, *plan.instalments[2:]))
        expected = start.put(doubled)
        actual = start.put(doubled).put(attrs.evolve(next(iter(start.records("policies"))), status="cancelled"))
        keys = touched([expected, actual])
        found = compare(expected, actual, keys)
        assert found == _whole(expected, actual, keys)
        assert found[1] == len(project(expected, keys)) < len(project(start, keys))
        assert projected_size(expected, keys) == found[1]


class TestCountedSize:
    """A record's number of projected fields is counted from its values, not from its JSON: the same count."""

    def test_every_record_of_every_start_and_end_state_counts_as_its_json(self) -> None:
        from simworld._grading.projection import _GENERATED, _fields_leaves, _leaves
        from simworld._world.models import to_json

        seen = set()
        for scenario in SUITE:
            for state in (scenario.instance(2).state, *solution_end_states(scenario, 2)):
                for (table, _rid), record in state.overlay.items():
                    left_out = _GENERATED.get(table, ())
                    counted = _fields_leaves(record, left_out)
                    assert counted == sum(_leaves(v) for k, v in to_json(record).items() if k not in left_out)
                    assert _fields_leaves(record, ()) == _leaves(to_json(record))
                    seen.add(table)
        assert {"plans", "payments", "fees", "policies", "messages"} <= seen

    def test_nested_and_empty_values_and_a_value_it_does_not_know(self) -> None:
        from simworld._grading.projection import _fields_leaves, _leaves

        @attrs.frozen
        class Inner:
            when: date
            amount: Money

        @attrs.frozen
        class Outer:
            pairs: tuple
            none: tuple
            words: tuple
            inner: tuple
            at: datetime
            extra: Any

        usd = Money.parse("1.50", "USD")
        record = Outer(((1, usd), (2, usd)), (), ("a", "b"), (Inner(date(2026, 1, 2), usd),),
                       datetime(2026, 1, 2, tzinfo=UTC), None)
        as_json = {"pairs": [[1, "1.50"], [2, "1.50"]], "none": [], "words": ["a", "b"],
                   "inner": [{"when": "2026-01-02", "amount": "1.50"}], "at": "2026-01-02T00:00:00Z", "extra": None}
        assert _fields_leaves(record, ()) == _leaves(as_json) == 8
        assert _fields_leaves(record, ("pairs",)) == 6
        assert _fields_leaves(attrs.evolve(record, extra=[1, 2]), ()) is None  # a list: its JSON is counted instead
