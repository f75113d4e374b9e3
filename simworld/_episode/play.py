"""The agent loop: what an agent is, and how one is driven through a stepped episode until it ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from simworld._episode.deadline import DeadlineCaller, InterruptWatch, is_bounded
from simworld._episode.episode import Episode, Observation, Stepper
from simworld._scenario.scenario import Scenario
from simworld._world.actions import Refused
from simworld.errors import AgentTimeout, describe_exception, exception_text

__all__ = ["Agent", "AgentFactory", "play"]


class Agent(Protocol):
    """What the harness drives: one action per observation, None to stop.

    Each observation's ``last_result`` (and a resumed agent's ``history``) is the agent's own copy: changing it
    changes nothing recorded. An agent class that never changes what it is shown may say so with a class attribute
    of its own (a subclass says it again) ``reads_results_only = True``: it is then shown the recorded results
    themselves, which spares a copy of each (simworld's own agents do).
    """

    def act(self, observation: Observation) -> dict[str, Any] | Refused | None:
        """Return the next action, or None to stop (a transport that could not read one returns it Refused)."""


#: Builds a fresh agent for (scenario, seed, variables).
AgentFactory = Callable[[Scenario, int, dict[str, Any]], Agent]


def play(env: Stepper, agent_factory: AgentFactory) -> Episode:
    """Reset ``env``, drive one agent through it, and seal the episode; never raises for what happens inside.

    An agent that raises anything (``SystemExit``, ``KeyboardInterrupt`` and other
    ``BaseException`` included) is recorded as ``agent_error``, naming what it raised; one that
    gives no action within the scenario's ``timeout_s`` as ``timeout`` (agents from factories
    marked with :func:`simworld._episode.deadline.bounded` run on a watchdog thread, so even a
    call that blocks forever ends on time); an unexpected exception in the harness or in a
    user's tool as ``harness_error``, with its traceback. Only ``env.reset()`` failing raises,
    and a real Ctrl-C (see :class:`~simworld._episode.deadline.InterruptWatch`), which is raised
    again so that the run can stop.
    """
    with InterruptWatch() as watch:
        return _play(env, agent_factory, watch)


def _play(env: Stepper, agent_factory: AgentFactory, watch: InterruptWatch) -> Episode:
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
        except BaseException as exc:  # a user's agent failing to build is that episode's error, not the run's
            if watch.is_users(exc):
                raise
            env.fail(f"{what} could not be built: {type(exc).__name__}: {exception_text(exc)}")
        return None

    agent = build("the agent")
    env.results_lent = _reads_only(agent)
    while agent is not None and not env.done:
        try:
            action = call(agent.act, observation, what="the agent's act()")
        except AgentTimeout as exc:
            env.time_out(f"{exc} (timeout_s {env.scenario.timeout_s:g})")
            break
        except BaseException as exc:  # anything the agent raises, SystemExit included, ends its episode only
            if watch.is_users(exc):
                raise
            env.fail(describe_exception(exc))
            break
        try:
            observation, _done = env.step(action)
        except Exception as exc:  # a harness bug or a user's tool: this episode's error, never the run's
            env.harness_fail(describe_exception(exc, frames=True))
            break
        except BaseException as exc:  # only an agent's object raises these while its action is read
            if watch.is_users(exc):
                raise
            env.fail(f"its action could not be read: {describe_exception(exc)}")
            break
        if observation.resumed and not env.done:
            # The agent died mid-call: a fresh one takes over the reloaded session.
            _close(agent, None, "agent_error", call, watch)
            agent = build("the agent after the crash")
            env.results_lent = _reads_only(agent)
    episode = env.episode()
    if agent is not None:
        _close(agent, episode.outcome, episode.stop_reason, call, watch)
    if caller is not None:
        caller.close()
    return episode


def _reads_only(agent: Any) -> bool:
    """Whether ``agent``'s class says it never changes the results it is shown (see :class:`Agent`)."""
    return agent is not None and type(agent).__dict__.get("reads_results_only") is True


def _close(agent: Any, outcome: str | None, stop_reason: str, call: Callable[..., Any],
           watch: InterruptWatch) -> None:
    """Tell an agent that has an ``end`` method (a process, a connection) that its episode is over."""
    try:
        end = getattr(agent, "end", None)
        if callable(end):
            call(end, outcome, stop_reason, what="the agent's end()")
    except BaseException as exc:  # closing must never lose the episode, whatever the agent raises
        if watch.is_users(exc):
            raise
