"""Trajectory export: native, OpenAI chat fine-tuning and Hugging Face TRL JSON lines.

``simworld export RUN_DIR --format native|openai|trl`` reads a run's ``results.jsonl``
line by line and, for each selected episode, its event log, and writes one line per
episode: it streams, so memory does not grow with the run. The same run exports the
same bytes (canonical JSON, sorted keys).

Formats (schemas in ``simworld/schemas/``):

- ``native``: scenario, seed, agent, policy text, request, tool names, every call (args,
  result, status, simulated time), outcome and the grade;
- ``openai``: OpenAI's chat fine-tuning line with tools: ``messages`` (system = policy,
  user = request, one assistant turn per call with ``tool_calls`` whose
  ``function.arguments`` is a JSON string, one ``tool`` turn per result with
  ``tool_call_id`` and string content), a top-level ``tools`` array and
  ``parallel_tool_calls: false``. The line ends with the terminal call;
- ``trl``: TRL's conversational format: ``messages`` whose assistant tool calls carry
  ``arguments`` as objects, ``tool`` turns with ``name`` and ``content``, and a ``tools``
  column of JSON schemas.

Nothing of the grading side reaches a training line: no expected state (a native line's
``state_diff`` keeps the paths, not the expected values), no solution, no grader, and no
holdout episode at all (they are skipped and counted).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

from simworld._running.job import event_file_name
from simworld._running.rundir import EVENTS, RESULTS, ResultsFile, read_results
from simworld._world.events import Event, read_events
from simworld._world.splits import is_holdout
from simworld._world.state import canonical_bytes
from simworld._world.tools import TOOLS
from simworld.errors import SimworldError

__all__ = ["FORMATS", "ExportReport", "Trajectory", "export_run", "line", "native_hook", "openai_hook", "trl_hook"]

FORMATS = ("native", "openai", "trl")
_GRADE_KEYS = ("passed", "total", "parts", "outcome_class_correct", "step_scores", "order_violations",
               "unauthorised_actions", "forbidden_changes", "checks", "counters")


class ExportError(SimworldError, ValueError):
    """A run directory or an export option that cannot be exported."""


@attrs.frozen
class Trajectory:
    """What one episode contributes to training data, from an event file or a live episode."""

    scenario: str
    seed: int
    agent: str
    request: str
    policy: str
    tools: tuple[str, ...]
    events: tuple[Event, ...]
    outcome: str | None
    stop_reason: str
    error: str | None
    result: dict[str, Any]

    @classmethod
    def from_episode(cls, episode: Any, result: dict[str, Any]) -> Trajectory:
        """The trajectory of a live, sealed episode and its result line."""
        return cls(episode.scenario, episode.seed, episode.agent, episode.request, episode.policy_text,
                   tuple(episode.tools), tuple(episode.events), episode.outcome, episode.stop_reason, episode.error,
                   result)


@functools.lru_cache(maxsize=64)
def _tool_specs(names: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    return tuple({"type": "function", "function": TOOLS[n].schema()} for n in names if n in TOOLS)


def _calls(t: Trajectory) -> list[Event]:
    return [e for e in t.events if e.kind != "invalid"]


def _text(value: Any) -> str:
    return canonical_bytes(value).decode()


def native(t: Trajectory) -> dict[str, Any]:
    """The native line: the whole episode and its grade, without expected values."""
    grade = {k: t.result[k] for k in _GRADE_KEYS if k in t.result}
    grade["state_diff"] = [d["path"] for d in t.result.get("state_diff", [])]
    return {
        "format": "simworld.native/1", "scenario": t.scenario, "seed": t.seed, "agent": t.agent,
        "policy": t.policy, "request": t.request, "tools": list(t.tools),
        "calls": [{"seq": e.seq, "at": e.at, "tool": e.tool, "kind": e.kind, "args": e.args, "result": e.result,
                   "status": e.status, "latency": e.latency} for e in t.events],
        "outcome": t.outcome, "stop_reason": t.stop_reason, "error": t.error, "grade": grade,
        "state_hash": t.result.get("state_hash"), "events_hash": t.result.get("events_hash"),
    }


def openai(t: Trajectory) -> dict[str, Any]:
    """The OpenAI chat fine-tuning line (arguments and tool results as JSON strings)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": t.policy}, {"role": "user", "content": t.request}]
    calls = _calls(t)
    for i, e in enumerate(calls):
        call_id = f"call_{e.seq}"
        messages.append({"role": "assistant", "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": e.tool, "arguments": _text(e.args)}}]})
        if not (i == len(calls) - 1 and e.kind == "terminal"):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": _text(e.result)})
    return {"messages": messages, "tools": list(_tool_specs(t.tools)), "parallel_tool_calls": False}


def trl(t: Trajectory) -> dict[str, Any]:
    """The TRL conversational line (arguments as objects, tool turns named)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": t.policy}, {"role": "user", "content": t.request}]
    calls = _calls(t)
    for i, e in enumerate(calls):
        args = e.args if isinstance(e.args, dict) else {"value": e.args}
        messages.append({"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": e.tool, "arguments": args}}]})
        if not (i == len(calls) - 1 and e.kind == "terminal"):
            messages.append({"role": "tool", "name": e.tool, "content": _text(e.result)})
    return {"messages": messages, "tools": list(_tool_specs(t.tools))}


_BUILD = {"native": native, "openai": openai, "trl": trl}


def line(t: Trajectory, fmt: str) -> bytes:
    """One canonical JSON line of ``t`` in format ``fmt``."""
    return canonical_bytes(_BUILD[fmt](t)) + b"\n"


def _from_file(path: Path, result: dict[str, Any]) -> Trajectory:
    log = read_events(path)
    events = list(log.events)
    crash = log.crash
    if crash is not None and crash.get("lost") is not None:
        events.insert(int(crash["position"]), crash["lost"])  # the call happened; only the session log lost it
    h, f = log.header, log.footer
    if "request" not in h:
        raise ExportError(f"{path.name}: no request in the header; re-run with this version of simworld to export.")
    return Trajectory(h["scenario"], int(h["seed"]), str(h.get("agent", "?")), h["request"], h["policy"],
                      tuple(h.get("tools", ())), tuple(events), f.get("outcome"), f.get("stop_reason", ""),
                      f.get("error"), result)


@attrs.frozen
class ExportReport:
    """How many episodes a run had, and how many were written or left out, and why."""

    written: int
    filtered: int
    holdout_skipped: int
    harness_errors: int = 0
    bad_lines: int = 0


def _select(results: Iterable[dict[str, Any]], passed_only: bool, min_score: float | None,
            scenarios: Sequence[str]) -> Iterator[tuple[bool, dict[str, Any]]]:
    for r in results:
        keep = ((not passed_only or r["passed"]) and (min_score is None or r["total"] >= min_score)
                and (not scenarios or r["scenario"] in scenarios))
        yield keep, r


def export_run(run_dir: Path, fmt: str, out: IO[bytes], *, passed_only: bool = False, min_score: float | None = None,
               scenarios: Sequence[str] = (), skip_bad_lines: bool = False) -> ExportReport:
    """Stream the run's selected episodes to ``out`` in ``fmt``."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is unknown; use one of {', '.join(FORMATS)}.")
    if min_score is not None and not 0.0 <= min_score <= 1.0:
        raise ExportError(f"--min-score {min_score!r} must lie between 0 and 1 (it is compared with 'total').")
    results_path = run_dir / RESULTS
    if not results_path.is_file():
        raise ExportError(f"{run_dir}: no results.jsonl; pass a directory written by simworld run.")
    written = filtered = holdout = broken = 0
    bad: list[int] = []
    for keep, r in _select(read_results(results_path, skip_bad=bad if skip_bad_lines else None), passed_only,
                           min_score, scenarios):
        if is_holdout(int(r["seed"])):
            holdout += 1
            continue
        if r.get("harness_error") is not None:
            broken += 1  # the harness failed this episode: not a trajectory to learn from
            continue
        if not keep:
            filtered += 1
            continue
        events = run_dir / EVENTS / event_file_name(r["scenario"], int(r["seed"]), int(r.get("trial", 0)))
        out.write(line(_from_file(events, r), fmt))
        written += 1
    return ExportReport(written, filtered, holdout, broken, len(bad))


# -- post_run hooks: write the export while a run goes ---------------------------------------------------------

def _hook(fmt: str, episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    # A new run starts from an empty directory (simworld run refuses or clears an old one), so the hook
    # appends: a resumed run adds to what it wrote before. The episode being written when a run was
    # killed may appear twice in a resumed run's hook file; `simworld export`, which reads results.jsonl,
    # never repeats one.
    if out_dir is None or is_holdout(episode.seed):
        return
    with ResultsFile(Path(out_dir) / f"export.{fmt}.jsonl") as f:  # one whole line per write; cuts a partial tail
        f.append(line(Trajectory.from_episode(episode, result), fmt))


def native_hook(episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    """post_run hook: append the episode to ``OUT/export.native.jsonl``."""
    _hook("native", episode, result, out_dir)


def openai_hook(episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    """post_run hook: append the episode to ``OUT/export.openai.jsonl``."""
    _hook("openai", episode, result, out_dir)


def trl_hook(episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    """post_run hook: append the episode to ``OUT/export.trl.jsonl``."""
    _hook("trl", episode, result, out_dir)
