"""Running agents over a suite: episodes, grading, and what a run writes to disk.

A run directory holds ``results.jsonl`` (one canonical line per episode, no
wall-clock value), ``events/SCENARIO__seed-N.jsonl`` (each episode's event log)
and ``run.json`` (versions, arguments and wall time: the only place a wall-clock
value may appear).
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld.agents import AgentFactory, steps_factory
from simworld.clock import TimeGuard, wall_monotonic, wall_time
from simworld.deadline import DeadlineCaller, bounded, is_bounded
from simworld.endstates import end_states
from simworld.episode import Environment, Episode
from simworld.errors import AgentTimeout, RunDirError, ScenarioError, describe_exception
from simworld.events import event_file_bytes, write_atomic
from simworld.grading import grade_episode
from simworld.rundir import (
    EVENTS,
    RESULTS,
    Key,
    ResultsFile,
    Tally,
    clear_run,
    holds_run,
    line_key,
    pass_hat_k,
    read_meta,
    read_results,
    redact,
    replace_bytes,
    rewrite_in_order,
    write_meta,
)
from simworld.scenario import Scenario
from simworld.splits import effective_seed, format_seeds
from simworld.state import State, canonical_bytes
from simworld.vocab import COUNTERS

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
    return {**result_line(episode, grade(scenario, episode, solutions)), "category": scenario.category, "trial": trial}


def solution_end_states(scenario: Scenario, seed: int, guard: TimeGuard | None = None) -> tuple[State, ...]:
    """The end state of every solution of ``scenario`` at ``seed`` (played once, then kept: see
    :mod:`simworld.endstates`).

    A solution that does not play to a terminal tool, every call ok, is a
    BrokenSolutionError (a ScenarioError) naming each such solution file: the ground
    truth is wrong, and no agent should be graded against it.
    """
    return end_states(scenario, seed, lambda: _play_solutions(scenario, seed, guard))


def _play_solutions(scenario: Scenario, seed: int, guard: TimeGuard | None) -> tuple[State, ...]:
    from simworld.errors import BrokenSolutionError

    states = []
    problems = []
    for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True):
        env = Environment(scenario, seed, agent_name=f"solution:{name}", guard=guard)
        episode = play(env, steps_factory(steps, name))
        bad = [e for e in episode.events if e.status != "ok"]
        if episode.error or episode.outcome is None or bad:
            why = episode.error or (f"call seq {bad[0].seq} {bad[0].tool} returned {bad[0].status}: "
                                    f"{bad[0].result}" if bad else f"it stopped with {episode.stop_reason!r}")
            problems.append((name, why))
        states.append(episode.final_state)
    if problems:
        raise BrokenSolutionError(scenario.path, seed, tuple(problems))
    return tuple(states)


def grade(scenario: Scenario, episode: Episode, solutions: Sequence[State]) -> dict[str, Any]:
    """Grade an episode with the scenario's graders; a grader that raises is a failed check, never a pass."""
    ex = scenario.expectations
    return grade_episode(ex.graders, episode, solutions, ex.weights)


@attrs.frozen
class RunResult:
    """What a run produced: where it was written, its counts, pass^k over trials, and (if kept) every result.

    ``results`` holds every result line in grid order unless the run was asked not to keep
    them (``keep_results=False``: a long run keeps memory flat and the lines live in
    ``out/results.jsonl``).
    """

    results: tuple[dict[str, Any], ...]
    out: Path | None
    wall_seconds: float
    summary: dict[str, Any] = attrs.field(factory=dict)
    episodes: int = 0
    passed: int = 0
    harness_errors: int = 0
    mean_total: float = 0.0
    ran: int = 0
    resumed: int = 0


def result_line(episode: Episode, grading: dict[str, Any]) -> dict[str, Any]:
    """An episode's result fields and its grade. ``harness_error`` is set when the harness, a user's tool or a
    grader failed (the episode's own error when it ended as ``harness_error``, else the grader's)."""
    line = {
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
    if episode.stop_reason == "harness_error":
        line["harness_error"] = episode.error
    line.setdefault("harness_error", None)
    return line


def event_file_name(scenario_id: str, seed: int, trial: int = 0) -> str:
    """The event log's file name in a run's ``events/`` directory."""
    return f"{scenario_id}__seed-{seed}.jsonl" if trial == 0 else f"{scenario_id}__seed-{seed}__trial-{trial}.jsonl"


Job = tuple[Scenario, int, int]


def grid(scenarios: Sequence[Scenario], seeds: Sequence[int], split: str = "dev", trials: int = 1,
         shard: tuple[int, int] | None = None) -> list[Job]:
    """The (scenario, seed as run, trial) grid in run order; with ``shard=(i, n)`` only its i-th of n slices.

    Shards are dealt round-robin (job k goes to shard k mod n + 1), so each holds a mix of
    scenarios and they finish at about the same time.
    """
    jobs = [(scenario, effective_seed(scenario.id, seed, split), trial)
            for scenario in scenarios for seed in seeds for trial in range(trials)]
    if shard is None:
        return jobs
    i, n = shard
    return jobs[i - 1::n]


def suite_digest(scenarios: Sequence[Scenario]) -> str:
    """A hash of every file of every scenario and of the snapshots they run on: which suite a run used."""
    h = hashlib.blake2b(digest_size=16)
    for scenario in scenarios:
        h.update(f"scenario {scenario.id}\n".encode())
        for path in sorted(p for p in scenario.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(f"{path.relative_to(scenario.path).as_posix()}\n".encode())
            h.update(hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
        h.update(f"snapshot {scenario.snapshot.name} {scenario.snapshot.digest}\n".encode())
    return h.hexdigest()


#: The run.json fields a resumed run (and every shard of a merge) must share with the run it continues.
IDENTITY = ("simworld", "agent", "scenarios", "suite_digest", "snapshot", "seeds", "split", "trials", "shard",
            "settings")


def run_suite(scenarios: Sequence[Scenario], seeds: Sequence[int], agent_name: str, agent_factory: AgentFactory,
              out: Path | None, *, argv: Sequence[str] = (), split: str = "dev", trials: int = 1,
              concurrency: int = 1, progress: Callable[..., None] | None = None,
              shard: tuple[int, int] | None = None, resume: bool = False, overwrite: bool = False,
              keep_results: bool = True, snapshot: str | None = None,
              settings: dict[str, Any] | None = None, workers: int = 1, executor: str = "local",
              ray_address: str | None = None) -> RunResult:
    """Run ``agent_factory``'s agents over the (scenario, seed, trial) grid; grade; write to ``out`` as it goes.

    Each episode's event file and then its result line are on disk as soon as it is graded,
    so a run killed at any instant keeps every episode it finished. ``resume`` continues
    the run already in ``out`` (refused when its suite, agent or arguments differ) and
    runs only the episodes it lacks; without ``resume`` or ``overwrite`` a directory that
    already holds a run is refused. Anything that goes wrong inside one episode (the
    agent, a tool, a grader, writing its files) is recorded in that episode's line and
    the run goes on.

    With ``concurrency`` > 1 episodes run on that many threads (for agents that wait on the
    network); lines are still written in grid order and are the same, since each episode
    depends only on its agent's actions. freezegun is process-wide, so concurrent runs do
    not show simulated time to foreign code.

    With ``workers`` > 1 episodes run on that many forked processes (CPU-bound agents: every
    core), and with ``executor="ray"`` as Ray tasks on the cluster at ``ray_address`` (a local
    Ray instance when None); either way the run directory is byte for byte the one a single
    process writes (see :mod:`simworld.executors`).

    ``progress(done, total, label, passed)`` is called before each episode and at the end; with
    workers or Ray, after each episode, with ``workers=`` the episodes each worker (host:pid) played.
    ``settings`` are other arguments that shape the results (an endpoint's URL): recorded in
    run.json and, like the agent and the seeds, required to match on ``resume``.
    """
    if trials < 1 or concurrency < 1 or workers < 1:
        raise ScenarioError(f"--trials {trials}, --concurrency {concurrency} and --workers {workers} must each be at "
                            "least 1.")
    if executor not in ("local", "ray"):
        raise ScenarioError(f"--executor {executor!r}: expected local or ray.")
    if concurrency > 1 and (workers > 1 or executor == "ray"):
        raise ScenarioError(f"--concurrency {concurrency} runs threads in this process; it does not combine with "
                            "--workers or --executor ray, which run processes: give one.")
    if ray_address is not None and executor != "ray":
        raise ScenarioError("--ray-address needs --executor ray.")
    if not scenarios:
        raise ScenarioError("No scenarios to run: the suite is empty; pass --suite DIR with one folder per scenario.")
    if resume and overwrite:
        raise RunDirError("--resume and --overwrite contradict each other; give one.")
    if shard is not None and not (isinstance(shard, tuple) and len(shard) == 2 and 1 <= shard[0] <= shard[1]):
        raise ScenarioError(f"--shard {shard!r}: expected I/N with 1 <= I <= N, e.g. 1/4.")
    began, began_epoch = wall_monotonic(), wall_time()
    jobs = grid(scenarios, seeds, split, trials, shard)
    meta: dict[str, Any] = {
        "status": "running",
        "simworld": simworld_version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "argv": redact(list(argv) or sys.argv[1:]),
        "agent": agent_name,
        "scenarios": [s.id for s in scenarios],
        "suite_digest": suite_digest(scenarios),
        "snapshot": snapshot,
        "seeds": list(seeds),
        "split": split,
        "trials": trials,
        "shard": f"{shard[0]}/{shard[1]}" if shard else None,
        "settings": redact(dict(settings or {})),
        "episodes_planned": len(jobs),
        "concurrency": concurrency,
        "workers": workers,
        "executor": executor,
        "started_at_epoch": round(began_epoch, 3),
    }
    tally = Tally()
    kept: list[dict[str, Any]] = []
    done_keys: set[Key] = set()
    results_file: ResultsFile | None = None
    if out is not None:
        prior = _claim(out, meta, resume, overwrite)
        if prior is not None:
            meta["started_at_epoch"] = prior.get("started_at_epoch", meta["started_at_epoch"])
            meta["resumes"] = int(prior.get("resumes", 0)) + 1
        (out / EVENTS).mkdir(parents=True, exist_ok=True)
        results_file = ResultsFile(out / RESULTS)  # cuts off a line a kill left half written
        for line in read_results(out / RESULTS):
            key = line_key(line)
            if key not in done_keys:
                done_keys.add(key)
                tally.add(line)
        write_meta(out, meta)
    todo = [job for job in jobs if (job[0].id, job[1], job[2]) not in done_keys] if done_keys else jobs
    resumed = tally.episodes
    total = len(jobs)
    lock = threading.Lock()

    def one(job: Job, guard: TimeGuard | None) -> dict[str, Any]:
        if progress:
            with lock:
                progress(tally.episodes, total, _label(job, trials), tally.passed)
        return run_episode(job, agent_name, agent_factory, out, guard)

    seen: dict[str, int] = {}  # episodes per worker process (host:pid), with --workers or Ray

    def stored(done: Iterator[tuple[Job, dict[str, Any], bytes | None, str]]) -> None:
        for job, line, events, worker in done:
            store_episode(out, job[0].id, job[1], job[2], line, events)
            _record(line, results_file, tally, kept if keep_results else None, lock)
            seen[worker] = seen.get(worker, 0) + 1
            if progress:
                progress(tally.episodes, total, f"{_label(job, trials)} [{worker}; {len(seen)} workers]", tally.passed,
                         workers=seen)

    try:
        if executor == "ray":
            from simworld.executors import on_ray

            stored(on_ray(todo, agent_name, agent_factory, out, address=ray_address))
        elif workers > 1:
            from simworld.executors import in_processes

            stored(in_processes(todo, agent_name, agent_factory, out, workers))
        elif concurrency == 1:
            with TimeGuard() as guard:
                for line in (one(job, guard) for job in todo):
                    _record(line, results_file, tally, kept if keep_results else None, lock)
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                for line in _in_order(pool, lambda job: one(job, None), todo, 4 * concurrency):
                    _record(line, results_file, tally, kept if keep_results else None, lock)
    except KeyboardInterrupt:
        if out is not None:  # every graded episode is on disk; say so where a reader looks
            write_meta(out, {**meta, "status": "interrupted", "episodes": tally.episodes})
        raise
    finally:
        if results_file is not None:
            results_file.close()
    if progress:
        progress(tally.episodes, total, "done", tally.passed)
    wall = wall_monotonic() - began
    summary = tally.summary(trials)
    if out is not None:
        if resumed:
            # Lines from before the interruption came first: put the whole file in grid order.
            rewrite_in_order(out / RESULTS, ((s.id, seed, trial) for s, seed, trial in jobs))
            if keep_results:
                kept = list(read_results(out / RESULTS))
        complete = tally.episodes >= total
        meta.update({
            "status": "complete" if complete else "incomplete",
            "episodes": tally.episodes,
            "passed": tally.passed,
            "harness_errors": tally.harness_errors,
            "mean_total": tally.mean_total,
            **summary,
            **({"workers_seen": dict(sorted(seen.items()))} if seen else {}),
            "wall_seconds": round(wall, 4),
        })
        write_meta(out, meta)
    return RunResult(tuple(kept), out, wall, summary, tally.episodes, tally.passed, tally.harness_errors,
                     tally.mean_total, tally.episodes - resumed, resumed)


def _label(job: Job, trials: int) -> str:
    scenario, seed, trial = job
    return f"{scenario.id} seed {seed}" + (f" trial {trial}" if trials > 1 else "")


def _record(line: dict[str, Any], results_file: ResultsFile | None, tally: Tally,
            kept: list[dict[str, Any]] | None, lock: threading.Lock) -> None:
    if results_file is not None:
        results_file.append(canonical_bytes(line) + b"\n")
    with lock:
        tally.add(line)
    if kept is not None:
        kept.append(line)


def _in_order(pool: ThreadPoolExecutor, fn: Callable[[Job], dict[str, Any]], jobs: Sequence[Job],
              window: int) -> Iterator[dict[str, Any]]:
    """``fn`` over ``jobs`` on ``pool``, yielded in job order, with at most ``window`` in flight."""
    pending: deque[Future[dict[str, Any]]] = deque()
    for job in jobs:
        pending.append(pool.submit(fn, job))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def run_episode(job: Job, agent_name: str, agent_factory: AgentFactory, out: Path | None,
                guard: TimeGuard | None) -> dict[str, Any]:
    """Play, grade and write one episode; whatever raises on the way is its ``harness_error``, never the run's."""
    line, events = play_episode(job, agent_name, agent_factory, out, guard)
    store_episode(out, job[0].id, job[1], job[2], line, events)
    return line


def play_episode(job: Job, agent_name: str, agent_factory: AgentFactory, out: Path | None,
                 guard: TimeGuard | None) -> tuple[dict[str, Any], bytes | None]:
    """Play and grade one episode and run its post_run hooks: its result line and its event file's bytes.

    Whatever raises on the way is the line's ``harness_error``. This is what a worker
    process (or a Ray task) runs; :func:`store_episode` puts the two on disk in the run.
    """
    scenario, seed, trial = job
    episode: Episode | None = None
    stage = "running"
    try:
        episode = play(Environment(scenario, seed, agent_name=agent_name, guard=guard), agent_factory)
        stage = "grading"
        line = graded_line(scenario, episode, solution_end_states(scenario, seed, guard), trial)
    except Exception as exc:  # a harness bug, or ground truth that does not play at this seed
        line = harness_line(scenario.id, seed, trial, agent_name, episode,
                            f"while {stage}: " + describe_exception(exc, frames=True), category=scenario.category)
    if episode is None:
        return line, None
    return line, _hooks_and_events(scenario, episode, line, out, trial)


def _hooks_and_events(scenario: Scenario, episode: Episode, line: dict[str, Any], out: Path | None,
                      trial: int) -> bytes | None:
    """Run the post_run hooks on a graded line; the episode's event file as bytes (None when it cannot be made:
    the line's ``harness_error`` says why)."""
    line["hook_errors"] = run_post_hooks(scenario, episode, line, out)
    try:
        return event_file_content(scenario, episode, trial, line["harness_error"])
    except Exception as exc:
        _write_failed(line, exc)
        return None


def store_episode(out: Path | None, scenario_id: str, seed: int, trial: int, line: dict[str, Any],
                  events: bytes | None) -> None:
    """Write an episode's event file (atomically) before its line is appended; a failure is the line's
    ``harness_error``."""
    if out is None or events is None:
        return
    try:
        write_atomic(out / EVENTS / event_file_name(scenario_id, seed, trial), events)
    except Exception as exc:
        _write_failed(line, exc)


def _write_failed(line: dict[str, Any], exc: Exception) -> None:
    if line["harness_error"] is None:
        line["harness_error"] = "while writing the event file: " + describe_exception(exc, frames=True)
        line["passed"] = False


def finish_episode(scenario: Scenario, episode: Episode, line: dict[str, Any], out: Path | None, trial: int) -> None:
    """Run the post_run hooks on a graded line and write the episode's event file; a failure to write is the
    line's ``harness_error`` (the line itself is appended by the caller)."""
    store_episode(out, scenario.id, episode.seed, trial, line, _hooks_and_events(scenario, episode, line, out, trial))


def harness_line(scenario_id: str, seed: int, trial: int, agent: str, episode: Episode | None,
                 error: str, *, category: str | None = None) -> dict[str, Any]:
    """The result line of an episode the harness could not finish: every field present, failed, scored 0.

    ``category`` is the scenario's category (None when even the scenario is unknown).
    """
    grading: dict[str, Any] = {
        "passed": False, "total": 0.0, "parts": {}, "outcome_class_correct": False, "state_diff": [],
        "step_scores": {}, "order_violations": [], "unauthorised_actions": [], "forbidden_changes": [],
        "checks": [{"name": "harness", "passed": False, "detail": error.splitlines()[0]}], "harness_error": error,
    }
    if episode is not None:
        return {**result_line(episode, grading), "category": category, "trial": trial, "hook_errors": []}
    return {"scenario": scenario_id, "category": category, "seed": seed, "agent": agent, "outcome": None,
            "stop_reason": "harness_error",
            "error": error.splitlines()[0], **grading, "counters": dict.fromkeys(COUNTERS, 0), "state_hash": None,
            "events_hash": None, "trial": trial, "hook_errors": []}


def _claim(out: Path, meta: dict[str, Any], resume: bool, overwrite: bool) -> dict[str, Any] | None:
    """Make ``out`` ready for this run; return the run.json of the run being resumed, if any."""
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {str(out)!r} is a file; give a directory.")
    if not holds_run(out):
        return None
    if overwrite:
        clear_run(out)
        return None
    if not resume:
        raise RunDirError(f"--out {str(out)!r} already holds a run; add --resume to continue it, --overwrite to "
                          "replace it, or give another --out.")
    prior = read_meta(out)
    if prior is None:
        raise RunDirError(f"--resume: {str(out)!r} has results but no run.json, so what it ran is unknown; "
                          "use --overwrite or another --out.")
    differ = [name for name in IDENTITY if prior.get(name) != meta.get(name)]
    if differ:
        name = differ[0]
        raise RunDirError(f"--resume: the run in {str(out)!r} was made with {name} {_shown(prior.get(name))}, "
                          f"this command has {_shown(meta.get(name))}" + (f" (and {len(differ) - 1} more difference(s):"
                          f" {', '.join(differ[1:])})" if len(differ) > 1 else "")
                          + "; resume with the same arguments, or use --overwrite or another --out.")
    return prior


def _shown(value: Any) -> str:
    if isinstance(value, list) and len(value) > 6:
        if all(isinstance(v, int) for v in value):
            return repr(format_seeds(value))
        return repr(value[:6])[:-1] + f", ... ({len(value)} in all)]"
    return repr(value)


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

    events_dir = run_dir / EVENTS
    if not events_dir.is_dir():
        raise ScenarioError(f"{run_dir}: no events/ directory; pass a directory written by simworld run.")
    by_id = {s.id: s for s in scenarios}
    order = {s.id: i for i, s in enumerate(scenarios)}
    logs = []
    for path in events_dir.glob("*.jsonl"):  # headers only: the logs are read one at a time below
        header = _header(path)
        logs.append(((order.get(str(header.get("scenario")), len(order)), int(header.get("seed", -1)),
                      int(header.get("trial", 0))), path))
    results = []
    for _key, path in sorted(logs):
        log = read_events(path)
        episode, _ = rebuild(path, by_id, log)
        line = {**graded_line(by_id[episode.scenario], episode, trial=int(log.header.get("trial", 0))),
                "hook_errors": []}
        results.append(line)
    replace_bytes(out, b"".join(canonical_bytes(r) + b"\n" for r in results))
    return results


def _header(path: Path) -> dict[str, Any]:
    from simworld.errors import ReplayError

    with path.open("rb") as f:
        first = f.readline()
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("record") != "header":
        raise ReplayError(f"{path.name}:1: not an event file header; was it written by simworld run?")
    return header


def event_file_content(scenario: Scenario, episode: Episode, trial: int = 0, harness_error: str | None = None) -> bytes:
    """One episode's event log with its header and footer, as bytes."""
    header = {"scenario": scenario.id, "seed": episode.seed, "trial": trial, "agent": episode.agent,
              "snapshot": scenario.snapshot.name, "initial_state_hash": episode.initial_state.hash,
              "request": episode.request, "policy": episode.policy_text, "tools": list(scenario.tools)}
    footer = {"outcome": episode.outcome, "stop_reason": episode.stop_reason, "error": episode.error,
              "counters": dict(episode.counters), "final_state_hash": episode.final_state.hash,
              "events_hash": episode.events_hash}
    if harness_error is not None:
        footer["harness_error"] = harness_error
    events = list(episode.events)
    crash = episode.crash
    if crash is not None and crash.lost is not None:
        del events[crash.position]  # the session log lost it; the crash record carries it
    return event_file_bytes(header, events, footer, crash.to_json() if crash else None)


def simworld_version() -> str:
    """The installed simworld version (``0+unknown`` from a source tree without metadata)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simworld")
    except PackageNotFoundError:
        return "0+unknown"
