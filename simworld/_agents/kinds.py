"""Agents and how ``--agent SPEC`` builds them.

An agent is an object with ``act(observation) -> action | None`` (a class
instantiated without arguments, once per episode) or a plain callable with the
same signature. An action is ``{"tool": NAME, "args": {...}}``; it may carry
``"usage": {"input_tokens": N, "output_tokens": M}`` for the token counters.

Specs:
    ``reference``            plays the scenario's first solution
    ``noop``                 calls nothing
    ``random``               seeded random calls, for smoke tests of graders
    ``drift:KIND``           the reference with one drifting computation (see simworld._agents.drift)
    ``cmd:"COMMAND"``        an agent process speaking JSON lines (see simworld._agents.process)
    ``openai:MODEL``         a tool-calling loop over an OpenAI-compatible endpoint (see simworld._agents.llm)
    ``scripted:PATH``        plays a JSONL file of actions in order
    ``python:module:attr``   a user's agent class or callable
"""

from __future__ import annotations

import importlib
import random
import re
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from simworld._episode.deadline import bounded
from simworld._episode.episode import Observation
from simworld._episode.play import AgentFactory
from simworld._episode.steps import StepsAgent, steps_factory
from simworld._scenario.scenario import read_steps
from simworld.errors import AgentSpecError, ScenarioError

__all__ = ["NoopAgent", "RandomAgent", "build_agent_factory"]


class NoopAgent:
    """Does nothing: the baseline every scenario's graders must fail."""

    reads_results_only = True  # it never changes what it is shown (see simworld._episode.play.Agent)

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """Stop at once."""
        return None


#: What the random agent reads as an id: ``\b(?:cus|pol|pln|fee|pay)[_-][A-Za-z0-9_-]+\b``, written so that the
#: expression starts with a letter: then the search skips to the next c, p or f instead of trying every position (a
#: third of the time over a plan's JSON). Each prefix's first letter is a word character, so the leading ``\b`` holds
#: exactly where the character before it is not one: ``(?<!\w.)`` after that first letter. The same matches.
_ID = re.compile(r"(?:c(?<!\w.)us|p(?<!\w.)(?:ol|ln|ay)|f(?<!\w.)ee)[_-][A-Za-z0-9_-]+\b")


class RandomAgent:
    """Seeded random tool calls with plausible arguments; ends with a random terminal tool."""

    reads_results_only = True  # it never changes what it is shown (see simworld._episode.play.Agent)

    def __init__(self, seed: int, scenario_id: str, calls: int = 8) -> None:
        self.rng = random.Random(f"random-agent/{scenario_id}/{seed}")
        self.calls = calls
        self.ids: list[str] = []
        self._request: tuple[str, list[str]] | None = None  # a request and the ids in it

    def _value(self, schema: Mapping[str, Any]) -> Any:
        """A random value for ``schema``, drawn by its drawer (see :func:`_drawer`)."""
        return _drawer(schema)(self)

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """A random call; ids found in earlier results are reused."""
        self.ids.extend(self._ids_in(observation.request, observation.last_result))
        tools: Sequence[Mapping[str, Any]] = observation.shared_tools  # only read: no episode's copy is made
        if observation.step >= self.calls:
            terminal = [t for t in tools if t["name"] in ("finish", "escalate", "request_information", "decline")]
            tools = terminal or tools
        choice = tools[_below(self.rng, len(tools))] if tools else self.rng.choice(tools)
        return {"tool": choice["name"], "args": _drawer(choice["parameters"])(self)}

    def _ids_in(self, request: str, result: Any) -> list[str]:
        """The ids in the request followed by the ids in ``repr(result)``, as one search of the two joined finds
        them. A dict's text starts with a brace, which no id holds or touches, so the two are searched apart
        and the request's ids are found once per request (any other result is searched with the request)."""
        if type(result) is not dict:
            return _ID.findall(request + repr(result))
        if self._request is None or self._request[0] is not request:
            self._request = (request, _ID.findall(request))
        return self._request[1] + _ID.findall(_searched_text(result))


def _searched_text(result: dict[str, Any]) -> str:
    """``repr(result)``, or its JSON where the two hold the same ids in the same order (and JSON costs a fraction of
    a repr): printable ASCII with no escape in it. Then the two differ only in their quotes, spaces and literals
    (``true``, ``null``), which no id holds or touches; an escape (a backslash, or DEL, which repr escapes and JSON
    does not) could put a word character before an id in one and not in the other."""
    try:
        data = orjson.dumps(result)
    except TypeError:  # a key that is not a string, an integer past 64 bits: as repr writes it
        return repr(result)
    if data.isascii() and b"\\" not in data and b"\x7f" not in data:
        return data.decode()
    return repr(result)


Drawer = Callable[[RandomAgent], Any]

#: Each schema's drawer, by the schema's identity (the schema is kept with it, so an id is never reused).
_DRAWERS: dict[int, tuple[Mapping[str, Any], Drawer]] = {}


def _drawer(schema: Mapping[str, Any]) -> Drawer:
    """The function that draws a random value for ``schema`` from an agent's generator, worked out once per schema
    (an agent's observations share their schemas): what is drawn, and in which order, depends on the schema alone.

    - an enum: one of its values;
    - an integer: 0 to 32; a boolean: a fair coin;
    - an array: 0 to 4 items, the count drawn first; an object: each property in order;
    - a date: a day of 2020-2030 (not always a real one); an amount: one to three decimals, maybe negative;
    - any other string: an id seen so far (four times in five when there is one), else "", "x" or "cus_001".
    """
    held = _DRAWERS.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    drawer = _make_drawer(schema)
    if len(_DRAWERS) < 4096:
        _DRAWERS[id(schema)] = (schema, drawer)
    return drawer


def _make_drawer(schema: Mapping[str, Any]) -> Drawer:
    # Drawn as random.Random draws them (choice(seq) is seq[_randbelow(len(seq))], randint(a, b) is
    # a + _randbelow(b - a + 1)), without the argument checks each of those makes first: the same numbers.
    kind = schema.get("type")
    if "enum" in schema:
        values = schema["enum"]
        if not values:
            return lambda agent: agent.rng.choice(values)  # raises, as it always did
        return lambda agent: values[_below(agent.rng, len(values))]
    if kind == "integer":
        return lambda agent: _below(agent.rng, 33)
    if kind == "boolean":
        return lambda agent: agent.rng.random() < 0.5
    if kind == "array":
        item = _drawer(schema["items"])
        return lambda agent: [item(agent) for _ in range(_below(agent.rng, 5))]
    if kind == "object":
        fields = [(name, _drawer(sub)) for name, sub in schema["properties"].items()]
        return lambda agent: {name: draw(agent) for name, draw in fields}
    if schema.get("format") == "date":
        return _draw_date
    if "pattern" in schema:
        return _draw_amount
    return _draw_text


def _draw_date(agent: RandomAgent) -> str:
    rng = agent.rng
    return f"20{20 + _below(rng, 11)}-{1 + _below(rng, 12):02d}-{1 + _below(rng, 31):02d}"


def _draw_amount(agent: RandomAgent) -> str:
    rng = agent.rng
    return f"{-5 + _below(rng, 2006)}.{_below(rng, 1000):0{1 + _below(rng, 3)}d}"


def _draw_text(agent: RandomAgent) -> str:
    rng, ids = agent.rng, agent.ids
    return ids[_below(rng, len(ids))] if ids and rng.random() < 0.8 else _TEXTS[_below(rng, 3)]


_TEXTS = ("", "x", "cus_001")
#: What ``random.Random.choice`` and ``randint`` draw with: a number below n (``randrange(n)``'s, where a Python
#: has no such method).
_below: Callable[[random.Random, int], int] = getattr(random.Random, "_randbelow",
                                                      lambda rng, n: rng.randrange(n))


class _CallableAgent:
    def __init__(self, fn: Callable[[Observation], dict[str, Any] | None]) -> None:
        self.fn = fn

    def act(self, observation: Observation) -> dict[str, Any] | None:
        return self.fn(observation)


def _import(target: str, spec: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise AgentSpecError(f"--agent {spec!r}: expected python:MODULE:ATTR, e.g. python:my_agents:MyAgent.")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"--agent {spec!r}: cannot import module {module_name!r} ({exc}).") from None
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise AgentSpecError(f"--agent {spec!r}: module {module_name!r} has no attribute {attr!r}.") from None
    if not callable(obj):
        raise AgentSpecError(f"--agent {spec!r}: {attr!r} is a {type(obj).__name__}, not a class or a callable.")
    return obj


#: The factories :func:`build_agent_factory` made of simworld's own agents (reference, noop, random, drift:,
#: scripted:), whose agents run only simworld's code (see :func:`is_own_factory`).
_OWN_FACTORIES: weakref.WeakSet[AgentFactory] = weakref.WeakSet()


def _own(factory: AgentFactory) -> AgentFactory:
    _OWN_FACTORIES.add(factory)
    return factory


def is_own_factory(factory: Any) -> bool:
    """Whether ``factory`` is one :func:`build_agent_factory` made of simworld's own agents: its agents run no code
    but simworld's (a factory of your own, whatever agent it names, is foreign code)."""
    try:
        return factory in _OWN_FACTORIES
    except TypeError:  # a factory that cannot be weakly referenced is none of these
        return False


def build_agent_factory(spec: str, *, base_url: str | None = None,
                        openai_options: Mapping[str, Any] | None = None) -> AgentFactory:
    """Turn an ``--agent`` spec into a factory of fresh agents, failing now on a bad spec.

    ``base_url`` is for ``openai:MODEL``: any OpenAI-compatible chat completions endpoint
    (default ``$OPENAI_BASE_URL``, else OpenAI's). ``openai_options`` are
    :class:`~simworld._agents.llm.OpenAIAgent`'s keyword arguments (max_retries, timeout_s,
    temperature, ...), ignored by the other kinds.
    """
    if spec == "reference":
        return _own(lambda sc, seed, v: StepsAgent(sc.solutions[0], v, f"{sc.id}/{sc.solution_files[0]}"))
    if spec == "noop":
        return _own(lambda sc, seed, v: NoopAgent())
    if spec == "random":
        return _own(lambda sc, seed, v: RandomAgent(seed, sc.id))
    kind, _, rest = spec.partition(":")
    if kind == "drift":
        from simworld._agents.drift import DRIFTS, DriftAgent

        if rest not in DRIFTS:
            raise AgentSpecError(f"--agent {spec!r}: unknown drift {rest!r}; known: "
                                 + ", ".join(f"drift:{d}" for d in DRIFTS) + ".")
        return _own(lambda sc, seed, v: DriftAgent(sc.solutions[0], v, f"{sc.id}/drift", rest))
    if kind == "openai":
        if not rest:
            raise AgentSpecError(f"--agent {spec!r}: expected openai:MODEL, e.g. openai:gpt-4o-mini.")
        from simworld._agents.llm import openai_factory  # lazy: httpx is an optional dependency

        return bounded(openai_factory(rest, base_url, **dict(openai_options or {})))
    if kind == "cmd":
        if not rest.strip():
            raise AgentSpecError(f'--agent {spec!r}: expected cmd:"COMMAND", e.g. cmd:"python examples/agent.py".')
        from simworld._agents.process import SubprocessAgent

        return lambda sc, seed, v: SubprocessAgent(rest, sc.timeout_s)
    if kind == "scripted" and rest:
        try:
            steps = read_steps(Path(rest))
        except ScenarioError as exc:
            raise AgentSpecError(f"--agent {spec!r}: {exc}") from None
        return _own(steps_factory(steps, rest))
    if kind == "python" and rest:
        obj = _import(rest, spec)
        if isinstance(obj, type):
            if not callable(getattr(obj, "act", None)):
                raise AgentSpecError(f"--agent {spec!r}: class {obj.__name__} has no act(observation) method.")
            return bounded(lambda sc, seed, v: obj())
        return bounded(lambda sc, seed, v: _CallableAgent(obj))
    raise AgentSpecError(
        f"--agent {spec!r} is not a known agent; use reference, noop, random, drift:KIND, scripted:PATH, "
        'cmd:"COMMAND", openai:MODEL or python:MODULE:ATTR.'
    )
