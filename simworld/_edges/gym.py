"""simworld's suite as a Gymnasium environment (``pip install 'simworld[gym]'``).

.. code-block:: python

    import gymnasium as gym
    import simworld._edges.gym  # registers simworld/Suite-v0

    env = gym.make("simworld/Suite-v0", scenario="waive-small-fee", seeds="0..9", reward="total")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step('{"tool": "list_fees", "args": {"plan_id": "pln_010"}}')

Text in, text out, both JSON:

- an **observation** is simworld's :class:`~simworld._episode.episode.Observation` as JSON text (the
  request, the policy, the tool schemas, the last call's tool, status and result, the step,
  the simulated time, and after a crash ``resumed`` with the session log), the same object a
  ``cmd:`` agent reads, ASCII-escaped so it lies in the observation space;
- an **action** is what any simworld agent returns, as JSON text: ``{"tool": NAME, "args": {...}}``
  (``"usage"`` optional), or ``null`` / an empty string to stop. Text that is not JSON is
  recorded as an invalid action the agent can read, as ``simworld run`` records one.

Each ``reset`` starts one episode of one (scenario, seed) of the configured grid (``scenario``
and ``seeds`` read as ``simworld run`` reads them, ``split`` likewise): ``options={"scenario": ID,
"seed": N}`` names it, otherwise the environment's seeded generator picks it, so
``reset(seed=S)`` always starts the same episode. The world, its simulated clock and its event
log are ``simworld run``'s: the same actions give byte-identical results.

The episode is **terminated** when a terminal tool (finish, escalate, request_information,
decline) ends it or the agent stops, **truncated** when the scenario's ``max_steps`` or
``timeout_s`` runs out. Rewards are sparse: 0 on every step but the last, whose reward is
chosen by ``reward`` (one definition, shared with the verifiers environment:
:mod:`simworld._grading.rewards`):

- ``"total"`` (default): the result's ``total``, 0 on a failed gate (a wrong outcome class or none,
  a forbidden change, an unauthorised action, a wrong recipient), else the weighted partial credit;
- ``"passed"``: 1.0 if every check passed, else 0.0;
- ``"parts"``: partial credit for a *right attempt* only: an episode that reached the right outcome
  class, harmed nothing and made every call the scenario requires scores the plain mean of its
  non-gate parts (steps, state, money, comms, ...), each the share of its checks passed; anything
  else scores 0. Denser than ``passed`` (a right attempt with a wrong figure earns most of its
  credit) without paying for doing nothing: an agent that stops at once scores 0, a random one
  only the episodes it passes by chance (``benchmarks/bench_rewards.py`` measures it);
- a callable ``f(result_line) -> float``.

``info`` always names the ``scenario``, ``seed``, ``split``, ``category`` and ``step``; the last
step's ``info["result"]`` is the episode's whole result line (the same fields ``simworld run``
writes, ``passed``, ``total`` and ``parts`` among them). With ``out`` each episode is also
written as ``simworld run`` writes it (``events/``, ``results.jsonl``), for ``simworld export``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from simworld._edges.session import Session, missing, suite_grid
from simworld._episode.episode import Observation
from simworld._grading.rewards import REWARDS as NAMED_REWARDS
from simworld._grading.rewards import reward_fn
from simworld._scenario.scenario import Scenario
from simworld.errors import ScenarioError

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised in an environment without the extra
    raise missing("gym", "gymnasium", exc) from exc

__all__ = ["ENV_ID", "REWARDS", "SimworldEnv", "observation_text"]

#: The id simworld registers with Gymnasium.
ENV_ID = "simworld/Suite-v0"
#: The named rewards (see :mod:`simworld._grading.rewards`).
REWARDS = tuple(NAMED_REWARDS)
#: Printable ASCII: every observation is JSON with non-ASCII escaped, so this charset holds it.
CHARSET = "".join(chr(c) for c in range(0x20, 0x7F))
#: The longest observation and action text the spaces admit.
MAX_OBSERVATION = 1 << 22
MAX_ACTION = 1 << 16


def observation_text(observation: Observation) -> str:
    """An observation as the environment gives it: canonical JSON text (sorted keys, ASCII-escaped)."""
    return json.dumps(observation.to_json(), ensure_ascii=True, sort_keys=True, separators=(",", ":"))


class SimworldEnv(gymnasium.Env[str, str]):
    """simworld's scenarios as a Gymnasium environment: JSON text observations and actions, a sparse final reward.

    Args:
        scenario: scenario id(s): one, a comma list, or a list (default: every scenario of the suite).
        seeds: seeds as ``simworld run --seeds`` reads them (``0..99``, ``3,7``), one seed, or a list.
        split: ``dev`` or ``holdout``.
        reward: ``total``, ``passed``, ``parts``, or a callable of the result line.
        suite: a directory of scenarios instead of the bundled suite.
        out: a directory to write each episode to as ``simworld run`` does.
        render_mode: None or ``"ansi"`` (the last observation, pretty-printed).
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 - Gymnasium's own class attribute

    def __init__(self, scenario: str | Sequence[str] | None = None, seeds: Any = "0..99", split: str = "dev",
                 reward: str | Callable[[dict[str, Any]], float] = "total", suite: str | Path | None = None,
                 out: str | Path | None = None, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ScenarioError(f"render_mode {render_mode!r} is unknown; use None or 'ansi'.")
        self.grid: list[tuple[Scenario, int]] = suite_grid(scenario, seeds, split, suite)
        self.split = split
        self.reward_fn = reward_fn(reward)
        self.out = out
        self.render_mode = render_mode
        self.observation_space = spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_ACTION, min_length=0, charset=CHARSET)
        self.session: Session | None = None
        self._trials: dict[tuple[str, int], int] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: the one ``options`` names (``scenario``, ``seed``), else one drawn from the grid."""
        super().reset(seed=seed)
        scenario, world_seed = self._pick(options or {})
        key = (scenario.id, world_seed)
        trial = self._trials.get(key, 0) if self.out is not None else 0
        self._trials[key] = trial + 1
        self.session = Session(scenario, world_seed, agent_name="gym", trial=trial, out=self.out)
        return observation_text(self.session.observation), self._info()

    def _pick(self, options: dict[str, Any]) -> tuple[Scenario, int]:
        unknown = sorted(set(options) - {"scenario", "seed"})
        if unknown:
            raise ScenarioError(f"reset(options=...): unknown key(s) {unknown!r}; allowed: ['scenario', 'seed'].")
        if not options:
            return self.grid[int(self.np_random.integers(len(self.grid)))]
        wanted = [(s, n) for s, n in self.grid
                  if options.get("scenario", s.id) == s.id and options.get("seed", n) == n]
        if not wanted:
            raise ScenarioError(f"reset(options={options!r}): no such (scenario, seed) in this environment's grid; "
                                f"it has {len(self.grid)}, e.g. {self.grid[0][0].id!r} at seed {self.grid[0][1]}.")
        return wanted[0] if len(wanted) == 1 else wanted[int(self.np_random.integers(len(wanted)))]

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply one action (JSON text, or the action itself); the Gymnasium 5-tuple."""
        session = self.session
        if session is None:
            raise RuntimeError("Call reset() before step().")
        if session.done:
            raise RuntimeError("The episode is over; call reset() to start another.")
        observation = session.step(_action(action))
        info = self._info()
        if not session.done:
            return observation_text(observation), 0.0, False, False, info
        line = session.finish()
        info["result"] = line
        truncated = line["stop_reason"] in ("max_steps", "timeout")
        return observation_text(observation), float(self.reward_fn(line)), not truncated, truncated, info

    def _info(self) -> dict[str, Any]:
        session = self.session
        assert session is not None
        return {"scenario": session.scenario.id, "seed": session.seed, "split": self.split,
                "category": session.scenario.category, "step": session.observation.step}

    def render(self) -> str | None:
        """With ``render_mode="ansi"``, the last observation as indented JSON."""
        if self.render_mode != "ansi" or self.session is None:
            return None
        return json.dumps(self.session.observation.to_json(), ensure_ascii=False, sort_keys=True, indent=2)


def _action(action: Any) -> Any:
    """An action as the environment takes it: JSON text is parsed (empty text stops), anything else passes as is."""
    if isinstance(action, bytes):
        action = action.decode("utf-8", errors="replace")
    if not isinstance(action, str):
        return action
    if not action.strip():
        return None
    try:
        return json.loads(action)
    except (ValueError, RecursionError):
        return action  # recorded as an invalid action, which the agent can read


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point="simworld._edges.gym:SimworldEnv")
