"""simworld: a deterministic simulated billing world for evaluating and training agents.

The public API; everything in ``_``-prefixed or unlisted modules is internal. Names are
imported on first use, so ``import simworld`` (and ``simworld --help``) stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Where each public name lives.
_HOME = {
    **dict.fromkeys(("Agent", "NoopAgent", "RandomAgent", "StepsAgent", "build_agent_factory"), "simworld.agents"),
    **dict.fromkeys(("SimClock", "TimeGuard"), "simworld.clock"),
    **dict.fromkeys(("COUNTERS", "Environment", "Episode", "Observation"), "simworld.episode"),
    **dict.fromkeys(("AgentSpecError", "DateError", "MoneyError", "PolicyDenied", "ReplayError", "ScenarioError",
                     "SimworldError", "SnapshotError", "ToolArgumentError", "ToolError"), "simworld.errors"),
    **dict.fromkeys(("Money", "allocate", "allocate_ratios"), "simworld.money"),
    **dict.fromkeys(("run_one", "run_suite"), "simworld.runner"),
    **dict.fromkeys(("Scenario", "load_scenario", "load_suite"), "simworld.scenario"),
    **dict.fromkeys(("OUTCOMES", "TOOLS", "Kind", "tool"), "simworld.tools"),
    **dict.fromkeys(("Check", "Verdict"), "simworld.verdict"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'simworld' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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


def make(scenario: str | Scenario, seed: int | None = None, *, world: Mapping[str, Any] | None = None) \
        -> Environment:
    """An environment for a scenario (an id from the bundled suite, or a loaded Scenario) at ``seed`` (default 0).

    ``world`` pins explicit world parameters instead (``{"year_shift": 0, "currency": "USD", ...}``,
    as ``simworld probe`` writes them; see :mod:`simworld.perturb`); the environment's seed is
    then ``seed`` if that seed gives exactly this world, else a number derived from the parameters.

    >>> env = make("split-balance-three-ways", seed=3)
    >>> obs = env.reset()
    """
    from simworld.episode import Environment
    from simworld.scenario import load_suite

    if isinstance(scenario, str):
        (scenario,) = load_suite(None, [scenario])
    if world is not None:
        scenario = scenario.at_world(world)
        return Environment(scenario, scenario.world_seed(seed))
    return Environment(scenario, 0 if seed is None else seed)
