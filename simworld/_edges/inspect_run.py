"""The Inspect task's ``out`` folder as a simworld run directory (run.json, results.jsonl, events/).

``simworld run`` writes run.json when it starts and again when it ends; under Inspect the run is
Inspect's, so an Inspect hook (:class:`SimworldRunDir`, registered when :mod:`simworld._edges.inspect`
is imported, as Inspect's entry point does) writes it at the same two moments (the end of the
run too, for a task that errs or is cancelled, which Inspect ends without a task end) for a
``simworld/suite`` eval given ``out``: at task start the arguments, versions and the grid
(``status: running``, ``agent: inspect:MODEL``, the epochs as ``trials``), at task end the tallies
and pass^k, ``status: complete`` when every (scenario, seed, epoch) has its line. The result lines
are then put in grid order, the last line of a key winning (a sample Inspect retried after an
error wrote one line per attempt), so two evals of the same model script leave the same bytes.
``simworld report OUT`` and ``simworld export OUT`` read the folder like any run's.

The hook does nothing for any other task; it never raises into Inspect (Inspect would only log it).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from inspect_ai.hooks import Hooks, RunEnd, TaskEnd, TaskStart, hooks

from simworld._edges.session import parse_seed_list, suite_grid
from simworld._running.rundir import (
    META,
    RESULTS,
    Key,
    Tally,
    check_output_dir,
    grid_keys,
    holds_run,
    numbered_lines,
    read_meta,
    write_meta,
)
from simworld._running.runner import run_header, suite_digest
from simworld._world.clock import wall_time
from simworld._world.events import write_atomic
from simworld.errors import RunDirError

__all__ = ["SUITE_ATTRIB", "SimworldRunDir", "check_out", "finish_run", "start_run"]

#: The registry name of simworld's task.
#: The task attribute that marks an eval of simworld's suite task (whatever its registry name).
SUITE_ATTRIB = "simworld_suite"
#: run.json fields that say which grid an out folder holds: a later eval may continue it only if they agree.
GRID_FIELDS = ("scenarios", "suite_digest", "seeds", "split")


def _grid_meta(task_args: dict[str, Any]) -> tuple[dict[str, Any], list[Key]]:
    """The grid fields of run.json for these task arguments, and the grid's (scenario, seed, trial 0) keys."""
    grid = suite_grid(task_args.get("scenario"), task_args.get("seeds", 0), task_args.get("split", "dev"),
                      task_args.get("suite"))
    scenarios = list({s.id: s for s, _ in grid}.values())
    meta = {"scenarios": [s.id for s in scenarios], "suite_digest": suite_digest(scenarios),
            "seeds": parse_seed_list(task_args.get("seeds", 0)), "split": task_args.get("split", "dev")}
    return meta, [(s.id, seed, 0) for s, seed in grid]


def check_out(out: str | Path, task_args: dict[str, Any]) -> None:
    """Refuse an ``out`` that holds another run; one that holds this task's grid is continued (``eval-retry``)."""
    path = Path(out)
    check_output_dir(path, "out")
    if not holds_run(path):
        return
    prior = read_meta(path)
    mine, _ = _grid_meta(task_args)
    if prior is None or prior.get("executor") != "inspect" or any(prior.get(f) != mine[f] for f in GRID_FIELDS):
        raise RunDirError(f"out {str(out)!r} already holds a run of other arguments; give another out (an out is "
                          "continued only by an Inspect eval of the same scenarios, seeds and split).")


def start_run(out: Path, task_args: dict[str, Any], model: str, epochs: int, argv: Iterable[str] = ()) -> None:
    """Write run.json as ``simworld run`` does at its start (``status: running``)."""
    grid_meta, keys = _grid_meta(task_args)
    prior = read_meta(out) if (out / META).is_file() else None
    meta: dict[str, Any] = {
        **run_header(f"inspect:{model}", argv),
        **grid_meta,
        "snapshot": None,
        "trials": epochs,
        "shard": None,
        "settings": {},
        "episodes_planned": len(keys) * epochs,
        "concurrency": 1,
        "workers": 1,
        "executor": "inspect",
        "started_at_epoch": round(wall_time(), 3),
    }
    if prior is not None:
        meta["started_at_epoch"] = prior.get("started_at_epoch", meta["started_at_epoch"])
        meta["resumes"] = int(prior.get("resumes", 0)) + 1
    (out / "events").mkdir(parents=True, exist_ok=True)
    write_meta(out, meta)


def finish_run(out: Path, inspect_status: str) -> None:
    """Put the result lines in grid order (the last line of a key wins) and write run.json's end fields."""
    meta = read_meta(out)
    if meta is None:
        return
    trials = int(meta.get("trials", 1))
    keys = list(grid_keys(meta))
    lines = _last_lines(out / RESULTS)
    tally = Tally()
    kept = []
    for key in keys:
        raw = lines.get(key)
        if raw is not None:
            kept.append(raw + b"\n")
            tally.add(orjson.loads(raw))
    if (out / RESULTS).is_file():
        write_atomic(out / RESULTS, b"".join(kept))
    complete = tally.episodes >= len(keys)
    meta.update({
        "status": "complete" if complete else "incomplete",
        "inspect_status": inspect_status,
        "episodes": tally.episodes,
        "passed": tally.passed,
        "harness_errors": tally.harness_errors,
        "mean_total": tally.mean_total,
        **tally.summary(trials),
        "wall_seconds": round(wall_time() - float(meta.get("started_at_epoch", wall_time())), 4),
    })
    write_meta(out, meta)


def _last_lines(path: Path) -> dict[Key, bytes]:
    """Each key's last whole line in ``path`` (a retried sample's last attempt), as bytes."""
    found: dict[Key, bytes] = {}
    if not path.is_file():
        return found
    for _n, raw in numbered_lines(path):
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(line, dict) and "scenario" in line and "seed" in line:
            found[(str(line["scenario"]), int(line["seed"]), int(line.get("trial", 0)))] = raw
    return found


def _out_of(spec: Any) -> Path | None:
    """The ``out`` folder of an eval of simworld's suite task, or None (another task, or no ``out``).

    The task is known by its attribute, not its registry name, which is ``simworld/suite`` only when
    simworld is installed (imported from a source tree, it is plain ``suite``)."""
    if not (spec.task_attribs or {}).get(SUITE_ATTRIB):
        return None
    task_args = spec.task_args
    out = task_args.get("out")
    return Path(out) if isinstance(out, str) and out else None


@hooks(name="simworld_run_dir", description="Writes run.json in the out folder of a simworld/suite eval.")
class SimworldRunDir(Hooks):
    """Writes run.json at the start and end of a ``simworld/suite`` eval given ``out`` (see the module)."""

    async def on_task_start(self, data: TaskStart) -> None:
        """run.json with ``status: running``, the grid, the model and the epochs."""
        spec = data.spec
        out = _out_of(spec)
        if out is not None:
            start_run(out, spec.task_args, spec.model, int(spec.config.epochs or 1))

    async def on_task_end(self, data: TaskEnd) -> None:
        """The result lines in grid order and run.json's end fields."""
        spec = data.log.eval
        out = _out_of(spec)
        if out is not None:
            finish_run(out, str(data.log.status))

    async def on_run_end(self, data: RunEnd) -> None:
        """The same for a task that ended in error or was cancelled (Inspect sends it no task end)."""
        for log in data.logs:
            out = _out_of(log.eval)
            if out is not None and log.status != "success":
                finish_run(out, str(log.status))
