"""Running agents over a suite: episodes, grading, and what a run writes to disk.

A run directory holds ``results.jsonl`` (one canonical line per episode, no
wall-clock value), ``events/SCENARIO__seed-N.jsonl`` (each episode's event log)
and ``run.json`` (versions, arguments and wall time: the only place a wall-clock
value may appear).
"""

from __future__ import annotations

import platform
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld.agents import AgentFactory, steps_factory
from simworld.clock import TimeGuard, wall_monotonic, wall_time
from simworld.episode import Environment, Episode
from simworld.errors import ScenarioError
from simworld.events import write_events
from simworld.scenario import Scenario
from simworld.state import canonical_bytes
from simworld.verdict import Check, Verdict

__all__ = ["RunResult", "grade", "play", "run_suite", "solution_end_states"]


def play(env: Environment, agent_factory: AgentFactory) -> Episode:
    """Reset ``env``, drive one agent through it, and seal the episode. An agent crash is recorded, not raised."""
    observation = env.reset()
    try:
        agent = agent_factory(env.scenario, env.seed, dict(env.variables))
    except Exception as exc:  # a user's agent failing to build is that episode's error, not the run's
        env.fail(f"agent could not be built: {type(exc).__name__}: {exc}")
        return env.episode()
    while not env.done:
        try:
            action = agent.act(observation)
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            env.fail(f"{type(exc).__name__}: {exc} (at {Path(tb.filename).name}:{tb.lineno})")
            break
        observation, _done = env.step(action)
    return env.episode()


def solution_end_states(scenario: Scenario, seed: int, guard: TimeGuard | None = None) -> list[str]:
    """Business-state hashes of every solution's end state at ``seed``."""
    hashes = []
    for i, steps in enumerate(scenario.solutions):
        env = Environment(scenario, seed, agent_name=f"solution-{i}", guard=guard)
        episode = play(env, steps_factory(steps, f"solution-{i}"))
        if episode.error or episode.outcome is None:
            raise ScenarioError(f"{scenario.path}: solution {i} does not play at seed {seed}: "
                                f"{episode.error or episode.stop_reason}")
        hashes.append(episode.final_state.business_hash)
    return hashes


def grade(scenario: Scenario, episode: Episode, expected: Sequence[str]) -> dict[str, Any]:
    """Grade an episode with the scenario's graders; a grader that raises is a failed check, never a pass."""
    from graders.outcome import allowed_outcomes
    from graders.state import expected_final_state

    graders: list[tuple[str, Callable[[], Verdict]]] = [
        ("graders.outcome:allowed_outcomes", lambda: allowed_outcomes(episode, scenario.allowed_outcomes)),
        ("graders.state:expected_final_state", lambda: expected_final_state(episode, expected)),
    ]
    checks: list[Check] = []
    if episode.error is not None:
        checks.append(Check("agent_ran", False, episode.error))
    for name, run in graders:
        try:
            checks.extend(run().checks)
        except Exception as exc:
            checks.append(Check(name, False, f"grader raised {type(exc).__name__}: {exc}"))
    passed = all(c.passed for c in checks)
    return {
        "passed": passed,
        "score": round(sum(c.passed for c in checks) / len(checks), 4),
        "checks": [c.to_json() for c in checks],
    }


@attrs.frozen
class RunResult:
    """What a run produced: one result per episode, and where it was written."""

    results: tuple[dict[str, Any], ...]
    out: Path | None
    wall_seconds: float


def result_line(episode: Episode, grading: dict[str, Any]) -> dict[str, Any]:
    return {
        "scenario": episode.scenario,
        "seed": episode.seed,
        "agent": episode.agent,
        "outcome": episode.outcome,
        "stop_reason": episode.stop_reason,
        "error": episode.error,
        **grading,
        "counters": dict(episode.counters),
        "state_hash": episode.state_hash,
        "events_hash": episode.events_hash,
    }


def run_suite(scenarios: Sequence[Scenario], seeds: Sequence[int], agent_name: str, agent_factory: AgentFactory,
              out: Path | None, *, argv: Sequence[str] = (),
              progress: Callable[[int, int, str], None] | None = None) -> RunResult:
    """Run ``agent_factory``'s agents over every (scenario, seed), grade, and write the run to ``out``."""
    began, began_epoch = wall_monotonic(), wall_time()
    if out is not None:
        (out / "events").mkdir(parents=True, exist_ok=True)
    results = []
    total = len(scenarios) * len(seeds)
    done = 0
    with TimeGuard() as guard:
        for scenario in scenarios:
            for seed in seeds:
                if progress:
                    progress(done, total, f"{scenario.id} seed {seed}")
                env = Environment(scenario, seed, agent_name=agent_name, guard=guard)
                episode = play(env, agent_factory)
                expected = solution_end_states(scenario, seed, guard)
                line = result_line(episode, grade(scenario, episode, expected))
                results.append(line)
                if out is not None:
                    write_event_file(out / "events" / f"{scenario.id}__seed-{seed}.jsonl", scenario, episode)
                done += 1
    if progress:
        progress(done, total, "done")
    wall = wall_monotonic() - began
    if out is not None:
        (out / "results.jsonl").write_bytes(b"".join(canonical_bytes(r) + b"\n" for r in results))
        meta = {
            "simworld": _version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "argv": list(argv) or sys.argv[1:],
            "agent": agent_name,
            "seeds": list(seeds),
            "scenarios": [s.id for s in scenarios],
            "episodes": len(results),
            "passed": sum(1 for r in results if r["passed"]),
            "started_at_epoch": round(began_epoch, 3),
            "wall_seconds": round(wall, 4),
        }
        (out / "run.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return RunResult(tuple(results), out, wall)


def write_event_file(path: Path, scenario: Scenario, episode: Episode) -> None:
    """Write one episode's event log with its header and footer."""
    header = {"scenario": scenario.id, "seed": episode.seed, "agent": episode.agent,
              "snapshot": scenario.snapshot.name, "initial_state_hash": episode.initial_state.hash}
    footer = {"outcome": episode.outcome, "stop_reason": episode.stop_reason, "error": episode.error,
              "final_state_hash": episode.final_state.hash, "events_hash": episode.events_hash}
    write_events(path, header, episode.events, footer)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simworld")
    except PackageNotFoundError:
        return "0+unknown"
