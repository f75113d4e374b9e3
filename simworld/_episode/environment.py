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

__all__ = ["Environment"]


class Environment(Stepper):
    """One scenario at one seed, stepped by the caller (RL loops, notebooks) or by the runner, then graded.

    ``reset()`` gives the first observation; ``step(action)`` applies one action and
    gives the next observation and whether the episode is over; ``episode()`` seals
    it. The same world and event log as ``simworld run``.
    """

    def grade(self) -> dict[str, Any]:
        """Grade the sealed episode with the scenario's graders; the same result fields as ``simworld run``."""
        return graded_line(self.scenario, self.episode())
