"""`simworld probe`: each drifting agent is caught within the default budget, shrunk to a small seed,
and the reference agent is never flagged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import simworld

from simworld.agents import build_agent_factory
from simworld.errors import AgentSpecError
from simworld.probe import DEFAULT_EXAMPLES, probe
from simworld.runner import run_one
from simworld.scenario import load_suite

SUITE = {s.id: s for s in load_suite()}
TARGETS = [("drift:round-each", "split-balance-three-ways"), ("drift:float", "split-balance-three-ways"),
           ("drift:add-month", "split-balance-three-ways"), ("drift:resplit", "split-balance-three-ways"),
           ("drift:scale-each", "premium-increase-midterm")]



@pytest.mark.parametrize("agent, scenario", TARGETS)
class TestDriftIsCaught:
    def test_within_default_budget_and_shrunk(self, agent: str, scenario: str, tmp_path: Path) -> None:
        """The probe catches the drift within its default example budget and shrinks the seed small."""
        report = probe(SUITE[scenario], agent, seed=7, db=tmp_path / "db")
        assert report.failure is not None, f"{agent} not caught in {report.examples} examples"
        assert report.examples <= DEFAULT_EXAMPLES
        f = report.failure
        assert f.seed < 1000 and (f.failed_checks or f.violations)
        assert f.command == f"simworld run --scenario {scenario} --seed {f.seed} --agent {agent}"

    def test_the_failing_seed_really_fails_and_its_reference_passes(self, agent: str, scenario: str,
                                                                    tmp_path: Path) -> None:
        """At the shrunk seed the drifting agent fails and the reference passes: the drift, not the seed."""
        f = probe(SUITE[scenario], agent, seed=7, db=tmp_path / "db").failure
        assert f is not None
        factory = build_agent_factory(agent)
        drifting = lambda: factory(SUITE[scenario], f.seed, dict(SUITE[scenario].instance(f.seed).vars))  # noqa: E731
        _, result = run_one(SUITE[scenario], f.seed, drifting)
        assert not result["passed"]
        reference = build_agent_factory("reference")
        _, ok = run_one(SUITE[scenario], f.seed,
                        lambda: reference(SUITE[scenario], f.seed, dict(SUITE[scenario].instance(f.seed).vars)))
        assert ok["passed"]


class TestDatabase:
    def test_a_failure_found_is_tried_first_next_time(self, tmp_path: Path) -> None:
        """A second probe starts from the stored failure and reports the same seed in no more examples."""
        sc = SUITE["split-balance-three-ways"]
        first = probe(sc, "drift:add-month", db=tmp_path / "db")
        assert first.failure is not None and any((tmp_path / "db").rglob("*"))
        second = probe(sc, "drift:add-month", db=tmp_path / "db")
        assert second.failure is not None and second.failure.seed == first.failure.seed
        assert second.examples <= first.examples

    def test_deadline_stops_the_search(self) -> None:
        """A spent deadline stops new examples (and says so) instead of running the whole budget."""
        report = probe(SUITE["waive-small-fee"], "reference", examples=500, deadline_s=0.0)
        assert report.failure is None and report.stopped_by_deadline and report.examples < 500


class TestCli:
    def test_drift_prints_shrunk_seed_and_replay(self, tmp_path: Path) -> None:
        """The CLI prints the shrunk seed, its parameters, the failing check and the command that replays it."""
        done = simworld("probe", "--scenario", "split-balance-three-ways", "--agent", "drift:round-each",
                        "--seed", "3", "--db", str(tmp_path / "db"))
        assert done.returncode == 1, done.stderr
        out = done.stdout
        assert "DRIFT" in out and "shrunk to seed" in out and "conservation" in out
        assert "parameters: currency=" in out and "examples/s" in out
        replay = out.split("replay: ", 1)[1].splitlines()[0]
        again = subprocess.run([sys.executable, "-m", "simworld", *replay.split()[1:], "--out", str(tmp_path / "o")],
                               capture_output=True, text=True)
        assert again.returncode == 1 and "FAIL" in again.stdout

    def test_reference_clean(self, tmp_path: Path) -> None:
        """Probing the reference agent finds nothing and exits 0."""
        done = simworld("probe", "--scenario", "waive-small-fee", "--examples", "50", "--db", str(tmp_path / "db"))
        assert done.returncode == 0 and "no drift found" in done.stdout

    def test_unknown_drift(self) -> None:
        """An unknown drift kind names the known ones."""
        with pytest.raises(AgentSpecError, match="drift:round-each"):
            build_agent_factory("drift:sideways")


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(SUITE))
def test_reference_never_flagged_over_1000_examples(scenario: str) -> None:
    """Over 1,000 perturbed seeds the reference agent never fails a grader or an invariant."""
    report = probe(SUITE[scenario], "reference", examples=1000, seed=0)
    assert report.failure is None, report.failure
    assert report.examples == 1000
