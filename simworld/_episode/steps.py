"""Scripted steps: an agent that plays a fixed list of actions (a scenario's solution, or a script)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._episode.episode import Observation
from simworld._episode.play import AgentFactory
from simworld._scenario.scenario import Step
from simworld._world.templates import Resolver, args_resolver, resolve_args

__all__ = ["PLAIN_SCALARS", "StepsAgent", "steps_factory", "worked_out"]


class StepsAgent:
    """Plays a fixed list of steps, resolving ``{var}`` templates and ``$from`` references as it goes."""

    reads_results_only = True  # it never changes what it is shown (see simworld._episode.play.Agent)

    def __init__(self, steps: Sequence[Step], variables: dict[str, Any], where: str) -> None:
        self.steps = list(steps)
        self.variables = variables
        self.where = where
        self.results: list[Any] = []
        self._resolvers = worked_out(steps)[2]

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


#: The exact types of the template variables and the arguments a solution's straight play copies by a JSON round
#: trip (no float: NaN is JSON null).
PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def worked_out(steps: Sequence[Step]) -> tuple[frozenset[int], bool, tuple[Resolver, ...]]:
    """What is worked out once per list of steps (a solution is played, a script run, at every seed): the steps whose
    results a later step's ``$from`` reads (every step, when a reference is not plain); whether every step's tool
    and arguments are exact JSON values without floats (as a solution file's are); and each step's arguments'
    resolver (:func:`~simworld._world.templates.args_resolver`)."""
    held = _WORKED_OUT.get(id(steps))
    if held is not None and held[0] is steps:
        return held[1]
    found: set[int] = set()
    for step in steps:
        if not _references(step.args, found):
            found = set(range(len(steps)))
            break
    plain = all(type(step.tool) is str and _exact(step.args) for step in steps)
    made = (frozenset(found), plain, tuple(args_resolver(step.args) for step in steps))
    if len(_WORKED_OUT) >= 4096:
        _WORKED_OUT.clear()
    _WORKED_OUT[id(steps)] = (steps, made)
    return made


#: Per list of steps (by identity, held so that its id is not reused): see :func:`worked_out`.
_WORKED_OUT: dict[int, tuple[Sequence[Step], tuple[frozenset[int], bool, tuple[Resolver, ...]]]] = {}


def _exact(value: Any) -> bool:
    """Whether ``value`` is made of exact dicts (string keys), lists and :data:`PLAIN_SCALARS` alone."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _exact(v) for k, v in value.items())
    if kind is list:
        return all(_exact(v) for v in value)
    return kind in PLAIN_SCALARS


def _references(value: Any, found: set[int]) -> bool:
    """Add to ``found`` the step of every ``$from`` in ``value`` (walked as resolve_args walks it); False when one
    is not a plain reference."""
    if isinstance(value, list):
        return all(_references(v, found) for v in value)
    if isinstance(value, dict):
        if len(value) == 1 and "$from" in value:
            ref = value["$from"]
            if not (isinstance(ref, list) and len(ref) == 2 and type(ref[0]) is int):
                return False
            found.add(ref[0])
            return True
        return all(_references(v, found) for v in value.values())
    return True


def steps_factory(steps: Sequence[Step], where: str) -> AgentFactory:
    """A factory of agents that play ``steps`` (a solution or a script)."""
    return lambda sc, seed, variables: StepsAgent(steps, variables, f"{sc.id}/{where}")
