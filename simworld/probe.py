"""``simworld probe``: hypothesis drives perturbed seeds of a scenario until an agent drifts.

Each example is a dev seed: the scenario is perturbed from it, the agent runs, the
episode is graded and every invariant is checked. On a failure hypothesis shrinks the
seed towards 0 and the probe reports the smallest failing seed it found, with the
seed's parameters, the failing checks, the state diff and the ``simworld run`` command
that replays it. Failures are kept in hypothesis's example database (``--db``), keyed
by scenario and agent, so the next probe tries them first: a regression suite that
grows by itself.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase

from simworld.agents import build_agent_factory
from simworld.clock import wall_monotonic
from simworld.episode import Environment
from simworld.invariants import check_episode
from simworld.runner import grade, play, solution_end_states
from simworld.scenario import Scenario
from simworld.strategies import seeds

__all__ = ["DEFAULT_EXAMPLES", "ProbeFailure", "ProbeReport", "probe"]

DEFAULT_EXAMPLES = 200
_SHOWN_VARS = ("currency", "unpaid_balance", "unpaid_count", "anchor_day", "next_due_date", "annual_premium",
               "term_start", "term_end")


@attrs.frozen
class ProbeFailure:
    """The shrunk counterexample."""

    seed: int
    variables: dict[str, Any]
    failed_checks: list[str]
    violations: list[str]
    state_diff: list[dict[str, Any]]
    command: str


@attrs.frozen
class ProbeReport:
    """What a probe ran and found."""

    scenario: str
    agent: str
    examples: int
    seconds: float
    failure: ProbeFailure | None
    stopped_by_deadline: bool = False

    @property
    def rate(self) -> float:
        """Examples per second."""
        return self.examples / self.seconds if self.seconds > 0 else 0.0


class _Drift(AssertionError):
    """One failing example (hypothesis shrinks on it)."""


def probe(scenario: Scenario, agent: str, *, examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
          deadline_s: float | None = None, db: Path | None = None, suite_arg: str | None = None) -> ProbeReport:
    """Probe ``agent`` on ``scenario`` over at most ``examples`` seeds (and ``deadline_s`` seconds)."""
    factory = build_agent_factory(agent)
    runs: list[int] = []
    failures: list[ProbeFailure] = []
    began = wall_monotonic()
    stopped = [False]

    def one(world_seed: int) -> None:
        if deadline_s is not None and wall_monotonic() - began > deadline_s and not failures:
            stopped[0] = True
            return  # out of time: let hypothesis run out its budget without work
        runs.append(world_seed)
        episode = play(Environment(scenario, world_seed, agent_name=agent), factory)
        result = grade(scenario, episode, solution_end_states(scenario, world_seed))
        violations = [str(v) for v in check_episode(episode)]
        if result["passed"] and not violations:
            return
        command = ["simworld", "run", "--scenario", scenario.id, "--seed", str(world_seed), "--agent", agent]
        if suite_arg:
            command += ["--suite", suite_arg]
        failures.append(ProbeFailure(
            world_seed, {k: episode.variables[k] for k in (*_SHOWN_VARS, *scenario.params) if k in episode.variables},
            [f"{c['name']}: {c['detail']}" for c in result["checks"] if not c["passed"]], violations,
            result["state_diff"], shlex.join(command)))
        raise _Drift(f"seed {world_seed}: {failures[-1].failed_checks or violations}")

    test = given(world_seed=seeds())(one)
    test = settings(max_examples=examples, deadline=None,
                    database=DirectoryBasedExampleDatabase(str(db)) if db is not None else None,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                    verbosity=Verbosity.quiet, print_blob=False)(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    # Failures are stored per scenario and agent, so each probe replays its own first.
    test.hypothesis.inner_test._hypothesis_internal_add_digest = (  # type: ignore[attr-defined]
        f"simworld-probe/{scenario.id}/{agent}".encode())
    failure = None
    try:
        test()
    except _Drift:
        failure = failures[-1]  # hypothesis replays the shrunk example last
    return ProbeReport(scenario.id, agent, len(runs), wall_monotonic() - began, failure, stopped[0])
