"""Offline Inspect models for simworld's task: ``--model simworld/reference`` and ``--model simworld/noop``.

Registered with Inspect's ``@modelapi`` registry when :mod:`simworld._edges.inspect` is imported
(Inspect's entry point imports it), so ``inspect eval simworld/suite --model simworld/reference``
runs with no network and no key:

- ``simworld/reference`` plays the sample's reference solution (the scenario's first
  ``solution``, as ``--agent reference`` does) through real tool calls: one call per response,
  each read back from the episode's latest observation, with no text, then an empty reply
  once the solution is played, so its episodes are ``--agent reference``'s;
- ``simworld/noop`` replies in words and never calls a tool (a final reply: the episode stops
  without an outcome and fails, as ``--agent noop`` does).

They serve only samples of a running simworld episode (:func:`simworld._edges.inspect.use_simworld`),
report no token usage (so nothing is counted, and Inspect never loads a tokenizer to estimate
it), and are deterministic: the same sample gives the same calls.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import attrs
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi
from inspect_ai.solver._task_state import sample_state
from inspect_ai.tool import ToolChoice, ToolInfo

from simworld._edges.session import Session
from simworld._episode.episode import Observation
from simworld._episode.steps import StepsAgent

__all__ = ["NOOP_REPLY", "SimworldModels"]

#: What ``simworld/noop`` says.
NOOP_REPLY = "Thank you for your message. I am not able to act on this request."
MODELS = ("reference", "noop")
NO_USAGE = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)


#: The running episode of an Inspect sample, by its uuid: given by :mod:`simworld._edges.inspect`, which owns the
#: sessions and imports this module (see :func:`attach`).
_live_session: Callable[[str], Session | None] | None = None


def attach(live_session: Callable[[str], Session | None]) -> None:
    """Tell the models where the running episodes are (the task module calls this when it is imported)."""
    global _live_session
    _live_session = live_session


@attrs.define
class _Player:
    """A sample's reference agent, the observation it last acted on and what it answered."""

    agent: StepsAgent
    seen: Observation
    action: dict[str, Any] | None


@modelapi(name="simworld")
class SimworldModels(ModelAPI):
    """``simworld/reference`` and ``simworld/noop``: offline models that play a simworld sample (see the module)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        if model_name not in MODELS:
            raise ValueError(f"simworld/{model_name}: unknown simworld model; use simworld/reference or "
                             "simworld/noop.")
        #: Per live episode (gone with it): the reference agent playing it.
        self._players: weakref.WeakKeyDictionary[Session, _Player] = weakref.WeakKeyDictionary()

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        """The next response: the reference's next call, or a plain reply."""
        name = f"simworld/{self.model_name}"
        if self.model_name == "noop":
            return _said(ModelOutput.from_content(name, NOOP_REPLY))
        state = sample_state()
        session = _live_session(state.uuid) if state is not None and _live_session is not None else None
        if session is None:
            raise RuntimeError(f"{name} plays simworld samples only: put use_simworld() before the agent in the "
                               "task's solver (simworld/suite does).")
        observation = session.observation
        player = self._players.get(session)
        if player is None or observation is not player.seen:
            # A fresh agent for a new episode, and after the scenario's crash (it reads the session log).
            agent = (player.agent if player is not None and not observation.resumed else
                     StepsAgent(session.scenario.solutions[0], dict(session.env.variables), session.scenario.id))
            player = self._players[session] = _Player(agent, observation, agent.act(observation))
        if player.action is None:
            return _said(ModelOutput.from_content(name, ""))  # no words: the episode is --agent reference's
        return _said(ModelOutput.for_tool_call(name, player.action["tool"], player.action["args"],
                                               tool_call_id=f"call_{observation.step}", content=""))


def _said(output: ModelOutput) -> ModelOutput:
    output.usage = NO_USAGE
    return output
