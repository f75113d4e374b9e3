"""Scripted steps: an agent that plays a fixed list of actions (a scenario's solution, or a script)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._episode.episode import Observation
from simworld._episode.play import AgentFactory
from simworld._scenario.scenario import Step
from simworld._world.templates import resolve_args

__all__ = ["StepsAgent", "steps_factory"]


class StepsAgent:
    """Plays a fixed list of steps, resolving ``{var}`` templates and ``$from`` references as it goes."""

    def __init__(self, steps: Sequence[Step], variables: dict[str, Any], where: str) -> None:
        self.steps = list(steps)
        self.variables = variables
        self.where = where
        self.results: list[Any] = []

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """The next step, with arguments resolved against the results so far."""
        if observation.resumed:
            # A fresh agent over a reloaded session: the log says which steps are done.
            self.results = [h["result"] for h in observation.history if "say" not in h]  # words are not steps
        elif observation.last_tool is not None:
            self.results.append(observation.last_result)
        i = len(self.results)
        if i >= len(self.steps):
            return None
        step = self.steps[i]
        args = resolve_args(step.args, self.variables, self.results, f"{self.where} step {i}")
        return {"tool": step.tool, "args": args}


def steps_factory(steps: Sequence[Step], where: str) -> AgentFactory:
    """A factory of agents that play ``steps`` (a solution or a script)."""
    return lambda sc, seed, variables: StepsAgent(steps, variables, f"{sc.id}/{where}")
