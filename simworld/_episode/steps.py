"""Scripted steps: an agent that plays a fixed list of actions (a scenario's solution, or a script)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._episode.episode import Observation
from simworld._episode.play import AgentFactory
from simworld._scenario.scenario import Step
from simworld._world.templates import Resolver, args_resolver, resolve_args

__all__ = ["StepsAgent", "step_resolvers", "steps_factory"]


class StepsAgent:
    """Plays a fixed list of steps, resolving ``{var}`` templates and ``$from`` references as it goes."""

    reads_results_only = True  # it never changes what it is shown (see simworld._episode.play.Agent)

    def __init__(self, steps: Sequence[Step], variables: dict[str, Any], where: str) -> None:
        self.steps = list(steps)
        self.variables = variables
        self.where = where
        self.results: list[Any] = []
        self._resolvers = step_resolvers(steps)

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
        try:
            args = self._resolvers[i](self.variables, self.results)
        except Exception:  # noqa: BLE001 - resolved again, to raise what resolve_args raises, naming the step
            args = resolve_args(step.args, self.variables, self.results, f"{self.where} step {i}")
        return {"tool": step.tool, "args": args}  # the loop copies an action before a tool reads it


def step_resolvers(steps: Sequence[Step]) -> tuple[Resolver, ...]:
    """Each step's arguments' resolver (:func:`~simworld._world.templates.args_resolver`), worked out once per list
    of steps (a solution is played at every seed)."""
    held = _RESOLVERS.get(id(steps))
    if held is not None and held[0] is steps:
        return held[1]
    made = tuple(args_resolver(step.args) for step in steps)
    if len(_RESOLVERS) >= 4096:
        _RESOLVERS.clear()
    _RESOLVERS[id(steps)] = (steps, made)
    return made


#: Per list of steps (by identity, held so that its id is not reused): see :func:`step_resolvers`.
_RESOLVERS: dict[int, tuple[Sequence[Step], tuple[Resolver, ...]]] = {}


def steps_factory(steps: Sequence[Step], where: str) -> AgentFactory:
    """A factory of agents that play ``steps`` (a solution or a script)."""
    return lambda sc, seed, variables: StepsAgent(steps, variables, f"{sc.id}/{where}")
