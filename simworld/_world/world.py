"""The world an episode runs in: a state, a clock, the policy store and the tool adapter.

Every tool call goes through :meth:`World.call`, which validates the arguments
against the tool's signature, runs the tool against the current state, advances
the clock by the tool's fixed latency and appends an :class:`~simworld._world.events.Event`.
A tool that raises :class:`~simworld.errors.ToolArgumentError` or
:class:`~simworld.errors.PolicyDenied` leaves the state untouched and returns its
message to the agent; any other exception is a bug in the harness or in a user's
tool and propagates. Arguments (or a whole action) that no action may hold (see
:mod:`simworld._world.actions`) are refused before any tool runs, recorded as an
``invalid`` event the agent can read that names the problem, never the value. What the
agent writes to the customer in words (a chat model's text) is a ``say`` event
(:meth:`World.say`).
"""

from __future__ import annotations

from datetime import date
from typing import Any

import orjson

from simworld._world.actions import plain_value, type_name
from simworld._world.clock import SimClock
from simworld._world.dates import local_date
from simworld._world.events import Event, Status
from simworld._world.models import Customer, Fee, Plan, Policy
from simworld._world.money import Money
from simworld._world.policy import PolicyStore
from simworld._world.state import State
from simworld.errors import PolicyDenied, ToolArgumentError, ToolError

__all__ = ["World", "own_tool"]


class World:
    """A live world: mutable only through tool calls, each recorded as an event."""

    def __init__(self, state: State, clock: SimClock, policy: PolicyStore, tools: dict[str, Any],
                 calls: dict[Any, Any] | None = None) -> None:
        self.state = state
        self._clock = clock
        self.policy = policy
        self.tools = tools
        self.events: list[Event] = []
        self.states: list[State] = []  # the state after each event
        self.outcome: str | None = None
        self._seq = 0
        self._calls = calls
        self._moment_read = False  # whether the clock or the sequence number was read (see _run)
        self._last: tuple[Event, bytes] | None = None  # the last call's event and its result's JSON (see shown)

    @property
    def clock(self) -> SimClock:
        """The simulated clock (a tool that reads it, or :meth:`today`, makes its call depend on the instant)."""
        self._moment_read = True
        return self._clock

    @clock.setter
    def clock(self, clock: SimClock) -> None:
        self._clock = clock

    @property
    def seq(self) -> int:
        """The sequence number of the next event (a tool that reads it, for a new record's id, makes its call
        depend on it)."""
        self._moment_read = True
        return self._seq

    @seq.setter
    def seq(self, seq: int) -> None:
        self._seq = seq

    # -- lookups tools share -------------------------------------------------------------------------

    def customer(self, customer_id: str) -> Customer:
        """The customer ``customer_id`` or a ToolArgumentError the agent can read."""
        return self._get("customers", customer_id, "customer_id")

    def policy_record(self, policy_id: str) -> Policy:
        """The policy ``policy_id`` or a ToolArgumentError."""
        return self._get("policies", policy_id, "policy_id")

    def plan(self, plan_id: str) -> Plan:
        """The plan ``plan_id`` or a ToolArgumentError."""
        return self._get("plans", plan_id, "plan_id")

    def fee(self, fee_id: str) -> Fee:
        """The fee ``fee_id`` or a ToolArgumentError."""
        return self._get("fees", fee_id, "fee_id")

    def _get(self, table: str, rid: Any, arg: str) -> Any:
        record = self.state.get(table, rid) if isinstance(rid, str) else None
        if record is None:
            raise ToolArgumentError(f"No {table[:-1] if table != 'policies' else 'policy'} with {arg}={rid!r}; "
                                    f"look it up first (find_customer, get_customer).")
        return record

    def plan_policy(self, plan: Plan) -> Policy:
        """The policy a plan belongs to."""
        policy: Policy = self.state.get("policies", plan.policy_id)
        return policy

    def writable_plan(self, plan_id: str) -> tuple[Plan, Policy]:
        """A plan and its policy, denied if the policy is cancelled (a system rule)."""
        plan = self.plan(plan_id)
        policy = self.plan_policy(plan)
        if policy.status == "cancelled":
            raise PolicyDenied(f"Policy {policy.id!r} is cancelled; its plan accepts no changes "
                               "(rule cancelled_frozen).")
        return plan, policy

    def money(self, value: Any, currency: str, name: str) -> Money:
        """Parse an agent's amount in ``currency``, as a ToolArgumentError if malformed."""
        try:
            return Money.parse(value, currency, name=name)
        except ValueError as exc:
            raise ToolArgumentError(str(exc)) from None

    def today(self, customer_id: str | None = None) -> date:
        """Today's date in the customer's zone (UTC without one), from the simulated clock."""
        zone = "UTC"
        if customer_id is not None:
            customer = self.state.get("customers", customer_id)
            if customer is not None:
                zone = customer.timezone
        return local_date(self.clock.now, zone)

    def put(self, record: Any) -> None:
        """Store ``record`` (a new value replacing the old one with its id)."""
        self.state = self.state.put(record)

    # -- the adapter ---------------------------------------------------------------------------------

    def invalid(self, action: Any) -> Event:
        """Record an action that is not a tool call, as an error the agent can read."""
        recorded, problem = _jsonable(action, "")
        if problem is not None:
            return self.refuse(problem)
        message = ('Expected an action {"tool": NAME, "args": {...}} (or None to stop) but got '
                   f"{recorded!r}.")
        return self._record(Event(self._seq, self._clock.iso(), "", recorded, {"error": message}, "error", 0.0,
                                  "invalid"))

    def refuse(self, problem: str) -> Event:
        """Record an action refused before anything ran (see :mod:`~simworld._world.actions`): an error the agent reads.

        The event's args are ``{"refused": problem}``: the problem names the type, the size and
        the place of what was wrong, never the value itself.
        """
        message = f"Refused the action without running it: {problem}."
        return self._record(Event(self._seq, self._clock.iso(), "", {"refused": problem}, {"error": message}, "error",
                                  0.0, "invalid"))

    def say(self, text: str) -> Event:
        """Record text the agent wrote to the customer (beside a call, or on its own), at the current instant.

        A ``say`` event changes nothing in the world and takes no simulated time. It carries the
        sequence number of the call that follows it (or would), without using it up: the records a
        talking agent's calls create have the ids a silent agent's would.
        """
        event = Event(self._seq, self._clock.iso(), "", {"text": text}, None, "ok", 0.0, "say")
        self.events.append(event)
        self.states.append(self.state)
        return event

    def _record(self, event: Event) -> Event:
        self.events.append(event)
        self.states.append(self.state)
        self._seq += 1
        return event

    def call(self, name: Any, args: Any, *, plain: bool = False) -> Event:
        """Run one tool call and record it; never raises for the agent's mistakes.

        ``plain=True`` says ``args`` is already plain JSON values (an action's copy from
        :func:`~simworld._world.actions.plain_action`, which nothing else holds): exactly what
        reading back its JSON would give, so it is recorded as it is instead of through a round trip.

        A tool's result may hold (or be) ``orjson.Fragment`` pieces, JSON already written (a
        record's cached bytes): the result is serialised once, fragments as they are, and the
        event records what that JSON reads back as.
        """
        seq = self._seq
        at = self._clock.iso()
        if not isinstance(name, str):
            # Environment.step sends only string names here; a direct caller may send anything.
            name = f"<a value of type {type_name(name)}>"
        tool = self.tools.get(name)
        args_json, args_bytes, problem = _plain_bytes(args) if plain else _jsonable_bytes(args, "args")
        if problem is not None:
            return self.refuse(problem)
        if tool is None:
            result: Any = {"error": f"Unknown tool {name!r}; available: {sorted(self.tools)!r}."}
            event = Event(seq, at, name, args_json, result, "error", 0.0, "unknown")
        else:
            status, result_bytes, recorded = self._run(tool, args_json, args_bytes, record=True)
            if recorded is None:
                recorded = orjson.loads(result_bytes)
            kind = tool.kind._value_  # the member's value, read without the enum descriptor
            event = Event(seq, at, tool.name, args_json, recorded, status, tool.latency, kind)
            self._last = (event, result_bytes)
            if status == "ok" and kind == "terminal":
                self.outcome = recorded["outcome"]
        return self._record(event)

    def shown(self, event: Event) -> Any:
        """``event``'s result as an agent is shown it: JSON values of its own, read again from the result's JSON, so
        that an agent that changes what it was shown (in place, as agents normalise a result) changes nothing
        recorded: not the event the graders read, nor the event file."""
        result = event.result
        if type(result) is not dict and type(result) is not list:  # None, a string, a number: nothing to change
            return result
        last = self._last
        return orjson.loads(last[1] if last is not None and last[0] is event else orjson.dumps(result))


    def apply(self, name: str, args: dict[str, Any]) -> bytes | None:
        """Make one call as :meth:`call` makes it (the same state, clock, sequence number, outcome and kept calls)
        without recording an event: its result's JSON bytes, or None when it is not ok or there is no such tool.

        For a caller that reads no event, only the end state and the results it asks for (a solution played
        while grading). ``args`` must be plain JSON values (see :meth:`call`'s ``plain``).
        """
        tool = self.tools.get(name)
        if tool is None:
            return None
        status, result_bytes, _ = self._run(tool, args, orjson.dumps(args), record=False)
        self._seq += 1
        if status != "ok":
            return None
        if tool.kind._value_ == "terminal":
            self.outcome = orjson.loads(result_bytes)["outcome"]
        return result_bytes

    def pass_over(self, tool: Any, args: dict[str, Any]) -> bool:
        """Make a call of a READ ``tool`` that has :attr:`~simworld._world.tools.Tool.checks` as :meth:`apply` makes
        it, for a caller that reads no result: its arguments bound and its checks made, the clock advanced and the
        sequence number taken, without building its result (a read changes nothing else). Whether it is ok: exactly
        when :meth:`apply` gives a result."""
        try:
            tool.checks(self, **tool.binder(args))
            ok = True
        except ToolError:
            ok = False
        self._clock.advance(tool.latency)
        self._seq += 1
        return ok

    def _run(self, tool: Any, args: Any, args_bytes: bytes, *, record: bool) -> tuple[Status, bytes, Any]:
        """The effect of calling ``tool`` with ``args`` on the state, the clock advanced: its status, its result's
        JSON bytes and, when ``record`` and it ran now, the result as recorded (else None: read it from the bytes).

        What a call's effect depends on: the state, the simulated time, the sequence number (new records' ids),
        the tool and its arguments exactly. The same call on the same state, clock and sequence number (by this
        world or another from the same start) is not run again: a tool is a function of those, so its effect
        and result are the kept ones. A call of simworld's own tools that read neither the clock nor the
        sequence number while it ran (most writes: a schedule, a due day, a deferral) is a function of the state,
        the tool and its arguments alone, and is kept for any instant and number: two solutions that differ only
        in the reads before it (which take time and a number, and change nothing) share it.
        """
        before = self.state
        calls = self._calls
        if calls is not None:
            played = calls.get((id(before), id(tool), args_bytes))
            if played is None:
                played = calls.get((id(before), self._clock.now, self._seq, id(tool), args_bytes))
            if played is not None and played[0] is before and played[1] is tool:
                self.state = played[2]
                self._clock.advance(tool.latency)
                return played[4], played[3], None
        now, seq = self._clock.now, self._seq
        status: Status
        self._moment_read = False
        try:
            result = tool.fn(self, **tool.binder(args))
            status = "ok"
        except ToolError as exc:
            self.state = before
            result, status = {"error": str(exc)}, exc.status
        timeless = not self._moment_read and own_tool(tool)
        self._clock.advance(tool.latency)
        recorded: Any = None
        try:
            result_bytes = None if record else orjson.dumps(result)
        except TypeError:
            result_bytes = None
        if result_bytes is None:
            recorded, result_bytes, problem = _jsonable_bytes(result, "result")
            if problem is not None:  # a user's tool returned what JSON cannot hold: the harness's bug
                raise TypeError(f"tool {tool.name!r} returned a result that cannot be recorded: {problem}")
        if calls is not None and len(calls) < _CALLS_KEPT:
            key = (id(before), id(tool), args_bytes) if timeless else (id(before), now, seq, id(tool), args_bytes)
            calls[key] = (before, tool, self.state, result_bytes, status)
        return status, result_bytes, recorded


def own_tool(tool: Any) -> bool:
    """Whether ``tool`` is one of simworld's own, which read the instant only through the world (a tool of your own
    may read it from ``datetime.now()``, which the simulated clock moves, or read the world's events)."""
    held = _OWN.get(id(tool))
    if held is not None and held[0] is tool:
        return held[1]
    own = getattr(getattr(tool, "fn", None), "__module__", "").startswith("simworld.")
    if len(_OWN) >= 1024:
        _OWN.clear()
    _OWN[id(tool)] = (tool, own)
    return own


#: Per tool (by identity, held so that its id is not reused): whether it is simworld's own (see :func:`own_tool`).
_OWN: dict[int, tuple[Any, bool]] = {}


#: Calls kept per start (a seed's perturbed world): enough for the agent's and every solution's.
_CALLS_KEPT = 512


def _jsonable_bytes(value: Any, root: str) -> tuple[Any, bytes, str | None]:
    """:func:`_jsonable`, with the JSON bytes of what is recorded (``orjson.dumps`` of it)."""
    try:
        dumped = orjson.dumps(value)
    except TypeError:
        recorded, problem = plain_value(value, root)
        return recorded, (orjson.dumps(recorded) if problem is None else b""), problem
    # orjson reads back what it wrote as the same values, which it writes as the same bytes.
    return orjson.loads(dumped), dumped, None


def _plain_bytes(value: Any) -> tuple[Any, bytes, str | None]:
    """:func:`_jsonable_bytes` of a value already plain JSON values (see :meth:`World.call`): the value itself,
    since orjson reads back what it writes of those as equal values of the same types."""
    try:
        return value, orjson.dumps(value), None
    except TypeError:  # not plain after all: the careful way
        return _jsonable_bytes(value, "args")


def _jsonable(value: Any, root: str) -> tuple[Any, str | None]:
    """Round-trip through canonical JSON so what is recorded is exactly what replays; or the problem with it.

    Integers beyond 64 bits (valid JSON, but not for orjson) and a Python agent's
    ``Decimal`` amounts are kept as their decimal text, so they reach the tool exactly
    (and an absurd amount is refused there, by name). What orjson cannot write is walked
    by :func:`simworld._world.actions.plain_value`, which never recurses and never calls a
    ``repr``: a value no action may hold comes back as a one-line problem naming where.
    """
    try:
        return orjson.loads(orjson.dumps(value)), None
    except TypeError:  # beyond 64 bits, a Decimal, a cycle, deep nesting, a foreign type: the careful walk
        return plain_value(value, root)
