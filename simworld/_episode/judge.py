"""Grading one episode: the end states of the scenario's solutions at its seed, its graders, its result line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from simworld._episode.contract import CONTRACT_VERSION
from simworld._episode.endstates import end_states
from simworld._episode.episode import Episode, Stepper
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._grading.contract import grade_episode
from simworld._scenario.scenario import Scenario, Step
from simworld._world.actions import plain_value
from simworld._world.clock import TimeGuard
from simworld._world.state import State
from simworld._world.templates import resolve_args
from simworld.errors import BrokenSolutionError, ScenarioError

__all__ = ["grade", "graded_line", "result_line", "solution_end_states"]


def graded_line(scenario: Scenario, episode: Episode, solutions: Sequence[State] | None = None,
                trial: int = 0) -> dict[str, Any]:
    """The result line of an episode: graded against every valid end state at its seed.

    ``solutions`` may be passed when already computed for the seed (they are the same for
    every trial and every agent).
    """
    if solutions is None:
        solutions = solution_end_states(scenario, episode.seed, episode=episode)
    return {**result_line(episode, grade(scenario, episode, solutions)), "category": scenario.category, "trial": trial}


def solution_end_states(scenario: Scenario, seed: int, guard: TimeGuard | None = None, *,
                        episode: Episode | None = None) -> tuple[State, ...]:
    """The end state of every solution of ``scenario`` at ``seed`` (played once, then kept: see
    :mod:`simworld._episode.endstates`).

    A solution that does not play to a terminal tool, every call ok, is a
    BrokenSolutionError (a ScenarioError) naming each such solution file: the ground
    truth is wrong, and no agent should be graded against it.

    ``episode``, an episode played from this seed's start, spares playing a solution whose
    calls it made, exactly and in order (see :func:`made_the_calls_of`): its end state is that one.
    """
    return end_states(scenario, seed, lambda: _play_solutions(scenario, seed, guard, episode))


class _SolutionStepper(Stepper):
    """A Stepper for a solution's scripted steps, which read results, never the request or the tool schemas."""

    for_agent = False


def made_the_calls_of(episode: Episode, scenario: Scenario, steps: Sequence[Step], where: str) -> bool:
    """Whether ``episode`` made exactly the calls ``steps`` make, in order, every one ok, ending at a terminal tool.

    Each step's arguments are resolved as a solution's are, against the episode's own results, and
    compared with the calls' arguments as bytes. The same start, the same calls: the determinism
    contract makes the end state the one playing ``steps`` reaches (the same contract kept calls rest
    on, see :class:`simworld._world.world.World`). A recovery scenario, whose agent dies mid-episode,
    always plays its solutions.
    """
    events = episode.events
    if (scenario.recovery is not None or episode.error is not None or episode.stop_reason != "terminal"
            or len(events) != len(steps)):
        return False
    variables = dict(episode.variables)
    results: list[Any] = []
    for i, (step, event) in enumerate(zip(steps, events, strict=True)):
        if event.status != "ok" or event.tool != step.tool:
            return False
        try:
            args = resolve_args(step.args, variables, results, f"{where} step {i}")
        except ScenarioError:  # a reference the episode's results do not hold: play the solution, which names it
            return False
        plain, problem = plain_value(args, "args")
        if problem is not None or orjson.dumps(plain) != orjson.dumps(event.args):
            return False
        results.append(event.result)
    return True


def _play_solutions(scenario: Scenario, seed: int, guard: TimeGuard | None,
                    episode: Episode | None = None) -> tuple[State, ...]:
    states = []
    problems = []
    for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True):
        if episode is not None and episode.initial_state is scenario.instance(seed).state and \
                made_the_calls_of(episode, scenario, steps, f"{scenario.id}/{name}"):
            states.append(episode.final_state)
            continue
        env = _SolutionStepper(scenario, seed, agent_name=f"solution:{name}", guard=guard)
        played = play(env, steps_factory(steps, name))
        bad = [e for e in played.events if e.status != "ok"]
        if played.error or played.outcome is None or bad:
            why = played.error or (f"call seq {bad[0].seq} {bad[0].tool} returned {bad[0].status}: "
                                   f"{bad[0].result}" if bad else f"it stopped with {played.stop_reason!r}")
            problems.append((name, why))
        states.append(played.final_state)
    if problems:
        raise BrokenSolutionError(scenario.path, seed, tuple(problems))
    return tuple(states)


def grade(scenario: Scenario, episode: Episode, solutions: Sequence[State]) -> dict[str, Any]:
    """Grade an episode with the scenario's graders; a grader that raises is a failed check, never a pass."""
    ex = scenario.expectations
    return grade_episode(ex.graders, episode, solutions, ex.weights)


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
        "contract": CONTRACT_VERSION,
    }
    if episode.stop_reason == "harness_error":
        line["harness_error"] = episode.error
    line.setdefault("harness_error", None)
    return line
