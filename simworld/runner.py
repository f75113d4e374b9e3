"""Running agents over a suite: episodes, grading, and what a run writes to disk.

A run directory holds ``results.jsonl`` (one canonical line per episode, no
wall-clock value), ``events/SCENARIO__seed-N.jsonl`` (each episode's event log)
and ``run.json`` (versions, arguments and wall time: the only place a wall-clock
value may appear).
"""

from __future__ import annotations

import contextlib
import math
import platform
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld.agents import AgentFactory, steps_factory
from simworld.clock import TimeGuard, wall_monotonic, wall_time
from simworld.deadline import DeadlineCaller, bounded, is_bounded
from simworld.episode import Environment, Episode
from simworld.errors import AgentTimeout, ScenarioError
from simworld.events import write_events
from simworld.grading import grade_episode
from simworld.scenario import Scenario
from simworld.splits import effective_seed
from simworld.state import State, canonical_bytes

__all__ = ["RunResult", "event_file_name", "grade", "graded_line", "pass_hat_k", "play", "run_one", "run_suite",
           "simworld_version", "solution_end_states"]


def play(env: Environment, agent_factory: AgentFactory) -> Episode:
    """Reset ``env``, drive one agent through it, and seal the episode; never raises for what happens inside.

    An agent that raises is recorded as ``agent_error``; one that gives no action within the
    scenario's ``timeout_s`` as ``timeout`` (agents from factories marked with
    :func:`simworld.deadline.bounded` run on a watchdog thread, so even a call that blocks
    forever ends on time); an unexpected exception in the harness or in a user's tool as
    ``harness_error``, with its traceback. Only ``env.reset()`` failing raises.
    """
    observation = env.reset()
    caller = DeadlineCaller() if is_bounded(agent_factory) else None

    def call(fn: Callable[..., Any], *args: Any, what: str) -> Any:
        if caller is None:
            return fn(*args)
        return caller.call(fn, *args, seconds=env.remaining_s, what=what)

    def build(what: str) -> Any:
        try:
            return call(agent_factory, env.scenario, env.seed, dict(env.variables), what=f"building {what}")
        except AgentTimeout as exc:
            env.time_out(f"{exc} (timeout_s {env.scenario.timeout_s:g})")
        except Exception as exc:  # a user's agent failing to build is that episode's error, not the run's
            env.fail(f"{what} could not be built: {type(exc).__name__}: {exc}")
        return None

    agent = build("the agent")
    while agent is not None and not env.done:
        try:
            action = call(agent.act, observation, what="the agent's act()")
        except AgentTimeout as exc:
            env.time_out(f"{exc} (timeout_s {env.scenario.timeout_s:g})")
            break
        except Exception as exc:
            env.fail(describe_exception(exc))
            break
        try:
            observation, _done = env.step(action)
        except Exception as exc:  # a harness bug or a user's tool: this episode's error, never the run's
            env.harness_fail(describe_exception(exc, frames=True))
            break
        if observation.resumed and not env.done:
            # The agent died mid-call: a fresh one takes over the reloaded session.
            _close(agent, None, "agent_error", call)
            agent = build("the agent after the crash")
    episode = env.episode()
    if agent is not None:
        _close(agent, episode.outcome, episode.stop_reason, call)
    if caller is not None:
        caller.close()
    return episode


def describe_exception(exc: BaseException, *, frames: bool = False) -> str:
    """``Type: message (at file.py:line)``; with ``frames``, every frame of the traceback.

    File names are reduced to their base name so that a result line holds no machine path
    and reads the same on every machine.
    """
    from simworld.subprocess_agent import AgentProcessError

    if isinstance(exc, AgentProcessError):
        return f"{type(exc).__name__}: {exc}"
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return f"{type(exc).__name__}: {exc}"
    if not frames:
        return f"{type(exc).__name__}: {exc} (at {Path(tb[-1].filename).name}:{tb[-1].lineno})"
    lines = [f"{type(exc).__name__}: {exc}", "Traceback (most recent call last):"]
    lines += [f"  {Path(f.filename).name}:{f.lineno} in {f.name}" for f in tb]
    return "\n".join(lines)


def _close(agent: Any, outcome: str | None, stop_reason: str, call: Callable[..., Any]) -> None:
    """Tell an agent that has an ``end`` method (a process, a connection) that its episode is over."""
    end = getattr(agent, "end", None)
    if callable(end):
        with contextlib.suppress(Exception):  # closing must never lose the episode
            call(end, outcome, stop_reason, what="the agent's end()")


def run_one(scenario: Scenario, seed: int, agent: Callable[[], Any]) -> tuple[Episode, dict[str, Any]]:
    """Run one episode of ``agent`` (a class or a zero-argument factory) and grade it.

    Returns the sealed episode and its result fields, as ``simworld run`` would write them.
    """
    episode = play(Environment(scenario, seed, agent_name=getattr(agent, "__name__", "agent")),
                   bounded(lambda sc, s, v: agent()))
    return episode, graded_line(scenario, episode)


def graded_line(scenario: Scenario, episode: Episode, solutions: Sequence[State] | None = None,
                trial: int = 0) -> dict[str, Any]:
    """The result line of an episode: graded against every valid end state at its seed.

    ``solutions`` may be passed when already computed for the seed (they are the same for
    every trial and every agent).
    """
    if solutions is None:
        solutions = solution_end_states(scenario, episode.seed)
    return {**result_line(episode, grade(scenario, episode, solutions)), "trial": trial}


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
    """What a run produced: one result per episode, where it was written, and pass^k over trials."""

    results: tuple[dict[str, Any], ...]
    out: Path | None
    wall_seconds: float
    summary: dict[str, Any] = attrs.field(factory=dict)


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


def event_file_name(scenario_id: str, seed: int, trial: int = 0) -> str:
    """The event log's file name in a run's ``events/`` directory."""
    return f"{scenario_id}__seed-{seed}.jsonl" if trial == 0 else f"{scenario_id}__seed-{seed}__trial-{trial}.jsonl"


def pass_hat_k(successes: Sequence[int], trials: int) -> dict[str, float]:
    """pass^k as tau-bench defines it: the mean over tasks of C(c, k) / C(n, k), for k = 1..n."""
    out = {}
    for k in range(1, trials + 1):
        out[f"pass^{k}"] = round(sum(math.comb(c, k) / math.comb(trials, k) for c in successes) / len(successes), 6)
    return out


def run_suite(scenarios: Sequence[Scenario], seeds: Sequence[int], agent_name: str, agent_factory: AgentFactory,
              out: Path | None, *, argv: Sequence[str] = (), split: str = "dev", trials: int = 1,
              concurrency: int = 1, progress: Callable[[int, int, str], None] | None = None) -> RunResult:
    """Run ``agent_factory``'s agents over every (scenario, seed), ``trials`` times each; grade; write to ``out``.

    With ``concurrency`` > 1 episodes run on that many threads (for agents that wait on the
    network); results are written in the same order and are the same, since each episode
    depends only on its agent's actions. freezegun is process-wide, so concurrent runs do
    not show simulated time to foreign code.
    """
    if trials < 1 or concurrency < 1:
        raise ScenarioError(f"--trials {trials} and --concurrency {concurrency} must both be at least 1.")
    began, began_epoch = wall_monotonic(), wall_time()
    if out is not None:
        (out / "events").mkdir(parents=True, exist_ok=True)
    plan = [(scenario, effective_seed(scenario.id, seed, split), trial)
            for scenario in scenarios for seed in seeds for trial in range(trials)]
    total = len(plan)
    solutions: dict[tuple[str, int], tuple[State, ...]] = {}
    lock = threading.Lock()
    done = [0]

    def one(job: tuple[Scenario, int, int], guard: TimeGuard | None) -> dict[str, Any]:
        scenario, seed, trial = job
        if progress:
            with lock:
                progress(done[0], total, f"{scenario.id} seed {seed}" + (f" trial {trial}" if trials > 1 else ""))
        episode = play(Environment(scenario, seed, agent_name=agent_name, guard=guard), agent_factory)
        key = (scenario.id, seed)
        if key not in solutions:
            solutions[key] = solution_end_states(scenario, seed, guard)
        line = graded_line(scenario, episode, solutions[key], trial)
        with lock:
            line["hook_errors"] = run_post_hooks(scenario, episode, line, out)
            done[0] += 1
        if out is not None:
            write_event_file(out / "events" / event_file_name(scenario.id, seed, trial), scenario, episode, trial)
        return line

    if concurrency == 1:
        with TimeGuard() as guard:
            results = [one(job, guard) for job in plan]
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            results = list(pool.map(lambda job: one(job, None), plan))
    if progress:
        progress(total, total, "done")
    wall = wall_monotonic() - began
    summary = _summary(results, trials)
    if out is not None:
        (out / "results.jsonl").write_bytes(b"".join(canonical_bytes(r) + b"\n" for r in results))
        meta = {
            "simworld": simworld_version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "argv": list(argv) or sys.argv[1:],
            "agent": agent_name,
            "seeds": list(seeds),
            "split": split,
            "trials": trials,
            "concurrency": concurrency,
            "scenarios": [s.id for s in scenarios],
            "episodes": len(results),
            "passed": sum(1 for r in results if r["passed"]),
            **summary,
            "started_at_epoch": round(began_epoch, 3),
            "wall_seconds": round(wall, 4),
        }
        (out / "run.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return RunResult(tuple(results), out, wall, summary)


def _summary(results: Sequence[dict[str, Any]], trials: int) -> dict[str, Any]:
    counts: dict[tuple[str, int], int] = {}
    for r in results:
        key = (r["scenario"], r["seed"])
        counts[key] = counts.get(key, 0) + int(r["passed"])
    tasks = [{"scenario": s, "seed": seed, "successes": c, "trials": trials} for (s, seed), c in counts.items()]
    return {"pass_hat_k": pass_hat_k(list(counts.values()), trials) if counts else {}, "tasks": tasks}


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
        logs.append(((str(log.header.get("scenario")), int(log.header.get("seed", -1)),
                      int(log.header.get("trial", 0))), path, log))
    results = []
    order = {s.id: i for i, s in enumerate(scenarios)}
    for _key, path, log in sorted(logs, key=lambda x: (order.get(x[0][0], len(order)), x[0][1], x[0][2])):
        episode, _ = rebuild(path, by_id, log)
        line = {**graded_line(by_id[episode.scenario], episode, trial=int(log.header.get("trial", 0))),
                "hook_errors": []}
        results.append(line)
    out.write_bytes(b"".join(canonical_bytes(r) + b"\n" for r in results))
    return results


def write_event_file(path: Path, scenario: Scenario, episode: Episode, trial: int = 0) -> None:
    """Write one episode's event log with its header and footer."""
    header = {"scenario": scenario.id, "seed": episode.seed, "trial": trial, "agent": episode.agent,
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


def simworld_version() -> str:
    """The installed simworld version (``0+unknown`` from a source tree without metadata)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simworld")
    except PackageNotFoundError:
        return "0+unknown"
