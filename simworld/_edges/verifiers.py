"""simworld's suite as a verifiers environment (``pip install 'simworld[verifiers]'``).

.. code-block:: python

    import verifiers as vf

    env = vf.load_environment("simworld.verifiers", scenario="waive-small-fee", seeds="0..99", reward="total")
    # or: from simworld._edges.verifiers import load_environment; env = load_environment(...)
    results = env.evaluate_sync(client=AsyncOpenAI(...), model="...", state_columns=["simworld"])

This targets verifiers' multi-turn API (``vf.MultiTurnEnv``, ``vf.Rubric``, rollouts driven
by an OpenAI-compatible chat client), the API of the 0.1 releases that ``simworld[verifiers]``
pins; its GRPO tooling trains on any such environment.

- **Dataset**: one row per (scenario, seed), in ``simworld run``'s order, with the arguments
  ``simworld run`` takes (``scenario``, ``seeds``, ``split``, ``suite``). The ``prompt`` is what
  ``--agent openai:MODEL`` shows a model (:mod:`simworld._agents.chat`): the policy as the system
  message, the customer's request as the user message. ``info`` names the scenario, seed,
  split and category (the model never sees it).
- **Tools**: each rollout starts the row's episode (a :class:`~simworld._edges.session.Session`: the
  same world, simulated clock and event log as ``simworld run``) and offers the model the
  scenario's tools with simworld's own JSON schemas. Each tool call of an assistant message is
  one step, in order, answered by a ``tool`` message (the result as JSON text, or the error with
  its status); a message with no tool call stops the episode; a terminal tool, the scenario's
  ``max_steps`` or ``timeout_s`` ends it. In a recovery scenario the agent dies at the
  scenario's call, as under ``simworld run``, and the conversation restarts from the session
  log (the calls it holds and their results) followed by a note that the session was restarted.
  Token usage reported by the client is counted into the episode's counters; a model error
  (verifiers' ``state["error"]``) ends the episode as ``agent_error``.
- **Rubric**: when the rollout ends its episode is sealed and graded by the scenario's graders
  (``state["simworld"]`` is then the whole result line, the fields ``simworld run`` writes;
  pass ``state_columns=["simworld"]`` to keep it in the outputs). The reward is chosen by
  ``reward``: ``"total"`` (default; 0 on a failed gate, else the weighted partial credit),
  ``"passed"`` (1.0 or 0.0), ``"parts"`` (the mean of the non-gate parts of a right attempt: the
  right outcome class, no harm, every required call made; 0 for anything else, so stopping at
  once or acting at random earns nothing) or a callable of the result line; ``passed``,
  ``total`` and ``parts`` are always reported as metrics. The named rewards are one definition,
  shared with the Gymnasium environment (:mod:`simworld._grading.rewards`).

With ``out`` each episode is also written as ``simworld run`` writes it (``events/``,
``results.jsonl``; a repeated (scenario, seed) is the next ``trial``), so ``simworld export``,
``grade`` and ``regrade`` read it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from simworld._agents.chat import json_text, opening, resumed, tool_content
from simworld._edges.session import Session, missing, suite_grid
from simworld._episode.environment import Environment
from simworld._grading.rewards import REWARDS as NAMED_REWARDS
from simworld._grading.rewards import reward_fn
from simworld._scenario.scenario import Scenario
from simworld._world.state import canonical_bytes
from simworld.errors import ScenarioError, exception_text

try:
    import verifiers as vf
    from datasets import Dataset
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise missing("verifiers", "verifiers", exc) from exc

__all__ = ["REWARDS", "SimworldEnv", "SimworldRubric", "build_dataset", "load_environment", "oai_tools"]

#: The named rewards (see :mod:`simworld._grading.rewards`).
REWARDS = tuple(NAMED_REWARDS)
#: The state key that holds an ended rollout's result line.
RESULT = "simworld"
#: The answer to a call made after a terminal call in the same message.
OVER = "The episode is over; this call was not made."


def load_environment(scenario: str | Sequence[str] | None = None, seeds: Any = "0..99", split: str = "dev",
                     suite: str | Path | None = None, reward: str | Callable[[dict[str, Any]], float] = "total",
                     out: str | Path | None = None, max_turns: int = -1, **kwargs: Any) -> SimworldEnv:
    """simworld's scenarios as a verifiers environment: one row per (scenario, seed), graded by simworld's graders.

    Args:
        scenario: scenario id(s): one, a comma list, or a list (default: every scenario of the suite).
        seeds: seeds as ``simworld run --seeds`` reads them (``0..99``, ``3,7``), one seed, or a list.
        split: ``dev`` or ``holdout``.
        suite: a directory of scenarios instead of the bundled suite.
        reward: ``total``, ``passed``, ``parts``, or a callable of the result line.
        out: a directory to write each episode to as ``simworld run`` does.
        max_turns: verifiers' own cap on model turns (-1: none; the scenario's ``max_steps`` still ends it).
        kwargs: passed on to ``vf.MultiTurnEnv`` (``sampling_args``, ``max_workers``...).
    """
    grid = suite_grid(scenario, seeds, split, suite)
    return SimworldEnv(grid, split=split, suite=suite, reward=reward, out=out, max_turns=max_turns, **kwargs)


def oai_tools(schemas: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """simworld's tool schemas in OpenAI's chat ``tools`` shape."""
    return [{"type": "function", "function": dict(schema)} for schema in schemas]


def build_dataset(grid: Sequence[tuple[Scenario, int]], split: str = "dev",
                  suite: str | Path | None = None) -> Dataset:
    """One row per (scenario, seed as run): ``prompt`` (policy, request), ``answer`` (empty), ``task``, ``info``.

    ``info`` is JSON text (``scenario``, ``seed``, ``split``, ``category``, and ``suite`` when not the bundled one),
    which verifiers parses when a rollout starts.
    """
    rows = []
    for scenario, seed in grid:
        first = Environment(scenario, seed).reset()
        info: dict[str, Any] = {"scenario": scenario.id, "seed": seed, "split": split, "category": scenario.category}
        if suite is not None:
            info["suite"] = str(suite)
        rows.append({"prompt": opening(first), "answer": "", "task": "simworld", "info": json_text(info)})
    return Dataset.from_list(rows)


class SimworldRubric(vf.Rubric):
    """simworld's grade as a verifiers rubric: the chosen reward (weight 1), and passed, total, parts as metrics.

    Each function reads the rollout's result line (``state["simworld"]``), set when the rollout ended; a rollout
    without one (never started) scores 0.
    """

    def __init__(self, reward: str | Callable[[dict[str, Any]], float] = "total", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        chosen = reward_fn(reward)
        name = reward if isinstance(reward, str) else getattr(reward, "__name__", "reward")
        if not isinstance(reward, str) and name in REWARDS:
            name = f"custom_{name}"
        self.add_reward_func(_scored(chosen, name), weight=1.0)
        for metric in REWARDS:
            if metric != name:
                self.add_metric(_scored(NAMED_REWARDS[metric], metric))


def _scored(fn: Callable[[dict[str, Any]], float], name: str) -> Callable[..., float]:
    def score(state: Any) -> float:
        line = state.get(RESULT)
        return float(fn(line)) if line is not None else 0.0

    score.__name__ = name
    return score


class SimworldEnv(vf.MultiTurnEnv):
    """The suite as a verifiers multi-turn environment; build it with :func:`load_environment`.

    Args:
        grid: the (scenario, seed as run) pairs, as :func:`simworld._edges.session.suite_grid` gives them.
        split: the split the seeds were read in (recorded in each row's ``info``).
        suite: the scenario directory the grid came from (None: the bundled suite).
        reward: ``total``, ``passed``, ``parts``, or a callable of the result line.
        out: a directory to write each episode to as ``simworld run`` does.
        max_turns: verifiers' cap on model turns (-1: none).
    """

    def __init__(self, grid: Sequence[tuple[Scenario, int]], *, split: str = "dev", suite: str | Path | None = None,
                 reward: str | Callable[[dict[str, Any]], float] = "total", out: str | Path | None = None,
                 max_turns: int = -1, **kwargs: Any) -> None:
        if not grid:
            raise ScenarioError("the environment needs at least one (scenario, seed).")
        self.grid = list(grid)
        self.split = split
        self.suite = None if suite is None else str(suite)
        self.out = out
        self._scenarios: dict[tuple[str, str | None], Scenario] = {(s.id, self.suite): s for s, _ in self.grid}
        self._live: dict[str, Session] = {}
        self._trials: dict[tuple[str, int], int] = {}
        kwargs.setdefault("env_id", "simworld")
        rows = build_dataset(self.grid, split, suite)  # for training and, as is, for evaluation
        super().__init__(dataset=rows, eval_dataset=rows, rubric=SimworldRubric(reward), max_turns=max_turns,
                         message_type="chat", **kwargs)
        # Every rollout is given its scenario's tools; when the grid's scenarios share one list, it is also the env's.
        lists = {tuple(s.tools) for s, _ in self.grid}
        if len(lists) == 1:
            first = Environment(*self.grid[0])
            first.reset()
            self.oai_tools = oai_tools(first.tool_schemas)

    # -- a rollout's episode ------------------------------------------------------------------------------------

    def _scenario(self, scenario_id: str, suite_dir: str | None) -> Scenario:
        key = (scenario_id, suite_dir)
        found = self._scenarios.get(key)
        if found is None:
            ((found, _),) = suite_grid(scenario_id, 0, self.split, suite_dir)  # a holdout instance needs holdout
            self._scenarios[key] = found
        return found

    async def setup_state(self, state: Any) -> Any:
        """Start the row's episode and offer the model its scenario's tools."""
        info = state.get("info")
        if isinstance(info, str):
            info = json.loads(info)
        if not isinstance(info, dict) or not isinstance(info.get("scenario"), str) \
                or not isinstance(info.get("seed"), int):
            raise ScenarioError("simworld.verifiers: the row has no simworld scenario and seed in its info; build "
                                "the dataset with simworld.verifiers.build_dataset().")
        scenario = self._scenario(info["scenario"], info.get("suite"))
        seed = info["seed"]
        trial = 0
        if self.out is not None:
            trial = self._trials.get((scenario.id, seed), 0)
            self._trials[(scenario.id, seed)] = trial + 1
        session = Session(scenario, seed, agent_name=f"verifiers:{state['model']}", trial=trial, out=self.out)
        self._live[state["trajectory_id"]] = session
        state["oai_tools"] = oai_tools(session.env.tool_schemas)
        state["simworld_usage_seen"] = 0
        return state

    def session(self, state: Any) -> Session | None:
        """The live episode of a rollout (None once it has ended)."""
        return self._live.get(state["trajectory_id"])

    def _usage(self, state: Any) -> dict[str, int]:
        """The tokens of the model responses not yet counted into the episode (and mark them counted)."""
        steps = state["trajectory"]
        found = {"input_tokens": 0, "output_tokens": 0}
        for step in steps[state.get("simworld_usage_seen", 0):]:
            usage = getattr(step.get("response"), "usage", None)
            if usage is None:
                continue
            for key, attr in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
                value = getattr(usage, attr, None)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    found[key] += value
        state["simworld_usage_seen"] = len(steps)
        return {k: v for k, v in found.items() if v > 0}

    # -- the conversation --------------------------------------------------------------------------------------

    async def get_prompt_messages(self, state: Any) -> Any:
        """The next prompt: the conversation so far and the tool answers, or after a crash the rebuilt one."""
        if len(state["trajectory"]) == 0:
            return state["prompt"]
        last = state["trajectory"][-1]
        messages = list(last["prompt"]) + list(last["completion"])
        answers = await self.env_response(messages, state)
        restart = state.get("simworld_restart")
        if restart is not None:
            state["simworld_restart"] = None
            return restart
        return messages + list(answers)

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Each tool call of the last assistant message is one step of the episode, answered by a tool message."""
        session = self.session(state)
        calls = list(messages[-1].get("tool_calls") or [])
        said = _text_of(messages[-1].get("content"))
        usage = self._usage(state)
        answers: list[dict[str, Any]] = []
        for i, call in enumerate(calls):
            call_id = call.get("id", "")
            if session is None or session.done:  # a terminal call came earlier in this message
                answers.append({"role": "tool", "tool_call_id": call_id, "content": OVER})
                continue
            function = call.get("function") or {}
            text = function.get("arguments") or "{}"
            try:
                args = json.loads(text) if isinstance(text, str) else text
            except ValueError:
                args = text  # recorded as an invalid call the model can read, as simworld run records one
            action: dict[str, Any] = {"tool": function.get("name", ""), "args": args}
            if i == 0 and said:  # the response's text goes with its first call, as simworld run records it
                action["say"] = said
            if usage:
                action["usage"], usage = usage, {}
            observation = session.step(action)
            if observation.resumed:
                # The agent died mid-call; a fresh one takes over from the session log.
                state["simworld_restart"] = resumed(observation)
                return []
            answers.append({"role": "tool", "tool_call_id": call_id,
                            "content": tool_content(observation.last_status, observation.last_result)})
        if session is None or session.done:
            state["final_env_response"] = answers
        return answers

    @vf.stop
    async def answered_without_tools(self, state: Any) -> bool:
        """A reply with no tool call stops the episode."""
        if not state["trajectory"]:
            return False
        last = state["trajectory"][-1]["completion"][-1]
        return bool(last["role"] == "assistant" and not last.get("tool_calls"))

    @vf.cleanup
    async def end_episode(self, state: Any) -> None:
        """End the rollout's episode (a stop, or ``agent_error`` after a model error), seal, grade and record it."""
        session = self._live.pop(state["trajectory_id"], None)
        if session is None:
            return
        if not session.done:
            if state.get("error") is not None:
                session.env.fail(_named(state["error"]))
            else:
                # A reply with no tool call is the model's last word: recorded as what it said, then the stop.
                usage = self._usage(state)
                text = _final_text(state)
                session.step({"stop": True, **({"say": text} if text else {}), **({"usage": usage} if usage else {})})
        state[RESULT] = orjson.loads(canonical_bytes(session.finish()))


def _named(error: Any) -> str:
    """A rollout's error as the episode records it: verifiers' wrapper and the error it wraps (the provider's)."""
    cause = getattr(error, "__cause__", None) or getattr(error, "__context__", None)
    text = f"verifiers: {error!r}"
    return text + (f" caused by {type(cause).__name__}: {exception_text(cause)}" if cause is not None else "")


def _text_of(content: Any) -> str | None:
    """The text of a message's ``content`` (a string, or text parts); None when there is none."""
    if isinstance(content, list):
        content = "".join(p.get("text") or "" for p in content
                          if isinstance(p, dict) and p.get("type") in ("text", "output_text"))
    return content if isinstance(content, str) and content.strip() else None


def _final_text(state: Any) -> str | None:
    """The text of the rollout's last assistant message when it called no tool (a final reply)."""
    trajectory = state.get("trajectory") or []
    if not trajectory:
        return None
    completion = trajectory[-1].get("completion") or []
    last = completion[-1] if completion else None
    if not isinstance(last, dict) or last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    return _text_of(last.get("content"))
