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
from simworld.grading import grade_episode
from simworld.scenario import Scenario
from simworld.splits import effective_seed
from simworld.state import State, canonical_bytes

__all__ = ["RunResult", "grade", "play", "run_one", "run_suite", "solution_end_states"]


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
        if observation.resumed and not env.done:
            # The agent died mid-call: a fresh one takes over the reloaded session.
            try:
                agent = agent_factory(env.scenario, env.seed, dict(env.variables))
            except Exception as exc:
                env.fail(f"agent could not be rebuilt after the crash: {type(exc).__name__}: {exc}")
                break
    return env.episode()


def run_one(scenario: Scenario, seed: int, agent: Callable[[], Any]) -> tuple[Episode, dict[str, Any]]:
    """Run one episode of ``agent`` (a class or a zero-argument factory) and grade it.

    Returns the sealed episode and its result fields, as ``simworld run`` would write them.
    """
    episode = play(Environment(scenario, seed, agent_name=getattr(agent, "__name__", "agent")),
                   lambda sc, s, v: agent())
    return episode, result_line(episode, grade(scenario, episode, solution_end_states(scenario, seed)))


def solution_end_states(scenario: Scenario, seed: int, guard: TimeGuard | None = None) -> tuple[State, ...]:
    """The end state of every solution of ``scenario`` at ``seed``.

    A solution that does not play to a terminal tool is a ScenarioError: the ground
    truth is wrong, and no agent should be graded against it.
    """
    states = []
    for i, steps in enumerate(scenario.solutions):
        env = Environment(scenario, seed, agent_name=f"solution-{i}", guard=guard)
        episode = play(env, steps_factory(steps, f"solution-{i}"))
        bad = [e for e in episode.events if e.status != "ok"]
        if episode.error or episode.outcome is None or bad:
            why = episode.error or (f"call seq {bad[0].seq} {bad[0].tool} returned {bad[0].status}: "
                                    f"{bad[0].result}" if bad else episode.stop_reason)
            raise ScenarioError(f"{scenario.path}: solution {i} does not play at seed {seed}: {why}")
        states.append(episode.final_state)
    return tuple(states)


def grade(scenario: Scenario, episode: Episode, solutions: Sequence[State]) -> dict[str, Any]:
    """Grade an episode with the scenario's graders; a grader that raises is a failed check, never a pass."""
    ex = scenario.expectations
    return grade_episode(ex.graders, episode, solutions, ex.weights)


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
              out: Path | None, *, argv: Sequence[str] = (), split: str = "dev",
              progress: Callable[[int, int, str], None] | None = None) -> RunResult:
    """Run ``agent_factory``'s agents over every (scenario, seed), grade, and write the run to ``out``."""
    began, began_epoch = wall_monotonic(), wall_time()
    if out is not None:
        (out / "events").mkdir(parents=True, exist_ok=True)
    results = []
    total = len(scenarios) * len(seeds)
    done = 0
    plan = [(scenario, effective_seed(scenario.id, seed, split)) for scenario in scenarios for seed in seeds]
    with TimeGuard() as guard:
        for scenario, seed in plan:
            if progress:
                progress(done, total, f"{scenario.id} seed {seed}")
            env = Environment(scenario, seed, agent_name=agent_name, guard=guard)
            episode = play(env, agent_factory)
            expected = solution_end_states(scenario, seed, guard)
            line = result_line(episode, grade(scenario, episode, expected))
            line["hook_errors"] = run_post_hooks(scenario, episode, line, out)
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
            "split": split,
            "scenarios": [s.id for s in scenarios],
            "episodes": len(results),
            "passed": sum(1 for r in results if r["passed"]),
            "started_at_epoch": round(began_epoch, 3),
            "wall_seconds": round(wall, 4),
        }
        (out / "run.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return RunResult(tuple(results), out, wall)


def run_post_hooks(scenario: Scenario, episode: Episode, line: dict[str, Any], out: Path | None) -> list[str]:
    """Call the scenario's post_run hooks as ``hook(episode, result, out_dir)``; failures are recorded, not raised."""
    errors = []
    for hook in scenario.expectations.post_run:
        try:
            hook(episode, dict(line), out)
        except Exception as exc:  # a hook must not lose the episode
            errors.append(f"{getattr(hook, '__module__', '?')}:{getattr(hook, '__name__', '?')} raised "
                          f"{type(exc).__name__}: {exc}")
    return errors


def regrade(run_dir: Path, scenarios: Sequence[Scenario], out: Path) -> list[dict[str, Any]]:
    """Grade every event log under ``run_dir/events`` again, without the agent; write result lines to ``out``."""
    from simworld.events import read_events
    from simworld.replay import rebuild

    events_dir = run_dir / "events"
    if not events_dir.is_dir():
        raise ScenarioError(f"{run_dir}: no events/ directory; pass a directory written by simworld run.")
    by_id = {s.id: s for s in scenarios}
    logs = []
    for path in events_dir.glob("*.jsonl"):
        log = read_events(path)
        logs.append(((str(log.header.get("scenario")), int(log.header.get("seed", -1)), path.name), path, log))
    results = []
    order = {s.id: i for i, s in enumerate(scenarios)}
    for _key, path, log in sorted(logs, key=lambda x: (order.get(x[0][0], len(order)), x[0][1], x[0][2])):
        episode, _ = rebuild(path, by_id, log)
        scenario = by_id[episode.scenario]
        line = result_line(episode, grade(scenario, episode, solution_end_states(scenario, episode.seed)))
        line["hook_errors"] = []
        results.append(line)
    out.write_bytes(b"".join(canonical_bytes(r) + b"\n" for r in results))
    return results


def write_event_file(path: Path, scenario: Scenario, episode: Episode) -> None:
    """Write one episode's event log with its header and footer."""
    header = {"scenario": scenario.id, "seed": episode.seed, "agent": episode.agent,
              "snapshot": scenario.snapshot.name, "initial_state_hash": episode.initial_state.hash,
              "request": episode.request, "policy": episode.policy_text, "tools": list(scenario.tools)}
    footer = {"outcome": episode.outcome, "stop_reason": episode.stop_reason, "error": episode.error,
              "counters": dict(episode.counters), "final_state_hash": episode.final_state.hash,
              "events_hash": episode.events_hash}
    events = list(episode.events)
    crash = episode.crash
    if crash is not None and crash.lost is not None:
        del events[crash.position]  # the session log lost it; the crash record carries it
    write_events(path, header, events, footer, crash.to_json() if crash else None)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simworld")
    except PackageNotFoundError:
        return "0+unknown"
