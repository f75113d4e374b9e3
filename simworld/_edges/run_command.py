"""``simworld run``'s work, apart from typer: the arguments checked, the run, and the summary it prints.

The typer app (:mod:`simworld._edges.cli`) declares the command, its options and its help; the
entry point (:mod:`simworld._edges.launch`) reads the common forms of the command itself and comes
straight here, so that a run does not pay for building the whole command line (typer, click and
pydantic: about a fifth of a one-seed run's CPU). Either way this is the one place that acts on the
options, so both print the same bytes and exit with the same status. Nothing here imports typer.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from simworld.errors import SimworldError

if TYPE_CHECKING:
    from simworld._running.runner import RunResult
    from simworld._scenario.scenario import Scenario

__all__ = ["Progress", "echo", "run_command"]


def _fail(message: str) -> int:
    """Print a bad argument's one line, ``simworld: error: ...``; the exit status that goes with it, 2."""
    echo(f"simworld: error: {message}", err=True)
    return 2


def echo(text: str, err: bool = False) -> None:
    """One line on stdout (or stderr), flushed, as ``typer.echo`` writes it."""
    stream = sys.stderr if err else sys.stdout
    stream.write(f"{text}\n")
    stream.flush()


class Progress:
    """Progress on stderr, timed by the real clock: a live bar on a terminal, else a plain line every few seconds.

    The plain line (``12/56 episodes, 11 passed, 3.2/s, ETA 14 s``) keeps a CI log of a long
    model run from being silent until the end; ``SIMWORLD_PROGRESS_EVERY`` sets its interval
    in seconds (default 10).
    """

    def __init__(self, unit: str = "episodes") -> None:
        import os

        from simworld._world.clock import wall_monotonic

        self.clock = wall_monotonic
        self.live = sys.stderr.isatty()
        try:
            self.every = float(os.environ.get("SIMWORLD_PROGRESS_EVERY", "10"))
        except ValueError:
            self.every = 10.0
        self.began = self.last = self.clock()
        self.first: int | None = None
        self.unit = unit

    def __call__(self, done: int, total: int, label: str, passed: int | None = None,
                 workers: dict[str, int] | None = None) -> None:
        now = self.clock()
        if self.first is None:
            self.first = done  # episodes a resumed run had already: not part of this rate
        ran = done - self.first
        rate = ran / (now - self.began) if now > self.began and ran else 0.0
        eta = f", ETA {_duration((total - done) / rate)}" if rate and done < total else ""
        score = f", {passed} passed" if passed is not None else ""
        if self.live:
            width = 30
            filled = width * done // max(total, 1)
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(f"\r[{bar}] {done}/{total}{score}{eta} {label[:40]:<40}")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()
        elif now - self.last >= self.every and done < total:
            self.last = now
            per = (", workers " + " ".join(f"{w}={n}" for w, n in sorted(workers.items()))) if workers else ""
            sys.stderr.write(f"progress: {done}/{total} {self.unit}{score}, {rate:.1f}/s{eta}{per}\n")
            sys.stderr.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _parse_shard(text: str | None) -> tuple[int, int] | None:
    """``--shard I/N`` as ``(I, N)`` (None when not given); a ValueError says what is wrong with it."""
    if text is None:
        return None
    try:
        i_text, n_text = text.split("/")
        i, n = int(i_text), int(n_text)
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected I/N, e.g. 2/4 for the second of four slices.") from None
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text!r}: shards are numbered 1..N, so I must lie between 1 and {max(n, 1)}.")
    return i, n


def run_command(*, seed: int | None = None, seeds: str | None = None, world: Path | None = None,
                scenario: Sequence[str] | None = None, suite: Path | None = None, agent: str = "reference",
                out: Path = Path("simworld-out"), split: str = "dev", snapshot: str | None = None, trials: int = 1,
                concurrency: int = 1, workers: int = 1, isolate: bool = False, executor: str = "local",
                ray_address: str | None = None, shard: str | None = None, resume: bool = False,
                overwrite: bool = False, fail_under: float | None = None, base_url: str | None = None,
                no_cache: bool = False, max_retries: int = 5, request_timeout: float = 60.0,
                temperature: float = 0.0, as_json: bool = False) -> int:
    """Do ``simworld run`` with these options (``simworld run --help`` says what each means); return the exit status.

    A bad argument or file prints one line, ``simworld: error: ...``, on stderr and returns 2.
    """
    from simworld._agents.kinds import build_agent_factory
    from simworld._running.runner import run_suite
    from simworld._scenario.scenario import load_suite
    from simworld._world.splits import parse_seeds

    if no_cache:
        from simworld._episode.endstates import set_disk_cache

        set_disk_cache(False)
    from simworld._world.diskcache import cache_setting_problem

    problem = cache_setting_problem()
    if problem is not None:
        return _fail(problem)
    if seed is not None and seeds is not None:
        return _fail(f"--seed {seed} and --seeds {seeds!r} both given; use --seed N for one seed or --seeds for many.")
    if world is not None:
        clash = [name for name, given in (("--seed", seed is not None), ("--seeds", seeds is not None),
                                          ("--scenario", bool(scenario)), ("--split", split != "dev")) if given]
        if clash:
            return _fail(f"--world {str(world)!r} and {' and '.join(clash)} both given; a world file names its "
                         "scenario and pins its world, so drop " + " and ".join(clash) + ".")
    if fail_under is not None and not 0.0 <= fail_under <= 1.0:
        return _fail(f"--fail-under {fail_under!r} must lie between 0 and 1 (it is compared with the mean score).")
    try:
        shard_ij = _parse_shard(shard)
    except ValueError as exc:
        return _fail(str(exc))
    pinned: dict[str, object] | None = None  # the world's parameters, with --world
    try:
        seed_list = parse_seeds(seeds) if seeds is not None else [0 if seed is None else seed]
        if seed is not None and seed < 0:
            raise SimworldError(f"--seed {seed} is negative; seeds start at 0.")
        if agent.startswith("openai:"):
            import os

            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None  # recorded in run.json when set
        factory = build_agent_factory(agent, base_url=base_url, openai_options={
            "max_retries": max_retries, "timeout_s": request_timeout, "temperature": temperature})
        if world is not None:
            scenarios, seed_list, pinned = _pinned_world(world, suite, snapshot)
        else:
            scenarios = load_suite(suite, list(scenario or ()), snapshot)
        run_settings: dict[str, object] = {"base_url": base_url} if base_url else {}
        if agent.startswith("openai:") and temperature != 0.0:
            run_settings["temperature"] = temperature  # it shapes the results, so --resume must match it
        if pinned is not None:
            run_settings["world"] = pinned  # part of what --resume must match
        result = run_suite(scenarios, seed_list, agent, factory, out, argv=sys.argv[1:], split=split,
                           trials=trials, concurrency=concurrency, progress=Progress(), shard=shard_ij, resume=resume,
                           overwrite=overwrite, keep_results=False, snapshot=snapshot,
                           settings=run_settings or None, workers=workers, executor=executor,
                           ray_address=ray_address, isolate=isolate)
    except (SimworldError, OSError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        if pinned is not None:
            _note_world(out, pinned)
        echo(f"\nsimworld: interrupted; every graded episode is in {out}/results.jsonl. Continue with the same "
             "command and --resume.", err=True)
        return 130
    if pinned is not None:
        _note_world(out, pinned)
    if as_json:  # run.json as written at the end: the summary, arguments and pass^k, for scripts
        import orjson

        from simworld._running.rundir import read_meta

        summary = {**(read_meta(out) or {}), "out": str(out), "ran": result.ran, "resumed": result.resumed}
        sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        sys.stdout.flush()
    else:
        _print_summary(result, out, agent, trials, world, seed_list, split, shard)
    if result.harness_errors:
        return 3
    if result.passed != result.episodes or (fail_under is not None and result.mean_total < fail_under):
        return 1
    return 0


def _print_summary(result: RunResult, out: Path, agent: str, trials: int, world: Path | None, seed_list: list[int],
                   split: str, shard: str | None) -> None:
    """The table (one row per episode, or per scenario for a sweep), pass^k, and the closing line."""
    from simworld._running.rundir import RESULTS, read_results
    from simworld._world.splits import format_seeds

    lines = read_results(out / RESULTS)
    if result.episodes <= _TABLE_ROWS:
        rows = [(r["scenario"], str(r["seed"]), *((str(r["trial"]),) if trials > 1 else ()), str(r["outcome"]),
                 "PASS" if r["passed"] else "ERROR" if r.get("harness_error") else "FAIL", f"{r['total']:.2f}")
                for r in lines]
        head: tuple[str, ...] = ("scenario", "seed", *(("trial",) if trials > 1 else ()), "outcome", "passed", "score")
    else:  # a sweep: one row per scenario
        per: dict[str, list[float]] = {}
        for r in lines:
            acc = per.setdefault(r["scenario"], [0, 0, 0.0])
            acc[0] += 1
            acc[1] += bool(r["passed"])
            acc[2] += r["total"]
        rows = [(sid, str(int(n)), str(int(p)), f"{p / n:.3f}", f"{t / n:.3f}") for sid, (n, p, t) in per.items()]
        head = ("scenario", "episodes", "passed", "pass rate", "mean score")
    _table(head, rows)
    if trials > 1:
        tasks = result.summary.get("tasks", [])
        if 0 < len(tasks) <= 20:
            echo("\nper task: " + ", ".join(f"{t['scenario']}@{t['seed']} {t['successes']}/{t['trials']}"
                                            for t in tasks))
        echo("")
        pass_k = result.summary["pass_hat_k"]
        shown = [k for k in range(1, trials + 1) if k <= 5 or k == trials or k in (10, 20, 50, 100, 200, 500)]
        _table(("k", "pass^k"), [(str(k), f"{pass_k[f'pass^{k}']:.3f}") for k in shown])
    where = (f"world {world} (seed {seed_list[0]})" if world is not None else
             f"split {split}, {'holdout seed #' if split == 'holdout' else 'seeds '}{format_seeds(seed_list)}") \
        + (f", shard {shard}" if shard else "") + (f", trials {trials}" if trials > 1 else "")
    resumed = f"; {result.resumed} resumed from before" if result.resumed else ""
    errors = f"; {result.harness_errors} HARNESS ERROR(S)" if result.harness_errors else ""
    echo(f"{result.passed}/{result.episodes} passed, mean score {result.mean_total:.3f}{errors}; agent {agent}; "
         f"{where}; {result.ran / max(result.wall_seconds, 1e-9):.1f} episodes/s{resumed}; written to {out}/")


def _pinned_world(path: Path, suite: Path | None, snapshot: str | None) -> tuple[list[Scenario], list[int],
                                                                                dict[str, object]]:
    """The scenario a world file names, pinned to its parameters; the seed its results report; the parameters.

    The seed is the file's ``seed`` when that seed gives exactly these parameters, else a
    stable number derived from them. Any problem is a ScenarioError naming the file.
    """
    from simworld._scenario.scenario import load_suite
    from simworld._world.perturb import read_world_file
    from simworld.errors import ScenarioError

    spec = read_world_file(path)
    try:
        (loaded,) = load_suite(suite, [spec.scenario], snapshot)
        if loaded.split == "holdout":  # a pinned world is a dev world (probe's): never one of a holdout instance
            raise ScenarioError(f"scenario {loaded.id!r} is a holdout instance (task.json \"split\": \"holdout\"); "
                                "a world file pins a dev world, so run the instance with --split holdout instead.")
        pinned = loaded.at_world(spec.world)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    assert pinned.world is not None
    return [pinned], [pinned.world_seed(spec.seed)], dict(pinned.world)


def _note_world(out: Path, world: dict[str, object]) -> None:
    """Give every result line of a ``--world`` run a ``world`` field with the parameters it ran at.

    The lines were written by the runner as they were graded; they are rewritten at once
    (atomically) at the end, and a resumed run finishes any a kill left without it.
    """
    from simworld._running.rundir import RESULTS, read_results
    from simworld._world.events import write_atomic
    from simworld._world.state import canonical_bytes

    lines = list(read_results(out / RESULTS))
    if lines and any(line.get("world") != world for line in lines):
        write_atomic(out / RESULTS, b"".join(canonical_bytes({**line, "world": world}) + b"\n" for line in lines))


#: Up to this many episodes ``run`` prints one row each; beyond, one row per scenario.
_TABLE_ROWS = 200


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
