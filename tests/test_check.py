"""`simworld check`: every shipped scenario's graders are load-bearing, and a scenario whose are not is caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_suite, edit_task, simworld

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.play import play
from simworld._running.check import check_scenario, mutants, parse_seeds
from simworld._scenario.scenario import load_scenario, load_suite
from simworld.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
SUITE = load_suite()



@pytest.mark.parametrize("scenario", SUITE, ids=[s.id for s in SUITE])
class TestShippedScenarios:
    def test_check_passes_over_seeds(self, scenario) -> None:
        """Solutions pass, noop fails, and no non-equivalent mutant survives, at seeds 0..9."""
        report = check_scenario(scenario, range(10))
        assert not report.solution_failures, report.solution_failures
        assert not report.noop_passes
        survivors = [(o.seed, o.mutant.description) for o in report.outcomes if o.status == "survived"]
        assert not survivors
        assert report.count("killed") > 0 and report.ok

    def test_equivalents_have_reasons(self, scenario) -> None:
        """Every equivalent mutant carries a reason saying why it is not a wrong answer."""
        report = check_scenario(scenario, range(3))
        for o in report.outcomes:
            if o.status == "equivalent":
                assert o.reason and ("read" in o.reason or "divides evenly" in o.reason or "solution" in o.reason)


class TestMutants:
    def test_operators_present(self) -> None:
        """A split scenario gets every mutation operator the check promises."""
        (sc,) = [s for s in SUITE if s.id == "split-balance-three-ways"]
        reference = play(Environment(sc, 1), build_agent_factory("reference"))
        ops = {m.operator for m in mutants(sc, reference)}
        assert ops == {"drop-write", "drop-read", "swap-outcome", "swap-order", "paid-write", "round-each", "float",
                       "foreign-figure", "false-claim", "free-claim", "disclose", "derived-figure"}

    def test_communications_operators_on_a_hand_off(self) -> None:
        """A scenario that files a communication under a customer gets retarget mutants too, and check kills them."""
        from simworld._running.check import check_scenario

        (sc,) = [s for s in SUITE if s.id == "waive-large-fee-escalate"]
        reference = play(Environment(sc, 1), build_agent_factory("reference"))
        ops = {m.operator for m in mutants(sc, reference)}
        assert {"retarget", "foreign-figure", "false-claim"} <= ops
        report = check_scenario(sc, [1])
        comms = [o for o in report.outcomes if o.mutant.operator in ("retarget", "foreign-figure", "false-claim")]
        assert comms and all(o.status == "killed" for o in comms)

    def test_disclosure_and_derived_figure_operators(self) -> None:
        """The last text gets another customer's e-mail, their name, and a difference one minor unit off; the
        graders fail each mutant on the disclosure or figures check, not on anything else."""
        from simworld._episode.judge import grade, solution_end_states
        from simworld._running.check import _actions_factory

        (sc,) = [s for s in SUITE if s.id == "split-balance-three-ways"]
        reference = play(Environment(sc, 1), build_agent_factory("reference"))
        made = [m for m in mutants(sc, reference) if m.operator in ("disclose", "derived-figure")]
        assert [m.operator for m in made] == ["disclose", "disclose", "derived-figure"]
        last = made[0].actions[-1]["args"]
        assert "@example" in str(last) and "That is a change of" in str(made[2].actions[-1]["args"])
        solutions = solution_end_states(sc, 1, None)
        for m, check in zip(made, ("comms:disclosure", "comms:disclosure", "comms:figures"), strict=True):
            line = grade(sc, play(Environment(sc, 1), _actions_factory(m.actions)), solutions)
            assert [c["name"] for c in line["checks"] if not c["passed"]] == [check], m.description
            assert (line["total"] == 0.0) is (check == "comms:disclosure")  # disclosure is a gate

    def test_seeds_parse(self) -> None:
        """--seeds takes A..B inclusive or one seed, and refuses anything else with a clear message."""
        assert parse_seeds("0..3") == [0, 1, 2, 3] and parse_seeds("7") == [7]
        for bad in ("3..1", "a..b", "-1..2"):
            with pytest.raises(ScenarioError, match="--seeds"):
                parse_seeds(bad)


class TestCatchesWeakGraders:
    def test_non_discriminating_scenario_fails_check(self, tmp_path: Path) -> None:
        """A scenario that only checks its stop reason lets the drop-write mutant survive: check exits 1."""
        sc_dir = copy_suite(tmp_path, "waive-small-fee") / "waive-small-fee"
        edit_task(sc_dir / "task.json", expected_final_state=False, required_steps=None, forbidden_changes=[],
                  unauthorised_actions=False, money_invariants=False, communications=False,
                  requires={"stop_reason": "terminal"})
        report = check_scenario(load_scenario(sc_dir), range(2))
        assert not report.ok and report.count("survived") >= 2
        done = simworld("check", "--suite", str(tmp_path / "scenarios"), "--seeds", "0..1")
        assert done.returncode == 1
        assert "SURVIVING" in done.stdout and "drop-write" in done.stdout and "waive-small-fee" in done.stdout

    def test_wrong_ground_truth_fails_check(self, tmp_path: Path) -> None:
        """A solution that the graders reject (wrong ground truth) fails the check with its failing checks."""
        sc_dir = copy_suite(tmp_path, "waive-small-fee") / "waive-small-fee"
        sol = sc_dir / "solution.jsonl"
        lines = sol.read_text().splitlines()
        sol.write_text("\n".join(line for line in lines if "waive_fee" not in line) + "\n")
        done = simworld("check", "--suite", str(tmp_path / "scenarios"), "--seeds", "0")
        assert done.returncode == 1 and "SOLUTION FAILS" in done.stdout

    def test_cli_over_the_bundled_suite(self) -> None:
        """`simworld check --seeds 0..2` passes the whole bundled suite with a mutation score of 1.000."""
        done = simworld("check", "--seeds", "0..2")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "mutation score 1.000" in done.stdout
        for sc in SUITE:
            assert sc.id in done.stdout
        assert "equivalent mutants" in done.stdout
