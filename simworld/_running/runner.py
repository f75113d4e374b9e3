"""Running agents over a suite: episodes, grading, and what a run writes to disk.

A run directory holds ``results.jsonl`` (one canonical line per episode, no
wall-clock value), ``events/SCENARIO__seed-N.jsonl`` (each episode's event log)
and ``run.json`` (versions, arguments and wall time: the only place a wall-clock
value may appear).
"""

from __future__ import annotations

import gc
import os
import platform
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from simworld._episode.deadline import bounded
from simworld._episode.endstates import hold_end_states
from simworld._episode.environment import Environment
from simworld._episode.episode import Episode
from simworld._episode.judge import graded_line
from simworld._episode.play import AgentFactory, play
from simworld._episode.replay import rebuild
from simworld._running.job import Job, run_episode, store_episode
from simworld._running.rundir import (
    EVENTS,
    RESULTS,
    Key,
    ResultsFile,
    Tally,
    check_output_dir,
    clear_run,
    holds_run,
    line_key,
    read_meta,
    read_results,
    redact,
    rewrite_in_order,
    write_meta,
)
from simworld._scenario.scenario import Scenario, check_split, hold_starts
from simworld._world.clock import TimeGuard, wall_monotonic, wall_time
from simworld._world.events import read_events, write_atomic
from simworld._world.files import as_path
from simworld._world.hashing import blake2b
from simworld._world.splits import format_seeds
from simworld._world.state import canonical_bytes
from simworld.errors import ReplayError, RunDirError, ScenarioError

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["IDENTITY", "OWN_AGENTS", "RunResult", "grid", "own_code_only", "platform_name", "regrade", "run_header",
           "run_one", "run_suite", "simworld_version", "suite_digest"]


def run_one(scenario: Scenario, seed: int, agent: Callable[[], Any]) -> tuple[Episode, dict[str, Any]]:
    """Run one episode of ``agent`` (a class or a zero-argument factory) and grade it.

    Returns the sealed episode and its result fields, as ``simworld run`` would write them.
    """
    episode = play(Environment(scenario, seed, agent_name=getattr(agent, "__name__", "agent")),
                   bounded(lambda sc, s, v: agent()))
    return episode, graded_line(scenario, episode)


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


def grid(scenarios: Sequence[Scenario], seeds: Sequence[int], split: str = "dev", trials: int = 1,
         shard: tuple[int, int] | None = None) -> list[Job]:
    """The (scenario, seed as run, trial) grid in run order; with ``shard=(i, n)`` only its i-th of n slices.

    Shards are dealt round-robin (job k goes to shard k mod n + 1), so each holds a mix of
    scenarios and they finish at about the same time.
    """
    check_split(scenarios, split)  # one line naming every holdout instance, before any seed is read
    jobs = [(scenario, scenario.run_seed(seed, split), trial)
            for scenario in scenarios for seed in seeds for trial in range(trials)]
    if shard is None:
        return jobs
    i, n = shard
    return jobs[i - 1::n]


def suite_digest(scenarios: Sequence[Scenario]) -> str:
    """A hash of every file of every scenario and of the snapshots they run on: which suite a run used.

    Each scenario's files are taken in the order of their paths' parts below its directory, as
    ``sorted(directory.rglob("*"))`` gives them: every file (a link to one too), in every directory but a linked one,
    and nothing at or under a ``__pycache__``.
    """
    h = blake2b(digest_size=16)
    for scenario in scenarios:
        h.update(f"scenario {scenario.id}\n".encode())
        if "__pycache__" not in scenario.path.parts:
            for parts, where in sorted(_files_below(os.fspath(scenario.path), ())):
                h.update(("/".join(parts) + "\n").encode())
                with open(where, "rb", buffering=0) as f:
                    h.update(blake2b(f.readall(), digest_size=16).digest())
        h.update(f"snapshot {scenario.snapshot.name} {scenario.snapshot.digest}\n".encode())
    return h.hexdigest()


def _files_below(directory: str, parts: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """``(parts below the scenario's directory, path)`` of each file under ``directory`` (see :func:`suite_digest`),
    read with ``os.scandir``: a scenario's handful of files cost a fraction of what ``Path.rglob`` makes of them."""
    found: list[tuple[tuple[str, ...], str]] = []
    try:
        with os.scandir(directory) as entries:
            listed = list(entries)
    except PermissionError:  # as rglob: a directory that cannot be listed holds nothing
        return found
    for entry in listed:
        if entry.name == "__pycache__":
            continue
        here = (*parts, entry.name)
        if _is(entry.is_file):
            found.append((here, entry.path))
        elif _is(entry.is_dir) and not entry.is_symlink():
            found.extend(_files_below(entry.path, here))
    return found


def _is(test: Callable[[], bool]) -> bool:
    """``test()``, False where the entry is gone or cannot be followed (as ``Path.is_file`` answers)."""
    try:
        return test()
    except OSError:
        return False


#: The run.json fields a resumed run (and every shard of a merge) must share with the run it continues.
IDENTITY = ("simworld", "agent", "scenarios", "suite_digest", "snapshot", "seeds", "split", "trials", "shard",
            "settings")


#: The (scenario, seed)s whose starts and solution end states a run holds while it plays episodes one after another:
#: the one in play (its trials follow each other; the next (scenario, seed) starts once this one's are graded).
_HELD_IN_TURN = 1


def run_suite(scenarios: Sequence[Scenario], seeds: Sequence[int], agent_name: str, agent_factory: AgentFactory,
              out: str | os.PathLike[str] | None, *, argv: Sequence[str] = (), split: str = "dev", trials: int = 1,
              concurrency: int = 1, progress: Callable[..., None] | None = None,
              shard: tuple[int, int] | None = None, resume: bool = False, overwrite: bool = False,
              keep_results: bool = True, snapshot: str | None = None,
              settings: dict[str, Any] | None = None, workers: int = 1, executor: str = "local",
              ray_address: str | None = None, isolate: bool = False, guard_time: bool | None = None) -> RunResult:
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

    ``guard_time`` (with one thread in this process) starts freezegun for the run, so that foreign code (the
    agent, a custom grader or hook, a user's tool) that reads ``datetime.now()`` sees simulated time. By default
    (None) it does so unless every piece of the run is simworld's own code, which reads only the world's clock:
    an agent factory :func:`~simworld.build_agent_factory` made of one of simworld's own agents, and the built-in
    graders and tools only (see :func:`own_code_only`), as ``simworld run`` does. Such a run saves freezegun's
    import and module scan (tens of milliseconds, most of a one-seed run's start) and its slower dates; the
    results are the same bytes either way. True or False forces it on or off.

    With ``workers`` > 1 episodes run on that many forked processes (CPU-bound agents: every
    core), and with ``executor="ray"`` as Ray tasks on the cluster at ``ray_address`` (a local
    Ray instance when None); either way the run directory is byte for byte the one a single
    process writes (see :mod:`simworld._running.executors`). ``isolate`` plays every episode in a
    worker process even with one worker: an in-process agent can end the whole process
    (``os._exit``, a crash in a C extension), which in a worker loses only its episode, recorded
    as a ``harness_error``.

    ``progress(done, total, label, passed)`` is called before each episode and at the end; with
    workers or Ray, after each episode, with ``workers=`` the episodes each worker (host:pid) played.
    ``settings`` are other arguments that shape the results (an endpoint's URL): recorded in
    run.json and, like the agent and the seeds, required to match on ``resume``. ``out`` is a str or an
    os.PathLike (None: nothing is written).
    """
    out = None if out is None else as_path(out, "out")
    if trials < 1 or concurrency < 1 or workers < 1:
        raise ScenarioError(f"--trials {trials}, --concurrency {concurrency} and --workers {workers} must each be at "
                            "least 1.")
    if executor not in ("local", "ray"):
        raise ScenarioError(f"--executor {executor!r}: expected local or ray.")
    if concurrency > 1 and (workers > 1 or isolate or executor == "ray"):
        raise ScenarioError(f"--concurrency {concurrency} runs threads in this process; it does not combine with "
                            "--workers, --isolate or --executor ray, which run processes: give one.")
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
        **run_header(agent_name, argv),
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
        **({"isolate": True} if isolate else {}),
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

    # What is loaded when the run starts (modules, scenarios, snapshots) outlives it: kept out of the collector's
    # sight while the run goes, a collection walks only what its episodes made. Given back when the run ends, so
    # nothing is held longer than it would have been; left alone when something else froze objects first.
    freezing = gc.isenabled() and gc.get_freeze_count() == 0
    if freezing:
        gc.freeze()
    # The starts and solution end states of the episodes in flight are held, no more: one (scenario, seed) when
    # episodes are played one after another, up to 4N with N threads. Those of an episode already graded are let go
    # while still in the processor's caches.
    held = 4 * concurrency if concurrency > 1 else _HELD_IN_TURN
    held_starts, held_end_states = hold_starts(held), hold_end_states(held)
    try:
        if executor == "ray":
            from simworld._running.executors import on_ray

            stored(on_ray(todo, agent_name, agent_factory, out, address=ray_address))
        elif workers > 1 or isolate:
            from simworld._running.executors import in_processes

            stored(in_processes(todo, agent_name, agent_factory, out, workers))
        elif concurrency == 1:
            if guard_time is None:
                from simworld._agents.kinds import is_own_factory

                guard_time = not (is_own_factory(agent_factory) and own_code_only(agent_name, scenarios))
            with TimeGuard() if guard_time else nullcontext() as guard:
                for line in (one(job, guard) for job in todo):
                    _record(line, results_file, tally, kept if keep_results else None, lock)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                for line in _in_order(pool, lambda job: one(job, None), todo, 4 * concurrency):
                    _record(line, results_file, tally, kept if keep_results else None, lock)
    except KeyboardInterrupt:
        if out is not None:  # every graded episode is on disk; say so where a reader looks
            write_meta(out, {**meta, "status": "interrupted", "episodes": tally.episodes})
        raise
    finally:
        hold_starts(held_starts)
        hold_end_states(held_end_states)
        if results_file is not None:
            results_file.close()
        if freezing:
            gc.unfreeze()
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


#: The ``--agent`` kinds that are simworld's own code, played in this process.
OWN_AGENTS = ("reference", "noop", "random", "drift:", "scripted:")


def own_code_only(agent: str, scenarios: Sequence[Scenario]) -> bool:
    """Whether a run of the agent ``--agent agent`` names over ``scenarios`` runs only simworld's own code in its
    episodes: an agent of :data:`OWN_AGENTS` (not ``python:``, ``cmd:`` or ``openai:``), every grader and hook one
    of the built-in ``graders/``, every registered tool one of simworld's. Then no ``datetime.now()`` needs
    freezegun (``run_suite(guard_time=False)``)."""
    import graders
    from simworld._world.tools import TOOLS

    if not any(agent == kind or (kind.endswith(":") and agent.startswith(kind)) for kind in OWN_AGENTS):
        return False
    home = Path(graders.__file__).parent

    homes: dict[str, bool] = {}  # per module file: a suite's graders come from a handful of modules

    def built_in(fn: Any) -> bool:
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        where = getattr(module, "__file__", None)
        if where is None:
            return False
        home_of = homes.get(where)
        if home_of is None:
            home_of = homes[where] = Path(where).parent == home
        return home_of

    if not all(built_in(g.fn) for s in scenarios for g in s.expectations.graders) or \
            any(s.expectations.post_run for s in scenarios):
        return False
    return all(getattr(t.fn, "__module__", "").startswith("simworld._world.tools.") for t in TOOLS.values())


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


def _claim(out: Path, meta: dict[str, Any], resume: bool, overwrite: bool) -> dict[str, Any] | None:
    """Make ``out`` ready for this run; return the run.json of the run being resumed, if any."""
    check_output_dir(out, "--out")
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


def regrade(run_dir: Path, scenarios: Sequence[Scenario], out: Path) -> list[dict[str, Any]]:
    """Grade every event log under ``run_dir/events`` again, without the agent; write result lines to ``out``."""
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
    write_atomic(out, b"".join(canonical_bytes(r) + b"\n" for r in results))
    return results


def _header(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        first = f.readline()
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("record") != "header":
        raise ReplayError(f"{path.name}:1: not an event file header; was it written by simworld run?")
    return header


def run_header(agent: str, argv: Iterable[str] = ()) -> dict[str, Any]:
    """The first fields of every run.json (``simworld run``'s, an Inspect eval's): status running, the versions, the
    command line (credentials redacted) and the agent."""
    return {"status": "running", "simworld": simworld_version(), "python": platform.python_version(),
            "platform": platform_name(), "argv": redact(list(argv) or sys.argv[1:]), "agent": agent}


#: What :func:`platform_name` makes a dash of, as ``platform.platform()`` does (a string fit for a file name).
_NOT_IN_FILE_NAMES = str.maketrans({" ": "_", **dict.fromkeys('/\\:;"()', "-")})


def platform_name() -> str:
    """The machine a run ran on, as run.json records it: ``platform.platform()``'s string (such as
    ``Linux-6.8.0-45-generic-x86_64-with-glibc2.39``: the OS, its release, the machine and the C library), made on
    Linux without the ``uname -p`` child process it starts at every run to learn the processor.

    On Linux ``uname -p`` says ``unknown`` or the machine again, both of which ``platform.platform()`` leaves out,
    so the string is the same; a system whose ``uname -p`` names the CPU model (Gentoo's) loses that name and
    keeps the rest. Elsewhere (macOS names its processor) it is ``platform.platform()``'s own.
    """
    if sys.platform != "linux":
        return platform.platform()
    system, _node, release, _version, machine = os.uname()
    libc, libc_version = platform.libc_ver()
    name = "-".join(part.strip() for part in (system, release, machine, "with", libc + libc_version) if part)
    name = re.sub("-{2,}", "-", name.translate(_NOT_IN_FILE_NAMES).replace("unknown", ""))
    return name.rstrip("-")


def simworld_version() -> str:
    """simworld's version, as written in ``simworld/_running/version.py`` (which the packaging reads too)."""
    from simworld._running.version import __version__

    return __version__
