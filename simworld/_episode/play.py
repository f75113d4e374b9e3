"""The agent loop: what an agent is, and how one is driven through a stepped episode until it ends."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from simworld._episode.deadline import DeadlineCaller, is_bounded
from simworld._episode.episode import Episode, Observation, Stepper
from simworld._scenario.scenario import Scenario
from simworld._world.actions import Refused
from simworld.errors import AgentTimeout, describe_exception

__all__ = ["Agent", "AgentFactory", "play"]


class Agent(Protocol):
    """What the harness drives: one action per observation, None to stop."""

    def act(self, observation: Observation) -> dict[str, Any] | Refused | None:
        """Return the next action, or None to stop (a transport that could not read one returns it Refused)."""


#: Builds a fresh agent for (scenario, seed, variables).
AgentFactory = Callable[[Scenario, int, dict[str, Any]], Agent]


def play(env: Stepper, agent_factory: AgentFactory) -> Episode:
    """Reset ``env``, drive one agent through it, and seal the episode; never raises for what happens inside.

    An agent that raises is recorded as ``agent_error``; one that gives no action within the
    scenario's ``timeout_s`` as ``timeout`` (agents from factories marked with
    :func:`simworld._episode.deadline.bounded` run on a watchdog thread, so even a call that blocks
    forever ends on time); an unexpected exception in the harness or in a user's tool as
    ``harness_error``, with its traceback. Only ``env.reset()`` failing raises.
    """
    observation = env.reset()
    caller = DeadlineCaller() if is_bounded(agent_factory) else None

    def call(fn: Callable[..., Any], *args: Any, what: str) -> Any:
        if caller is None:
            return fn(*args)
        return caller.call(fn, *args, seconds=env.remaining_s, what=what)

    def build(what: str) -> Any:
        try:
            return call(agent_factory, env.scenario, env.seed, dict(env.variables), what=f"building {what}")
        except AgentTimeout as exc:
            env.time_out(f"{exc} (timeout_s {env.scenario.timeout_s:g})")
        except Exception as exc:  # a user's agent failing to build is that episode's error, not the run's
            env.fail(f"{what} could not be built: {type(exc).__name__}: {exc}")
        return None

    agent = build("the agent")
    while agent is not None and not env.done:
        try:
            action = call(agent.act, observation, what="the agent's act()")
        except AgentTimeout as exc:
            env.time_out(f"{exc} (timeout_s {env.scenario.timeout_s:g})")
            break
        except Exception as exc:
            env.fail(describe_exception(exc))
            break
        try:
            observation, _done = env.step(action)
        except Exception as exc:  # a harness bug or a user's tool: this episode's error, never the run's
            env.harness_fail(describe_exception(exc, frames=True))
            break
        if observation.resumed and not env.done:
            # The agent died mid-call: a fresh one takes over the reloaded session.
            _close(agent, None, "agent_error", call)
            agent = build("the agent after the crash")
    episode = env.episode()
    if agent is not None:
        _close(agent, episode.outcome, episode.stop_reason, call)
    if caller is not None:
        caller.close()
    return episode


def _close(agent: Any, outcome: str | None, stop_reason: str, call: Callable[..., Any]) -> None:
    """Tell an agent that has an ``end`` method (a process, a connection) that its episode is over."""
    end = getattr(agent, "end", None)
    if callable(end):
        with contextlib.suppress(Exception):  # closing must never lose the episode
            call(end, outcome, stop_reason, what="the agent's end()")
