"""The bundled suite: every scenario loads, its solutions pass at every seed, doing nothing fails,
and perturbation is deterministic and stays inside each scenario's space."""

from __future__ import annotations

import attrs
import pytest

from graders.state import expected_final_state
from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.judge import grade, solution_end_states
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._scenario.scenario import CATEGORIES, load_suite
from simworld._world.money import Money, exponent
from simworld._world.tools import OUTCOMES

SUITE = load_suite()
IDS = [s.id for s in SUITE]
SEEDS = range(30)


def _graded(scenario, spec, seed):
    episode = play(Environment(scenario, seed, agent_name=spec), build_agent_factory(spec))
    return episode, grade(scenario, episode, solution_end_states(scenario, seed))


class TestCoverage:
    def test_at_least_eight_scenarios_all_outcomes(self) -> None:
        """The suite has at least 8 scenarios and covers all four outcome classes."""
        assert len(SUITE) >= 8
        assert {o for s in SUITE for o in s.allowed_outcomes} == set(OUTCOMES)
        assert {s.category for s in SUITE} <= set(CATEGORIES)

    def test_currencies_of_every_exponent(self) -> None:
        """Across seeds the suite meets 0-, 2- and 3-decimal currencies."""
        exps = {exponent(s.instance(seed).vars["currency"]) for s in SUITE for seed in range(10)}
        assert exps == {0, 2, 3}


@pytest.mark.parametrize("scenario", SUITE, ids=IDS)
class TestEveryScenario:
    def test_every_solution_passes_every_seed(self, scenario) -> None:
        """Each solution file, played as a script, passes the scenario's graders at seeds 0..29."""
        for seed in SEEDS:
            expected = solution_end_states(scenario, seed)
            for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True):
                episode = play(Environment(scenario, seed, agent_name=f"solution:{name}"), steps_factory(steps, name))
                result = grade(scenario, episode, expected)
                assert result["passed"], (seed, name, [c for c in result["checks"] if not c["passed"]])

    def test_state_part_can_fail(self, scenario) -> None:
        """The end-state grader is not a tautology on solutions: one minor unit off a solution's end state fails.

        Grading a solution against the end states of the solutions (above) cannot fail its state part, so
        each solution's end state, with its target plan's last instalment one minor unit off, must fail
        against those same end states, naming that field.
        """
        for seed in (0, 1):
            expected = solution_end_states(scenario, seed)
            for steps, name in zip(scenario.solutions, scenario.solution_files, strict=True):
                episode = play(Environment(scenario, seed, agent_name=f"solution:{name}"), steps_factory(steps, name))
                plan = episode.final_state.get("plans", scenario.target["plan"])
                last = plan.instalments[-1]
                bumped = attrs.evolve(last, amount=Money(last.amount.minor + 1, last.amount.currency))
                final = episode.final_state.put(attrs.evolve(plan, instalments=(*plan.instalments[:-1], bumped)))
                off = attrs.evolve(episode, final_state=final, states=(*episode.states[:-1], final))
                v = expected_final_state(off, expected)
                assert not v.passed, (seed, name)
                path = f"plans/{plan.id}/instalments/{last.seq}/amount"
                assert path in [d["path"] for d in v.data["state_diff"]], (seed, name, v.data["state_diff"])
                assert expected_final_state(episode, expected).passed, (seed, name)

    def test_noop_fails(self, scenario) -> None:
        """Doing nothing fails every scenario (no terminal outcome), at several seeds."""
        for seed in (0, 1, 2):
            _, result = _graded(scenario, "noop", seed)
            assert not result["passed"]

    def test_perturbation_deterministic(self, scenario) -> None:
        """The same seed gives the same initial state and variables; seeds differ somewhere."""
        a, b = scenario.instance(4), scenario.instance(4)
        assert a.state.hash == b.state.hash and a.vars == b.vars and a.clock == b.clock
        hashes = {scenario.instance(seed).state.hash for seed in range(10)}
        assert len(hashes) > 1

    def test_perturbation_touches_only_the_target(self, scenario) -> None:
        """Perturbation writes only the target's policy, plan, fees and payments, as a small overlay."""
        inst = scenario.instance(7)
        t = scenario.target
        allowed = {("policies", t["policy"]), ("plans", t["plan"])}
        allowed |= {("fees", f.id) for f in inst.state.children("fees", "plan_id", t["plan"])}
        allowed |= {("payments", p.id) for p in inst.state.children("payments", "plan_id", t["plan"])}
        assert set(inst.state.overlay) <= allowed

    def test_paid_stays_paid(self, scenario) -> None:
        """Perturbation keeps every instalment's status and makes paid amounts equal amounts."""
        base_plan = scenario.snapshot.state().get("plans", scenario.target["plan"])
        for seed in range(10):
            plan = scenario.instance(seed).state.get("plans", scenario.target["plan"])
            assert [i.status for i in plan.instalments] == [i.status for i in base_plan.instalments]
            for inst in plan.instalments:
                if inst.status == "paid":
                    assert inst.paid_amount == inst.amount
                assert inst.amount.currency == plan.currency
