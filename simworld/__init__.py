"""simworld: a deterministic simulated billing world for evaluating and training agents.

The public API; everything in ``_``-prefixed or unlisted modules is internal.
"""

from collections.abc import Mapping
from typing import Any

from simworld.agents import Agent, NoopAgent, RandomAgent, StepsAgent, build_agent_factory
from simworld.clock import SimClock, TimeGuard
from simworld.episode import COUNTERS, Environment, Episode, Observation
from simworld.errors import (
    AgentSpecError,
    DateError,
    MoneyError,
    PolicyDenied,
    ReplayError,
    ScenarioError,
    SimworldError,
    SnapshotError,
    ToolArgumentError,
    ToolError,
)
from simworld.money import Money, allocate, allocate_ratios
from simworld.runner import run_one, run_suite
from simworld.scenario import Scenario, load_scenario, load_suite
from simworld.tools import OUTCOMES, TOOLS, Kind, tool
from simworld.verdict import Check, Verdict

__all__ = [
    "COUNTERS",
    "OUTCOMES",
    "TOOLS",
    "Agent",
    "AgentSpecError",
    "Check",
    "DateError",
    "Environment",
    "Episode",
    "Kind",
    "Money",
    "MoneyError",
    "NoopAgent",
    "Observation",
    "PolicyDenied",
    "RandomAgent",
    "ReplayError",
    "Scenario",
    "ScenarioError",
    "SimClock",
    "SimworldError",
    "SnapshotError",
    "StepsAgent",
    "TimeGuard",
    "ToolArgumentError",
    "ToolError",
    "Verdict",
    "allocate",
    "allocate_ratios",
    "build_agent_factory",
    "load_scenario",
    "load_suite",
    "make",
    "run_one",
    "run_suite",
    "tool",
]


def make(scenario: "str | Scenario", seed: int | None = None, *, world: "Mapping[str, Any] | None" = None) \
        -> Environment:
    """An environment for a scenario (an id from the bundled suite, or a loaded Scenario) at ``seed`` (default 0).

    ``world`` pins explicit world parameters instead (``{"year_shift": 0, "currency": "USD", ...}``,
    as ``simworld probe`` writes them; see :mod:`simworld.perturb`); the environment's seed is
    then ``seed`` if that seed gives exactly this world, else a number derived from the parameters.

    >>> env = make("split-balance-three-ways", seed=3)
    >>> obs = env.reset()
    """
    if isinstance(scenario, str):
        (scenario,) = load_suite(None, [scenario])
    if world is not None:
        scenario = scenario.at_world(world)
        return Environment(scenario, scenario.world_seed(seed))
    return Environment(scenario, 0 if seed is None else seed)
