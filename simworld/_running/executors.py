"""Where a run's episodes are played: this process (threads), a pool of processes, or a Ray cluster.

Every executor yields ``(job, line, event_bytes, worker)`` in grid order, as each episode
is done; the run (one process, :func:`simworld._running.runner.run_suite`) writes the event file
and then appends the line, so a run directory is the same whichever executor filled
it, resume and merge work unchanged, and an episode is counted once however often a
dead worker's task is retried.

- ``workers > 1``: a pool of forked processes on this machine, each with its own
  simulated-time guard. The suite and the agent are inherited when the pool forks, so
  nothing is pickled but the (scenario, seed, trial) keys out and the results back,
  several episodes a task. A worker that dies takes the episodes in flight with it; each
  is played again alone in a new pool, so an episode that kills its worker a second time
  is the one recorded as a ``harness_error`` and the others are kept.
- ``ray``: one Ray task per episode, the suite and the agent put in Ray's object store
  once. Ray retries a task whose worker died (``max_retries``); the result that comes
  back is the only one written.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from simworld._episode.fate import share_fate
from simworld._running.job import harness_line, play_episode
from simworld._world.clock import TimeGuard
from simworld.errors import SimworldError

__all__ = ["Done", "in_processes", "on_ray"]

#: (job, result line, event file bytes or None, worker label)
Done = tuple[Any, dict[str, Any], bytes | None, str]

# What a forked worker plays: set by the parent just before the pool forks, read by the children.
_CONTEXT: tuple[Sequence[Any], str, Any, Path | None] | None = None
_GUARD: TimeGuard | None = None
_ATTEMPTS = 2


def _worker_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _child_start() -> None:
    """In each forked worker: die with the run, leave Ctrl-C to it, and start this process's own simulated-time
    guard."""
    global _GUARD
    as_worker()
    TimeGuard._active = None  # the parent's guard, if any, is not this process's
    _GUARD = TimeGuard()
    _GUARD.__enter__()


def _child_play(indices: tuple[int, ...]) -> list[tuple[dict[str, Any], bytes | None, str]]:
    """Play some episodes of the run, in order (several a task: one task per episode costs the run's process
    about as much as a cheap episode does)."""
    assert _CONTEXT is not None, "a worker started without its run"
    todo, agent_name, agent_factory, out = _CONTEXT
    label = _worker_label()
    return [(*play_episode(todo[i], agent_name, agent_factory, out, _GUARD), label) for i in indices]


#: How often a worker looks for its parent (where the kernel cannot be asked to signal it: not Linux).
PARENT_POLL_S = 0.5


def as_worker() -> None:
    """Make this forked process one of simworld's workers: it dies with its parent, leaves Ctrl-C to it, and
    ends at SIGTERM.

    A fork inherits its parent's signal handlers. A program that built, say, a verifiers Environment has a
    SIGTERM handler that tears that environment down and raises SystemExit; in a worker it would tear down a
    copy, and a pool that stops its workers with SIGTERM (multiprocessing's Pool, holding its task queue's lock;
    concurrent.futures' once a worker died) could then wait forever on one that did not end. The default action
    ends the worker at once.
    """
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def die_with_parent() -> None:
    """End this worker process as soon as the process that started it is gone (killed with ``kill -9``, say).

    A pool's worker otherwise outlives a killed run: it blocks on its task queue, whose other end it holds
    itself, for as long as anyone waits. On Linux the kernel sends it SIGKILL when its parent dies
    (``PR_SET_PDEATHSIG``); everywhere a daemon thread also checks every PARENT_POLL_S seconds that its parent
    is still the one it was born to, and exits when not.
    """
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)

    def watch() -> None:
        pause = threading.Event()
        while os.getppid() == parent:
            pause.wait(PARENT_POLL_S)  # waits on a lock: freezegun cannot stop it
        os._exit(1)

    threading.Thread(target=watch, name="simworld-parent-watch", daemon=True).start()


#: Episodes a task on first try; the episodes of a task whose worker died are tried again one at a time.
_CHUNK = 8


def in_processes(todo: Sequence[Any], agent_name: str, agent_factory: Any, out: Path | None,
                 workers: int) -> Iterator[Done]:
    """Play ``todo`` on ``workers`` forked processes; yield each episode in grid order as it is done."""
    import multiprocessing

    global _CONTEXT
    if "fork" not in multiprocessing.get_all_start_methods():
        raise SimworldError(f"--workers {workers} needs processes started by fork, which this platform lacks; "
                            "use --concurrency or --executor ray.")
    context = multiprocessing.get_context("fork")
    _CONTEXT = (todo, agent_name, agent_factory, out)
    window = 2 * workers  # tasks in flight
    attempts = [0] * len(todo)

    def fresh(old: ProcessPoolExecutor | None = None) -> ProcessPoolExecutor:
        """A new pool, in place of ``old`` (broken: a worker died), whose queued tasks are dropped."""
        if old is not None:
            old.shutdown(wait=False, cancel_futures=True)
        return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_child_start)

    pool = fresh()
    pending: deque[tuple[tuple[int, ...], Future[list[tuple[dict[str, Any], bytes | None, str]]]]] = deque()
    following = 0  # the next index to submit

    def alone(index: int) -> Iterator[Done]:
        """Play one episode with nothing else in flight, so that a worker's death names it; after _ATTEMPTS
        deaths it is recorded as lost."""
        nonlocal pool
        while attempts[index] < _ATTEMPTS:
            attempts[index] += 1
            try:
                ((line, events, worker),) = pool.submit(_child_play, (index,)).result()
            except BrokenProcessPool:
                pool = fresh(pool)
                continue
            yield todo[index], line, events, worker
            return
        scenario, seed, trial = todo[index]
        yield todo[index], harness_line(
            scenario.id, seed, trial, agent_name, None,
            f"while running: the worker process playing it died {attempts[index]} times (an agent that ends its "
            "process, with os._exit or a crash, or the machine killing it)",
            category=scenario.category), None, "lost"

    try:
        while pending or following < len(todo):
            while following < len(todo) and len(pending) < window:
                chunk = tuple(range(following, min(following + _CHUNK, len(todo))))
                for i in chunk:
                    attempts[i] += 1
                pending.append((chunk, pool.submit(_child_play, chunk)))
                following += len(chunk)
            indices, future = pending.popleft()
            try:
                done = future.result()
            except BrokenProcessPool:
                # A worker died (killed, out of memory, an agent that exits): every episode in flight is lost with
                # the pool. Each is played again alone, in grid order, so only the one that kills its worker
                # again is lost; the others are kept.
                pool = fresh(pool)
                suspects = sorted([*indices, *(i for chunk, _ in pending for i in chunk)])
                pending.clear()
                for i in suspects:
                    yield from alone(i)
                continue
            for index, (line, events, worker) in zip(indices, done, strict=True):
                yield todo[index], line, events, worker
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        _CONTEXT = None


def on_ray(todo: Sequence[Any], agent_name: str, agent_factory: Any, out: Path | None, *,
           address: str | None = None, window: int | None = None, max_retries: int = 3) -> Iterator[Done]:
    """Play ``todo`` as Ray tasks on the cluster at ``address`` (a local Ray instance when None); yield each
    episode in grid order as it is done."""
    try:
        import ray
    except ImportError:
        raise SimworldError("--executor ray needs Ray: pip install 'simworld[ray]' (on every machine of the "
                            "cluster too).") from None
    started_here = not ray.is_initialized()
    if started_here:
        if address is None:
            share_fate()  # the local Ray's own processes outlive a killed run by most of a minute otherwise
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}})
    try:
        scenarios = {job[0].id: job[0] for job in todo}
        shared = ray.put((scenarios, agent_name, agent_factory, None if out is None else str(out)))
        remote = ray.remote(max_retries=max_retries, retry_exceptions=False)(_ray_play)
        size = window or max(4, 4 * int(ray.cluster_resources().get("CPU", 1)))
        pending: deque[tuple[int, Any]] = deque()
        following = 0
        while pending or following < len(todo):
            while following < len(todo) and len(pending) < size:
                scenario, seed, trial = todo[following]
                pending.append((following, remote.remote(shared, scenario.id, seed, trial)))
                following += 1
            index, ref = pending.popleft()
            try:
                line, events, worker = ray.get(ref)
            except Exception as exc:  # the task failed beyond its retries: the episode is recorded, not lost
                scenario, seed, trial = todo[index]
                yield todo[index], harness_line(scenario.id, seed, trial, agent_name, None,
                                                f"while running on Ray: {type(exc).__name__}: {exc}",
                                                category=scenario.category), None, "lost"
                continue
            yield todo[index], line, events, worker
    finally:
        if started_here:
            ray.shutdown()


_RAY_GUARD: list[TimeGuard] = []
_RAY_LOCK = threading.Lock()


def _ray_play(shared: Any, scenario_id: str, seed: int, trial: int) -> tuple[dict[str, Any], bytes | None, str]:
    """One episode in a Ray worker process (which keeps one simulated-time guard for its life)."""
    scenarios, agent_name, agent_factory, out = shared
    with _RAY_LOCK:
        if not _RAY_GUARD:
            TimeGuard._active = None
            guard = TimeGuard()
            guard.__enter__()
            _RAY_GUARD.append(guard)
    line, events = play_episode((scenarios[scenario_id], seed, trial), agent_name, agent_factory,
                                None if out is None else Path(out), _RAY_GUARD[0])
    return line, events, _worker_label()
