"""The environment users drive themselves: a Stepper that can also grade the episode it played.

``make(scenario, seed)`` gives one. ``reset()`` gives the first observation;
``step(action)`` applies one action and gives the next observation and whether the
episode is over; ``episode()`` seals it; ``grade()`` grades it. The same world and
event log as ``simworld run``.
"""

from __future__ import annotations

from typing import Any

from simworld._episode.episode import Stepper
from simworld._episode.judge import graded_line
from simworld._scenario.scenario import Scenario
from simworld._world.clock import TimeGuard
from simworld._world.splits import HOLDOUT_BASE, is_holdout
from simworld.errors import ScenarioError

__all__ = ["Environment"]


class Environment(Stepper):
    """One scenario at one seed, stepped by the caller (RL loops, notebooks) or by the runner, then graded.

    ``reset()`` gives the first observation; ``step(action)`` applies one action and
    gives the next observation and whether the episode is over; ``episode()`` seals
    it. The same world and event log as ``simworld run``.

    A holdout instance (``scenario.split == "holdout"``) is refused at a dev seed: it runs only at holdout seeds
    (:meth:`~simworld._scenario.scenario.Scenario.run_seed` with ``split="holdout"``), so every episode of one is
    a holdout episode by its seed, which is how ``simworld export`` keeps it out of training data.
    """

    def __init__(self, scenario: Scenario, seed: int, *, agent_name: str = "user", guard: TimeGuard | None = None):
        if scenario.split == "holdout" and not is_holdout(seed):
            raise ScenarioError(f"scenario {scenario.id!r} is a holdout instance (task.json \"split\": \"holdout\") "
                                f"and runs only at holdout seeds (from {HOLDOUT_BASE}), not at seed {seed}; ask for "
                                "the holdout split (--split holdout, or split='holdout' from Python).")
        super().__init__(scenario, seed, agent_name=agent_name, guard=guard)

    def grade(self) -> dict[str, Any]:
        """Grade the sealed episode with the scenario's graders; the same result fields as ``simworld run``."""
        return graded_line(self.scenario, self.episode())
