"""One episode stepped through the world, and the sealed Episode it leaves.

The agent receives an :class:`Observation` (the request, the policy text, the tool
schemas, the result of its previous call, the step and the simulated time) and
returns ``{"tool": NAME, "args": {...}}`` or None to stop. The loop ends at a
terminal tool, at the scenario's ``max_steps`` or at its ``timeout_s`` (real
seconds, read from a clock freezegun does not patch), and seals a read-only
:class:`Episode` for the graders.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import attrs
import orjson

from simworld._scenario.scenario import Recovery, Scenario
from simworld._world.actions import plain_action, usage_tokens
from simworld._world.clock import SimClock, TimeGuard, wall_monotonic
from simworld._world.events import Event, event_lines, lines_hash
from simworld._world.policy import PolicyStore
from simworld._world.state import State
from simworld._world.tools import TOOLS
from simworld._world.world import World

__all__ = ["Crash", "Episode", "Observation", "StopReason", "Stepper"]

StopReason = Literal["terminal", "agent_stopped", "max_steps", "timeout", "agent_error", "harness_error"]


@attrs.frozen
class Observation:
    """What the agent sees at each step.

    After a crash (a scenario's ``recovery`` block), a fresh agent starts with
    ``resumed=True`` and ``history``: the session's event log so far, each entry
    ``{"seq", "tool", "args", "status", "result"}`` for a call or ``{"seq", "say"}`` for text
    the agent wrote. The world is as it really is,
    which may include a call the log never recorded.
    """

    request: str
    policy: str
    # Given and compared as ``tools``; an episode's copy of its schemas is made when first read (see ToolSchemas).
    _tools: tuple[dict[str, Any], ...] | ToolSchemas = attrs.field(alias="tools", eq=lambda v: _read_tools(v),
                                                                   repr=lambda v: repr(_read_tools(v)))
    step: int
    now: str
    last_tool: str | None = None
    last_status: str | None = None
    last_result: Any = None
    resumed: bool = False
    history: tuple[dict[str, Any], ...] = ()

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        """The tool schemas: plain JSON values, the episode's own copy, which an agent may serialise or mutate."""
        return _read_tools(self._tools)

    @property
    def shared_tools(self) -> tuple[Mapping[str, Any], ...]:
        """The tool schemas, read-only and shared by every episode with the same tools (see :func:`shared_schemas`).

        For agents that only read them, as the built-in random agent does: no episode's copy is made
        for them (:attr:`tools` gives the episode's own copy, which an agent may change).
        """
        tools = self._tools
        return tools.shared() if isinstance(tools, ToolSchemas) else tools

    def to_json(self) -> dict[str, Any]:
        """The observation as JSON values (for subprocess agents and logs)."""
        return {"request": self.request, "policy": self.policy, "tools": list(self.tools),
                "step": self.step, "now": self.now, "last_tool": self.last_tool, "last_status": self.last_status,
                "last_result": self.last_result, "resumed": self.resumed, "history": list(self.history)}


@attrs.frozen
class Crash:
    """Where an episode's agent died: at its ``at_call``-th call, ``position`` events into the log.

    With ``after_side_effect`` the call's effect landed in the world but the session log
    lost it: ``lost`` is that call. It is in the episode's events at ``position`` (graders
    judge what happened) but was never in the history the resumed agent was given.
    """

    at_call: int
    after_side_effect: bool
    position: int
    lost: Event | None = None

    def to_json(self) -> dict[str, Any]:
        """The crash as JSON values, for the event file."""
        return {"at_call": self.at_call, "after_side_effect": self.after_side_effect, "position": self.position,
                "lost": self.lost.to_json() if self.lost else None}


@attrs.frozen(eq=False)
class Episode:
    """A finished episode, read-only: what graders see. Never the agent's messages.

    ``initial_state``, ``final_state`` and ``states`` (the state after each event) are
    immutable; ``variables`` are the seed's parameters; ``policy`` is the policy store
    as data; ``target`` names the customer, policy and plan the request is about.
    """

    scenario: str
    seed: int
    agent: str
    request: str
    policy_text: str
    variables: Mapping[str, Any]
    initial_state: State
    final_state: State
    states: tuple[State, ...]
    events: tuple[Event, ...]
    outcome: str | None
    stop_reason: StopReason
    counters: Mapping[str, int | float]
    error: str | None = None
    policy: PolicyStore | None = None
    target: Mapping[str, str] = attrs.field(factory=dict)
    crash: Crash | None = None
    tools: tuple[str, ...] = ()
    #: The events made into their event-file lines, and the hash of those lines: made when first read.
    _logged: tuple[tuple[bytes, ...], str] | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def event_lines(self) -> tuple[bytes, ...]:
        """Each event's line in the event file (:func:`~simworld._world.events.event_lines`), made once per episode:
        the result line's events hash and the event file are both made of them."""
        return self._log()[0]

    @property
    def events_hash(self) -> str:
        """Hash of the event log."""
        return self._log()[1]

    def _log(self) -> tuple[tuple[bytes, ...], str]:
        logged = self._logged
        if logged is None:
            lines = tuple(event_lines(self.events))
            logged = (lines, lines_hash(lines))
            object.__setattr__(self, "_logged", logged)
        return logged

    @property
    def state_hash(self) -> str:
        """Canonical hash of the final state."""
        return self.final_state.hash


@functools.lru_cache(maxsize=64)
def _schema_bytes(names: tuple[str, ...]) -> bytes:
    """The JSON schemas of the named tools, serialised once per tool list."""
    return orjson.dumps([TOOLS[n].schema() for n in names])


@functools.lru_cache(maxsize=64)
def shared_schemas(names: tuple[str, ...]) -> tuple[Mapping[str, Any], ...]:
    """The JSON schemas of the named tools, parsed once per tool list and frozen (objects as read-only mappings,
    arrays as tuples), so that every episode can share them."""
    return tuple(_frozen(schema) for schema in orjson.loads(_schema_bytes(names)))


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


class ToolSchemas:
    """An episode's copy of its tool schemas, made when first read.

    Each episode's agent gets schemas of its own (plain JSON values it may serialise or even
    mutate), shared by every observation of the episode. Copying them costs more than the rest
    of a scripted agent's step put together, and a scripted agent never reads them, so the copy
    is made only when something reads ``Observation.tools`` (or ``Stepper.tool_schemas``).
    """

    __slots__ = ("_copy", "_names")

    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = names
        self._copy: tuple[dict[str, Any], ...] | None = None

    def get(self) -> tuple[dict[str, Any], ...]:
        """The episode's copy of the schemas (made now if not yet)."""
        if self._copy is None:
            self._copy = tuple(orjson.loads(_schema_bytes(self._names)))
        return self._copy

    def shared(self) -> tuple[Mapping[str, Any], ...]:
        """The schemas shared by every episode with these tools, read-only (see :func:`shared_schemas`)."""
        return shared_schemas(self._names)


def _read_tools(tools: tuple[dict[str, Any], ...] | ToolSchemas) -> tuple[dict[str, Any], ...]:
    return tools.get() if isinstance(tools, ToolSchemas) else tools


class Stepper:
    """One scenario at one seed, stepped one action at a time: ``reset()``, ``step(action)``, ``episode()``.

    Everything an :class:`~simworld._episode.environment.Environment` is but its grading: the
    solutions whose end states grade an episode are played in a Stepper.
    """

    #: Whether an agent reads the observations: a solution's scripted steps read only the results, so for them
    #: the request is not written out and the tool schemas are not copied.
    for_agent: bool = True
    #: Whether the observations hold the results as recorded (see World.shown), not a copy of each: set by the agent
    #: loop for an agent that says it never changes what it is shown (``reads_results_only``). Anyone else stepping
    #: an episode gets results of their own.
    results_lent: bool = False

    def __init__(self, scenario: Scenario, seed: int, *, agent_name: str = "user", guard: TimeGuard | None = None):
        self.scenario = scenario
        self.seed = seed
        self.agent_name = agent_name
        self.guard = guard
        self._world: World | None = None

    def reset(self) -> Observation:
        """Load the snapshot, perturb it from the seed, and return the first observation."""
        inst = self.scenario.instance(self.seed)
        clock = SimClock(inst.clock, self.guard)
        clock.set(inst.clock)
        tools = {name: TOOLS[name] for name in self.scenario.tools}
        self._world = World(inst.state, clock, self.scenario.snapshot.policy, tools, inst.calls)
        self._initial = inst.state
        self._start = inst.clock
        self.variables = MappingProxyType(dict(inst.vars))
        self.request = self.scenario.request(inst.vars) if self.for_agent else ""
        self.policy_text = self.scenario.snapshot.policy.render(inst.vars["currency"])
        self._schemas: tuple[dict[str, Any], ...] | ToolSchemas = \
            ToolSchemas(self.scenario.tools) if self.for_agent else ()
        self._steps = 0
        self._calls = 0
        self._crash: Crash | None = None
        self._tokens = {"input_tokens": 0, "output_tokens": 0}
        self._stop: StopReason | None = None
        self._error: str | None = None
        self._began = wall_monotonic()
        return self._observe(None)

    @property
    def world(self) -> World:
        """The live world (after reset)."""
        if self._world is None:
            raise RuntimeError("Call reset() before using the environment.")
        return self._world

    def _observe(self, event: Event | None) -> Observation:
        w = self.world
        if event is None:
            return Observation(self.request, self.policy_text, self._schemas, self._steps, w.clock.iso())
        return Observation(self.request, self.policy_text, self._schemas, self._steps, w.clock.iso(), event.tool,
                           event.status, event.result if self.results_lent else w.shown(event))

    @property
    def tool_schemas(self) -> tuple[dict[str, Any], ...]:
        """The episode's tool schemas, as its agent's observations give them (after reset)."""
        return _read_tools(self._schemas)

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        return self._stop is not None

    def step(self, action: Any) -> tuple[Observation, bool]:
        """Apply one action (``{"tool": NAME, "args": {...}}``, or None to stop).

        The action is checked first (:mod:`simworld._world.actions`): one that is not plain JSON
        values within the limits (an integer of thousands of digits, a dict that contains
        itself, a string of megabytes, NaN, a set) is recorded as an ``error`` the agent can
        read, naming the problem and where, and the episode goes on. Nothing else ever sees it.

        An action may carry ``"say": TEXT``, what the agent writes to the customer in words: it
        is recorded as a ``say`` event before the call it comes with. ``{"say": TEXT}`` alone is
        a step of its own and the episode goes on; ``{"say": TEXT, "stop": true}`` is a final
        reply: recorded, then the episode stops (``agent_stopped``, no outcome). Empty text is
        not recorded.
        """
        if self.done:
            raise RuntimeError("The episode is over; call episode() to seal it or reset() to start again.")
        w = self.world
        plain, problem = plain_action(action)
        if type(plain) is dict and len(plain) == 2 and "args" in plain and type(plain.get("tool")) is str:
            # A call and its arguments, nothing else (no usage, text or stop): the call below, its checks all passed.
            self._steps += 1
            crash = self._dies_now()
            if crash is not None:
                return self._die(plain, crash.after_side_effect), False
            return self._observe(w.call(plain["tool"], plain["args"], plain=True)), self._check_end()
        for key, value in usage_tokens(action if problem is not None else plain).items():
            self._tokens[key] += value  # a refused reply still cost its tokens
        if problem is not None:
            self._steps += 1
            return self._observe(w.refuse(problem)), self._check_end()
        action = plain
        if isinstance(action, dict) and "say" in action:
            said = action["say"]
            if said is not None and not isinstance(said, str):
                self._steps += 1
                return self._observe(w.refuse(f"say: a value of type {type(said).__name__}; the text to the "
                                              "customer must be a string")), self._check_end()
            if said is not None and said.strip():
                w.say(said)  # before the call it comes with: a model writes its text, then calls
            action = {k: v for k, v in action.items() if k != "say"}
            if "tool" not in action and action.get("stop") is not True:
                self._steps += 1  # text alone: a step of its own, and the agent goes on
                return self._observe(None), self._check_end()
        stopping = isinstance(action, dict) and action.get("stop") is True and "tool" not in action
        if action is None or stopping:
            # None stops; {"stop": true, "usage": {...}} stops too, counting the tokens of the last reply.
            self._stop = "agent_stopped"
            return self._observe(None), True
        self._steps += 1
        if isinstance(action, dict) and isinstance(action.get("tool"), str):
            crash = self._dies_now()
            if crash is not None:
                return self._die(action, crash.after_side_effect), False
            event = w.call(action["tool"], action.get("args", {}), plain=True)
        else:
            event = w.invalid(action)
        return self._observe(event), self._check_end()

    def _check_end(self) -> bool:
        """End the episode at a terminal tool, the step budget or the time budget; whether it has ended."""
        if self.world.outcome is not None:
            self._stop = "terminal"
        elif self._steps >= self.scenario.max_steps:
            self._stop = "max_steps"
        elif wall_monotonic() - self._began > self.scenario.timeout_s:
            self._stop = "timeout"
        return self.done

    def _dies_now(self) -> Recovery | None:
        """Count the step's call: the scenario's recovery when the agent dies making it (its ``crash_at_call``-th),
        else None."""
        self._calls += 1
        recovery = self.scenario.recovery
        if recovery is not None and self._crash is None and self._calls == recovery.crash_at_call:
            return recovery
        return None

    def _die(self, action: dict[str, Any], after_side_effect: bool) -> Observation:
        """The agent dies making this call: before its effect lands, or after it lands but before the log has it.

        Returns the first observation for a fresh agent over the reloaded session.
        """
        w = self.world
        lost = None
        position = len(w.events)
        if after_side_effect:
            # The durable world keeps the effect (and graders see the call); the session log never recorded it.
            lost = w.call(action["tool"], action.get("args", {}), plain=True)
            if w.outcome is not None:  # a terminal call that landed still ends the episode
                self._stop = "terminal"
        self._crash = Crash(self._calls, after_side_effect, position, lost)
        history = tuple({"seq": e.seq, "say": e.args["text"]} if e.kind == "say" else
                        {"seq": e.seq, "tool": e.tool, "args": e.args, "status": e.status, "result": e.result}
                        for e in w.events[:position])
        # The log as the fresh agent reads it: JSON values of its own (see World.shown), whatever agent that is.
        history = tuple(orjson.loads(orjson.dumps(history)))
        return Observation(self.request, self.policy_text, ToolSchemas(self.scenario.tools), self._steps, w.clock.iso(),
                           resumed=True, history=history)

    def fail(self, error: str) -> None:
        """Record that the agent crashed; the episode ends and is kept as errored."""
        self._stop = "agent_error"
        self._error = error

    def time_out(self, error: str) -> None:
        """Record that the agent gave no action within the scenario's ``timeout_s``; the episode ends."""
        self._stop = "timeout"
        self._error = error

    def harness_fail(self, error: str) -> None:
        """Record that simworld (or a user's tool) failed mid-episode; the episode ends and is kept."""
        self._stop = "harness_error"
        self._error = error

    @property
    def remaining_s(self) -> float:
        """Real seconds left before the scenario's ``timeout_s`` (negative once it has passed)."""
        return self.scenario.timeout_s - (wall_monotonic() - self._began)

    def episode(self) -> Episode:
        """Seal the episode: initial and final state, every event, outcome and counters."""
        w = self.world
        events = tuple(w.events)
        counters: dict[str, int | float] = {
            "steps": self._steps,
            "tool_calls": sum(1 for e in events if e.kind != "invalid" and e.kind != "say"),
            "denied_calls": sum(1 for e in events if e.status == "denied"),
            "error_calls": sum(1 for e in events if e.status == "error"),
            "input_tokens": self._tokens["input_tokens"],
            "output_tokens": self._tokens["output_tokens"],
            "total_tokens": self._tokens["input_tokens"] + self._tokens["output_tokens"],
            "sim_seconds": round((w.clock.now - self._start).total_seconds(), 3),
        }
        return Episode(self.scenario.id, self.seed, self.agent_name, self.request, self.policy_text, self.variables,
                       self._initial, w.state, tuple(w.states), events, w.outcome, self._stop or "agent_stopped",
                       MappingProxyType(counters), self._error, self.scenario.snapshot.policy,
                       MappingProxyType(dict(self.scenario.target)), self._crash, self.scenario.tools)
