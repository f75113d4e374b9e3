"""``simworld probe``: hypothesis draws a scenario's world parameters until an agent drifts.

Each example is a world drawn parameter by parameter (:func:`simworld._running.strategies.world_params`:
currency, year shift, anchor day, premium jitter, awkward remainder, the scenario's
params): the scenario is pinned to it, the agent runs, the episode is graded and every
invariant is checked. On a failure hypothesis shrinks each parameter towards its
simplest value (USD, year shift 0, the plan's own anchor day, no jitter, the smallest
amounts; the order is in :mod:`simworld._world.perturb`), so the probe reports the simplest
failing world it found rather than another arbitrary seed. It writes that world to a
file and gives the ``simworld run --world FILE`` command that replays it. Failures
are kept in hypothesis's example database (``--db``), keyed by scenario and agent, so
the next probe tries them first: a regression suite that grows by itself.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.judge import grade, solution_end_states
from simworld._episode.play import play
from simworld._grading.invariants import check_episode
from simworld._running.strategies import world_params
from simworld._scenario.scenario import Scenario
from simworld._world.clock import wall_monotonic
from simworld._world.perturb import world_file_bytes, world_id
from simworld.errors import ScenarioError

__all__ = ["DEFAULT_EXAMPLES", "ProbeFailure", "ProbeReport", "probe", "world_file_path"]

DEFAULT_EXAMPLES = 200
_SHOWN_VARS = ("currency", "annual_premium", "unpaid_balance", "unpaid_count", "anchor_day", "next_due_date",
               "term_start", "term_end")


@attrs.frozen
class ProbeFailure:
    """The shrunk counterexample: the world's parameters, what they give, and what failed there.

    ``seed`` is the number a run at this world reports (derived from the parameters);
    ``world_file`` is where the world was written (None when the probe had nowhere to
    write it), and ``command`` replays it.
    """

    world: dict[str, Any]
    seed: int
    variables: dict[str, Any]
    failed_checks: list[str]
    violations: list[str]
    state_diff: list[dict[str, Any]]
    world_file: Path | None
    command: str


@attrs.frozen
class ProbeReport:
    """What a probe ran and found; ``first_failure_at`` is the example that failed first (1-based).

    ``exhausted`` says hypothesis tried every world the scenario has (a scenario without
    premium jitter has only a few dozen) before the example budget ran out.
    """

    scenario: str
    agent: str
    examples: int
    seconds: float
    failure: ProbeFailure | None
    stopped_by_deadline: bool = False
    first_failure_at: int | None = None
    exhausted: bool = False

    @property
    def rate(self) -> float:
        """Examples per second."""
        return self.examples / self.seconds if self.seconds > 0 else 0.0


class _Drift(AssertionError):
    """One failing example (hypothesis shrinks on it)."""


def world_file_path(db: Path, scenario_id: str, agent: str) -> Path:
    """Where the probe writes the shrunk world of ``agent`` on a scenario: ``DB/worlds/SCENARIO__AGENT.json``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", agent).strip("-.") or "agent"
    return db / "worlds" / f"{scenario_id}__{slug[:80]}.json"


def probe(scenario: Scenario, agent: str, *, examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
          deadline_s: float | None = None, db: Path | None = None, suite_arg: str | None = None,
          world_file: Path | None = None) -> ProbeReport:
    """Probe ``agent`` on ``scenario`` over at most ``examples`` worlds (and ``deadline_s`` seconds).

    The shrunk world is written to ``world_file`` (by default :func:`world_file_path`
    under ``db``; with neither, it is not written and the command names ``WORLD.json``).
    """
    if scenario.split == "holdout":  # a probe tunes an agent on the worlds it finds: never on holdout
        raise ScenarioError(f"scenario {scenario.id!r} is a holdout instance (task.json \"split\": \"holdout\"); "
                            "probe draws dev worlds only, so probe a dev scenario.")
    factory = build_agent_factory(agent)
    runs = [0]
    first: list[int] = []
    failures: list[ProbeFailure] = []
    began = wall_monotonic()
    stopped = [False]
    if world_file is None and db is not None:
        world_file = world_file_path(db, scenario.id, agent)
    command = ["simworld", "run", "--world", str(world_file or "WORLD.json"), "--agent", agent]
    if suite_arg:
        command += ["--suite", suite_arg]

    def one(world: dict[str, Any]) -> None:
        if deadline_s is not None and wall_monotonic() - began > deadline_s and not failures:
            stopped[0] = True
            return  # out of time: let hypothesis run out its budget without work
        runs[0] += 1
        pinned = attrs.evolve(scenario, world=world)  # drawn by the perturbation itself, so valid
        label = world_id(scenario.id, world)
        episode = play(Environment(pinned, label, agent_name=agent), factory)
        result = grade(pinned, episode, solution_end_states(pinned, label))
        violations = [str(v) for v in check_episode(episode)]
        if result["passed"] and not violations:
            return
        if not first:
            first.append(runs[0])
        failures.append(ProbeFailure(
            dict(world), label,
            {k: episode.variables[k] for k in (*_SHOWN_VARS, *scenario.params) if k in episode.variables},
            [f"{c['name']}: {c['detail']}" for c in result["checks"] if not c["passed"]], violations,
            result["state_diff"], world_file, shlex.join(command)))
        raise _Drift(f"world {world}: {failures[-1].failed_checks or violations}")

    test = given(world=world_params(scenario))(one)
    test = settings(max_examples=examples, deadline=None,
                    database=DirectoryBasedExampleDatabase(str(db)) if db is not None else None,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                    verbosity=Verbosity.quiet, print_blob=False)(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    # Failures are stored per scenario and agent, so each probe replays its own first (the "world" part
    # keeps the seed-drawing probes' entries, whose choices mean something else, apart).
    test.hypothesis.inner_test._hypothesis_internal_add_digest = (  # type: ignore[attr-defined]
        f"simworld-probe/world/{scenario.id}/{agent}".encode())
    failure = None
    try:
        test()
    except _Drift:
        failure = failures[-1]  # hypothesis replays the shrunk example last
    if failure is not None and world_file is not None:
        world_file.parent.mkdir(parents=True, exist_ok=True)
        world_file.write_bytes(world_file_bytes(scenario.id, failure.world))
    exhausted = failure is None and not stopped[0] and runs[0] < examples
    return ProbeReport(scenario.id, agent, runs[0], wall_monotonic() - began, failure, stopped[0],
                       first[0] if first else None, exhausted)
