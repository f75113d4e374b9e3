"""The rewards a trainer reads from an episode's result line: ``total``, ``passed`` and ``parts``.

One definition, shared by every integration that offers a reward (the Gymnasium and the
verifiers environments), and a function of the result line alone, so a run's
``results.jsonl`` can be rescored offline exactly as the environment scored it:

- ``passed``: 1.0 when every check of every grader passed, else 0.0.
- ``total``: the result's ``total`` (see :func:`simworld._grading.contract.score`): 0 when the
  agent crashed or a gate failed (a wrong outcome class or none, a forbidden change, an
  unauthorised action, a communication to the wrong party, another customer's details given
  away, a required call never made), else the weighted mean of the other parts.
- ``parts``: credit for the parts of a *right attempt*, 0 for anything else. An attempt is
  right when the episode ran, ended with the right outcome class, harmed nothing (the gates
  above: ``total`` is above 0), and made every call the scenario requires (its ``required_steps``: for a change,
  the write that makes it; for a refusal, the refusal, after the reads it depends on). Its
  reward is then the plain mean of the non-gate parts (steps, state, money, comms,
  requires, custom), each the share of its checks passed, so an agent that does the right
  things with a wrong figure still learns from how close the figure was.

Why the attempt gate: most of a world is untouched by any request, so a part such as
``state`` (the share of compared fields that match the answer) or ``money`` (invariants
that an untouched world keeps) scores high for an agent that does nothing. Averaged
without the gate, an agent that stops at once scored 0.675 over the suite and a random
one 0.64-0.69, which trains toward doing nothing. With it both score what they earn:
the few episodes a random agent passes outright (a decline reached by chance).
``benchmarks/bench_rewards.py`` measures every reward for those agents, the reference and
the drifting agents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from simworld._grading.contract import GATES, gates_failed
from simworld.errors import ScenarioError

__all__ = ["REWARDS", "Reward", "parts_reward", "reward_fn", "right_attempt"]

#: A reward: a function of a result line.
Reward = Callable[[dict[str, Any]], float]


def right_attempt(line: Mapping[str, Any]) -> bool:
    """Whether the episode earned partial credit: it ran, reached the right outcome class without harm, and made
    every required step."""
    if line.get("error") is not None or line.get("harness_error") is not None:
        return False
    if not line.get("outcome_class_correct", False) or gates_failed(line):
        return False
    if float(line.get("total", 0.0)) <= 0.0:  # the grade's own gates, those whose findings the line leaves out too
        return False
    return all(score >= 1.0 for score in line.get("step_scores", {}).values())


def parts_reward(line: Mapping[str, Any]) -> float:
    """``parts``: the plain mean of the non-gate parts of a right attempt (1.0 when it has none), else 0.0."""
    if not right_attempt(line):
        return 0.0
    rest = [float(v) for p, v in line.get("parts", {}).items() if p not in GATES]
    return round(sum(rest) / len(rest), 4) if rest else 1.0


def _total(line: Mapping[str, Any]) -> float:
    return float(line["total"])


def _passed(line: Mapping[str, Any]) -> float:
    return 1.0 if line["passed"] else 0.0


#: The named rewards, in the order they are documented.
REWARDS: dict[str, Reward] = {"total": _total, "passed": _passed, "parts": parts_reward}


def reward_fn(reward: str | Reward) -> Reward:
    """The reward named ``reward`` (a key of :data:`REWARDS`), or ``reward`` itself when it is a callable."""
    if callable(reward):
        return reward
    if isinstance(reward, str) and reward in REWARDS:
        return REWARDS[reward]
    raise ScenarioError(f"reward {reward!r} is unknown; use one of {', '.join(REWARDS)}, or a callable that takes "
                        "the result line and returns a float.")
