"""One episode of a run: played, graded, its post_run hooks called, its event file made and stored.

What a worker process (or a Ray task) runs is :func:`play_episode`; the run stores what
it returns with :func:`store_episode`. Whatever raises on the way is the episode's
``harness_error``, never the run's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from simworld._episode.contract import CONTRACT_VERSION
from simworld._episode.environment import Environment
from simworld._episode.episode import Episode
from simworld._episode.judge import graded_line, result_line
from simworld._episode.play import AgentFactory, play
from simworld._running.rundir import EVENTS
from simworld._scenario.scenario import Scenario
from simworld._world.clock import TimeGuard
from simworld._world.events import event_file_bytes, write_atomic
from simworld._world.vocab import COUNTERS
from simworld.errors import describe_exception

__all__ = ["Job", "event_file_content", "event_file_name", "finish_episode", "harness_line", "play_episode",
           "run_episode", "run_post_hooks", "store_episode"]


def event_file_name(scenario_id: str, seed: int, trial: int = 0) -> str:
    """The event log's file name in a run's ``events/`` directory."""
    return f"{scenario_id}__seed-{seed}.jsonl" if trial == 0 else f"{scenario_id}__seed-{seed}__trial-{trial}.jsonl"


Job = tuple[Scenario, int, int]


def run_episode(job: Job, agent_name: str, agent_factory: AgentFactory, out: Path | None,
                guard: TimeGuard | None) -> dict[str, Any]:
    """Play, grade and write one episode; whatever raises on the way is its ``harness_error``, never the run's."""
    line, events = play_episode(job, agent_name, agent_factory, out, guard)
    store_episode(out, job[0].id, job[1], job[2], line, events)
    return line


def play_episode(job: Job, agent_name: str, agent_factory: AgentFactory, out: Path | None,
                 guard: TimeGuard | None) -> tuple[dict[str, Any], bytes | None]:
    """Play and grade one episode and run its post_run hooks: its result line and its event file's bytes (None when
    ``out`` is None: nothing is written).

    Whatever raises on the way is the line's ``harness_error``. This is what a worker
    process (or a Ray task) runs; :func:`store_episode` puts the two on disk in the run.
    """
    scenario, seed, trial = job
    episode: Episode | None = None
    stage = "running"
    try:
        episode = play(Environment(scenario, seed, agent_name=agent_name, guard=guard), agent_factory)
        stage = "grading"
        line = graded_line(scenario, episode, trial=trial, guard=guard)
    except Exception as exc:  # a harness bug, or ground truth that does not play at this seed
        line = harness_line(scenario.id, seed, trial, agent_name, episode,
                            f"while {stage}: " + describe_exception(exc, frames=True), category=scenario.category)
    if episode is None:
        return line, None
    return line, _hooks_and_events(scenario, episode, line, out, trial)


def _hooks_and_events(scenario: Scenario, episode: Episode, line: dict[str, Any], out: Path | None,
                      trial: int) -> bytes | None:
    """Run the post_run hooks on a graded line; the episode's event file as bytes (None when nothing is written,
    ``out`` None, or when it cannot be made: the line's ``harness_error`` says why)."""
    line["hook_errors"] = run_post_hooks(scenario, episode, line, out)
    if out is None:
        return None
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
        # Joined as strings: two pathlib joins an episode cost more than the rest of this function but the write.
        write_atomic(os.path.join(out, EVENTS, event_file_name(scenario_id, seed, trial)), events)
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
            "events_hash": None, "contract": CONTRACT_VERSION, "trial": trial, "hook_errors": []}


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


def event_file_content(scenario: Scenario, episode: Episode, trial: int = 0, harness_error: str | None = None) -> bytes:
    """One episode's event log with its header and footer, as bytes (each event made into its line once per episode,
    for the file, the footer's events hash and the result line's alike)."""
    header = {"scenario": scenario.id, "seed": episode.seed, "trial": trial, "agent": episode.agent,
              "snapshot": scenario.snapshot.name, "initial_state_hash": episode.initial_state.hash,
              "request": episode.request, "policy": episode.policy_text, "tools": list(scenario.tools),
              "contract": CONTRACT_VERSION}
    lines = list(episode.event_lines())
    footer = {"outcome": episode.outcome, "stop_reason": episode.stop_reason, "error": episode.error,
              "counters": dict(episode.counters), "final_state_hash": episode.final_state.hash,
              "events_hash": episode.events_hash}
    if harness_error is not None:
        footer["harness_error"] = harness_error
    events = list(episode.events)
    crash = episode.crash
    if crash is not None and crash.lost is not None:
        del events[crash.position]  # the session log lost it; the crash record carries it
        del lines[crash.position]
    return event_file_bytes(header, events, footer, crash.to_json() if crash else None, lines=lines)
