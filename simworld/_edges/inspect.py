"""simworld's suite as an Inspect AI task: ``inspect eval simworld/suite`` (``pip install 'simworld[inspect]'``).

One sample per (scenario, seed), in ``simworld run``'s order, with the task arguments
``simworld run`` takes:

.. code-block:: text

    inspect eval simworld/suite --model openai/gpt-4o-mini -T seeds=0..9 -T scenario=waive-small-fee
    inspect eval simworld/suite -T split=holdout -T seeds=0..4 -T out=runs/inspect

- ``scenario``: one id, a comma list or a list (default: the whole bundled suite, or ``suite``'s);
- ``seeds``: ``A..B``, a seed, or a comma list, as ``--seeds`` (default 0);
- ``split``: ``dev`` or ``holdout`` (seed N is each scenario's N-th reserved holdout seed);
- ``suite``: a directory of scenarios instead of the bundled suite;
- ``out``: a directory to write each episode to as ``simworld run`` does (``events/`` and
  ``results.jsonl``, the epoch as ``trial``), so ``simworld export``, ``grade`` and ``regrade`` read it.

The sample's input is what ``--agent openai:MODEL`` shows a model: the conversation's rules and
the policy as the system message, the customer's request as the user message
(:mod:`simworld._agents.chat`). Its metadata
names the scenario, seed, split and category (never shown to the model).

:func:`use_simworld` starts the sample's episode (an :class:`~simworld._episode.environment.Environment`: the
same world, simulated clock and event log as ``simworld run``) and gives the model the
scenario's tools as Inspect tools with simworld's own schemas. :func:`simworld_agent` is the
loop: Inspect's ``generate`` gives the next assistant message, each of its tool calls is one
step of the episode, in order, answered by a tool message, the message's text recorded as said
before its first call; a message with no tool call is the model's last word, recorded, and stops
the episode; a terminal tool, the step budget or the time budget ends it. In a recovery
scenario the agent dies at the scenario's call, as under ``simworld run``, and a fresh agent
takes over: the conversation is rebuilt from the session log (the calls the log holds and
their results), followed by a note that the session was restarted. Token usage is counted
into the episode's counters.

:func:`simworld_scorer` seals the episode and grades it with the scenario's graders against
every valid end state. The score's value is ``{"passed": 1.0 or 0.0, "total": ...}`` (``passed``
as accuracy, ``total`` as the mean, each with stderr and per category; pass^k over the epochs,
which :func:`simworld_trials` reduces); its metadata is the episode's whole result line
(``passed``, ``total``, ``parts``, ``category``, ``checks``, ``counters``, hashes...), byte for
byte the line ``simworld run`` writes for the same actions.

A sample that does not reach the scorer (the model raised, the sample was cancelled) is still
ended, graded and written by the task's cleanup, :func:`release` (``agent_error``, or ``timeout``
at an Inspect time limit, the error named). ``out`` is a whole run directory
(:mod:`simworld._edges.inspect_run`); ``--model simworld/reference`` and ``simworld/noop`` run it
offline (:mod:`simworld._edges.inspect_models`).

The tools also work under another solver (``react()``, a custom agent): each call steps the
episode, an ``error`` or ``denied`` result comes back as a tool error the model can read, and
a crash is answered as ``simworld serve`` answers it (an error naming the session log).

freezegun is process-wide and Inspect runs samples concurrently, so, as in a concurrent
``simworld run``, foreign code's ``datetime.now()`` is not frozen to simulated time; simworld's
own clock and everything it records are.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from simworld._agents.chat import opening, resumed, tool_content
from simworld._edges.session import Session, missing, suite_grid
from simworld._episode.environment import Environment
from simworld._running.rundir import pass_hat_k
from simworld._scenario.scenario import Scenario
from simworld._world.state import canonical_bytes
from simworld._world.tools import TOOLS
from simworld.errors import exception_text

try:
    from inspect_ai import Epochs, Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.scorer import (
        Metric,
        SampleScore,
        Score,
        Scorer,
        ScoreReducer,
        Target,
        Value,
        accuracy,
        grouped,
        mean,
        metric,
        score_reducer,
        scorer,
        stderr,
    )
    from inspect_ai.solver import Generate, Solver, TaskState, solver
    from inspect_ai.tool import Tool, ToolCall, ToolDef, ToolError, ToolParams
    from inspect_ai.util import LimitExceededError, sample_limits
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise missing("inspect", "inspect_ai", exc) from exc

import orjson

# Registered with Inspect on import: the offline models (simworld/reference, simworld/noop) and the hook that
# writes the out folder's run.json.
from simworld._edges import inspect_models, inspect_run  # noqa: F401

__all__ = ["live_session", "pass_hat", "release", "samples", "simworld_agent", "simworld_scorer", "simworld_tools",
           "simworld_trials", "suite", "use_simworld"]

#: The live episodes, by Inspect sample (``TaskState.uuid``): started by use_simworld, ended by the scorer or release().
_LIVE: dict[str, Session] = {}

#: Scenarios by (id, suite directory or None), as samples() loaded them: a scenario is immutable, and loading
#: one parses its snapshot, so each sample's episode reuses its dataset's.
_SCENARIOS: dict[tuple[str, str | None], Scenario] = {}

_NO_EPISODE = ("simworld_agent() found no simworld episode for this sample: put use_simworld() before it in the "
               "task's solver (suite() does).")


def samples(grid: list[tuple[Scenario, int]], split: str = "dev", suite: str | None = None) -> list[Sample]:
    """One Inspect sample per (scenario, seed as run): the policy and the request at that seed, and metadata.

    ``suite`` is the scenario directory the grid came from (None for the bundled suite).
    """
    out = []
    for scenario, seed in grid:
        first = Environment(scenario, seed).reset()
        meta = {"scenario": scenario.id, "seed": seed, "split": split, "category": scenario.category}
        if suite is not None:
            meta["suite"] = str(suite)
        _SCENARIOS[(scenario.id, None if suite is None else str(suite))] = scenario
        system, user = opening(first)
        out.append(Sample(input=[ChatMessageSystem(content=system["content"]),
                                 ChatMessageUser(content=user["content"])],
                          id=f"{scenario.id}__seed-{seed}", metadata=meta))
    return out


@task(simworld_suite=True)  # SUITE_ATTRIB: how the run directory's hooks know this task
def suite(scenario: str | list[str] | None = None, seeds: str | int | list[int] = 0, split: str = "dev",
          suite: str | None = None, out: str | None = None) -> Task:
    """simworld's scenarios as an Inspect task: one sample per (scenario, seed), graded by simworld's graders.

    Args:
        scenario: scenario id(s): one, a comma list, or a list (default: every scenario of the suite).
        seeds: seeds as ``simworld run --seeds`` reads them (``0..9``, ``3,7``), one seed, or a list.
        split: ``dev`` or ``holdout``.
        suite: a directory of scenarios instead of the bundled suite.
        out: a directory to write the episodes to as ``simworld run`` does (for ``simworld export``).
    """
    grid = suite_grid(scenario, seeds, split, suite)
    if out is not None:
        inspect_run.check_out(out, {"scenario": scenario, "seeds": seeds, "split": split, "suite": suite})
    return Task(dataset=MemoryDataset(samples(grid, split, suite), name="simworld"),
                solver=[use_simworld(out), simworld_agent()], scorer=simworld_scorer(), cleanup=release,
                epochs=Epochs(1, simworld_trials()))


def live_session(uuid: str) -> Session | None:
    """The running episode of an Inspect sample (``TaskState.uuid``), or None."""
    return _LIVE.get(uuid)


inspect_models.attach(live_session)


def _session(state: TaskState) -> Session | None:
    return _LIVE.get(state.uuid)


async def release(state: TaskState) -> None:
    """The task's cleanup, run by Inspect after every sample however it ended: a sample that was not scored (the
    model raised, the sample was cancelled) still ends its episode, recorded (``agent_error`` or ``timeout``, the
    error named) and written to ``out``; and the episode leaves the registry."""
    session = _LIVE.pop(state.uuid, None)
    if session is None or session.result is not None:
        return
    if not session.done:
        _end_unfinished(session, _WHY.get(session))
    session.finish()


#: Why a sample's agent loop was interrupted (an exception Inspect will handle), by episode, until it is finished.
_WHY: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()


def _end_unfinished(session: Session, why: str | None) -> None:
    """End an episode its agent did not end: at an Inspect limit (time and working time: ``timeout``; tokens,
    messages...: ``agent_error``), or with the error that interrupted its loop, or as cancelled."""
    hit = _limit_hit()
    if hit is not None:
        kind, text = hit
        if kind in ("time", "working"):
            session.env.time_out(text)
        else:
            session.env.fail(text)
    else:
        session.env.fail(why or "inspect: the sample ended without a stop (cancelled, or its solver failed)")


def _limit_hit() -> tuple[str, str] | None:
    """The Inspect sample limit that was reached, if any: its kind and a line naming it."""
    try:
        limits = sample_limits()
    except RuntimeError:  # not inside a sample
        return None
    for kind in ("time", "working", "token", "message", "turn", "cost"):
        limit = getattr(limits, kind, None)
        value = getattr(limit, "limit", None)
        if value is not None and getattr(limit, "usage", 0) >= value:
            return kind, f"inspect: the sample's {kind} limit ({value:g}) was reached"
    return None


@solver
def use_simworld(out: str | None = None) -> Solver:
    """Start the sample's simworld episode and give the model the scenario's tools.

    Args:
        out: a directory to write the episode to when it is scored (as ``simworld run`` does).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        scenario_id, seed = meta.get("scenario"), meta.get("seed")
        if not isinstance(scenario_id, str) or not isinstance(seed, int):
            raise ValueError(f"use_simworld(): sample {state.sample_id!r} has no simworld scenario and seed in its "
                             "metadata; build the dataset with simworld.inspect.samples().")
        scenario = _scenario(scenario_id, meta.get("suite"), meta.get("split"))
        session = Session(scenario, seed, agent_name=f"inspect:{state.model}", trial=state.epoch - 1, out=out)
        _LIVE[state.uuid] = session
        state.tools = simworld_tools(session)
        return state

    return solve




def _scenario(scenario_id: str, suite_dir: Any, split: Any = "dev") -> Scenario:
    """A scenario by id: the one samples() loaded, or loaded now (a dataset built elsewhere, in its ``split``: a
    holdout instance loads only in a holdout dataset)."""
    key = (scenario_id, suite_dir if isinstance(suite_dir, str) else None)
    found = _SCENARIOS.get(key)
    if found is None:
        ((found, _),) = suite_grid(scenario_id, 0, "holdout" if split == "holdout" else "dev", key[1])
        _SCENARIOS[key] = found
    return found


def simworld_tools(session: Session) -> list[Tool]:
    """The episode's tools as Inspect tools: simworld's names, descriptions and JSON schemas; each call steps it."""
    return [_tool(session, schema) for schema in session.env.tool_schemas]


def _tool(session: Session, schema: dict[str, Any]) -> Tool:
    name = schema["name"]

    async def call(**args: Any) -> str:
        if session.done:
            raise ToolError("The episode is over; no further calls are accepted.")
        observation = session.step({"tool": name, "args": args})
        if observation.resumed:
            raise ToolError("The session was interrupted during this call: it may or may not have taken effect. "
                            "Check the records before you retry. The session log so far: "
                            + canonical_bytes(list(observation.history)).decode())
        text = tool_content(observation.last_status, observation.last_result)
        if observation.last_status != "ok":
            raise ToolError(text)
        return text

    return ToolDef(call, name=name, description=schema["description"], parameters=_params(name),
                   parallel=False).as_tool()


@functools.cache
def _params_of(name: str) -> ToolParams:
    return ToolParams.model_validate(TOOLS[name].parameters)


def _params(name: str) -> ToolParams:
    """The tool's parameters as Inspect's ToolParams (validated once per tool, copied for each sample)."""
    return _params_of(name).model_copy(deep=True)


@solver
def simworld_agent() -> Solver:
    """The episode's agent loop: Inspect's ``generate`` for each assistant message, each tool call one step."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        session = _session(state)
        if session is None:
            raise RuntimeError(_NO_EPISODE)
        try:
            await _loop(session, state, generate)
        except BaseException as exc:
            _interrupted(session, exc)
            raise  # Inspect's to handle (retry, fail, cancel); release() records the episode
        return state

    return solve


async def _loop(session: Session, state: TaskState, generate: Generate) -> None:
    while not session.done and not state.completed:
        state = await generate(state, tool_calls="none")
        usage = _usage(state.output.usage)
        message = state.output.message if state.output.choices else None
        calls = list(message.tool_calls or []) if message is not None else []
        text = _text(message)
        if not calls:
            # A plain reply: the model's last word to the customer (recorded and judged), then the episode stops.
            session.step({"stop": True, **({"say": text} if text else {}), **({"usage": usage} if usage else {})})
            break
        for i, call in enumerate(calls):
            if session.done:  # a terminal call came earlier in this message
                state.messages.append(_answer(call, "The episode is over; this call was not made."))
                continue
            action: dict[str, Any] = {"tool": call.function,
                                      "args": call.arguments if call.parse_error is None else call.parse_error}
            if i == 0:  # the response's text and tokens go with its first call
                if text:
                    action["say"] = text
                if usage:
                    action["usage"] = usage
            observation = session.step(action)
            if observation.resumed:
                # The agent died mid-call; a fresh one takes over from the session log.
                state.messages = _chat(resumed(observation))
                break
            state.messages.append(_answer(call, tool_content(observation.last_status, observation.last_result)))


def _interrupted(session: Session, exc: BaseException) -> None:
    """Note why the loop stopped: a model error or an Inspect limit ends the episode now (``agent_error``,
    ``timeout``); a cancellation is only noted, since Inspect says afterwards whether it was a time limit."""
    if session.done:
        return
    if isinstance(exc, LimitExceededError):
        text = f"inspect: the sample's {exc.type} limit ({exc.limit:g}) was reached" if exc.limit is not None \
            else f"inspect: {exc.message}"
        (session.env.time_out if exc.type in ("time", "working") else session.env.fail)(text)
    elif isinstance(exc, Exception):
        session.env.fail(f"inspect: the model raised {type(exc).__name__}: {exception_text(exc)}")
    else:
        _WHY[session] = f"inspect: the sample was cancelled ({type(exc).__name__})"


def _text(message: ChatMessageAssistant | None) -> str | None:
    """The text a response carries beside its calls (its reasoning is not text to the customer)."""
    if message is None:
        return None
    text = message.text
    return text if text.strip() else None


def _usage(usage: Any) -> dict[str, int]:
    if usage is None:
        return {}
    found = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    return {k: v for k, v in found.items() if isinstance(v, int) and v > 0}


def _answer(call: ToolCall, content: str) -> ChatMessageTool:
    return ChatMessageTool(content=content, tool_call_id=call.id, function=call.function)


def _chat(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    """OpenAI-shaped messages (:mod:`simworld._agents.chat`) as Inspect chat messages."""
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for m in messages:
        role = m["role"]
        if role == "system":
            out.append(ChatMessageSystem(content=m["content"]))
        elif role == "user":
            out.append(ChatMessageUser(content=m["content"]))
        elif role == "assistant":
            calls = [ToolCall(id=c["id"], function=c["function"]["name"],
                              arguments=orjson.loads(c["function"]["arguments"])) for c in m.get("tool_calls", [])]
            names.update((c.id, c.function) for c in calls)
            out.append(ChatMessageAssistant(content=m.get("content") or "", tool_calls=calls or None))
        else:
            out.append(ChatMessageTool(content=m["content"], tool_call_id=m["tool_call_id"],
                                       function=names.get(m["tool_call_id"])))
    return out


@score_reducer(name="simworld_trials")
def simworld_trials() -> ScoreReducer:
    """Reduce a sample's epochs (trials): the mean of ``passed`` and ``total``, and in the metadata how many
    trials passed (``successes`` of ``trials``), from which :func:`pass_hat` computes pass^k."""

    def reduce(scores: list[Score]) -> Score:
        values = [s.value for s in scores if isinstance(s.value, dict)]
        successes = sum(1 for v in values if float(v.get("passed", 0.0)) >= 1.0)
        n = len(values)
        value = {key: (sum(float(v.get(key, 0.0)) for v in values) / n if n else 0.0) for key in ("passed", "total")}
        return Score(value=value, answer=scores[0].answer if len(scores) == 1 else None,
                     metadata={"successes": successes, "trials": n})

    return reduce


@metric(name="pass^k")
def pass_hat() -> Metric:
    """pass^k over the epochs, as ``simworld run --trials`` reports it: ``pass^1`` ... ``pass^N`` for N epochs
    (the mean over samples of C(successes, k) / C(N, k)). Needs the :func:`simworld_trials` reducer (the task's)."""

    def compute(scores: list[SampleScore]) -> Value:
        counts = [(m["successes"], m["trials"]) for s in scores
                  if isinstance(m := s.score.metadata, dict) and isinstance(m.get("trials"), int)]
        trials = {t for _, t in counts}
        if not counts or len(trials) != 1:
            return {}
        return dict(pass_hat_k([c for c, _ in counts], trials.pop()))

    return compute


@scorer(metrics={"passed": [accuracy(), stderr(), grouped(accuracy(), "category", all=False), pass_hat()],
                 "total": [mean(), stderr(), grouped(mean(), "category", all=False)]})
def simworld_scorer() -> Scorer:
    """Seal the sample's episode and grade it with the scenario's graders; the result line is the metadata.

    Metrics: ``passed`` as accuracy (with stderr, per category, and pass^k over the epochs), ``total`` as the
    mean score (with stderr and per category).
    """

    async def score(state: TaskState, target: Target) -> Score:
        session = _LIVE.pop(state.uuid, None)
        if session is None:
            return Score(value={"passed": 0.0, "total": 0.0}, explanation=_NO_EPISODE)
        if not session.done and (session in _WHY or _limit_hit() is not None):
            _end_unfinished(session, _WHY.get(session))  # scored after an Inspect limit or interrupt stopped it
        line = session.finish()
        failed = [f"{c['name']}: {c['detail']}" for c in line["checks"] if not c["passed"]]
        return Score(value={"passed": 1.0 if line["passed"] else 0.0, "total": float(line["total"])},
                     answer=line["outcome"],
                     explanation="; ".join(failed) if failed else "every check passed",
                     metadata=orjson.loads(canonical_bytes(line)))

    return score
