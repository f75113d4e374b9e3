"""simworld: a deterministic simulated billing world for evaluating and training agents.

The public API is what this module exports (below) and the module paths in
:data:`MODULES`, which the Python API reference documents; everything under an ``_``-prefixed folder is
the house behind them, free to change. Names are imported on first use, so
``import simworld`` (and ``simworld --help``) stays light.

The house is one folder per stage of an episode's data flow; a stage imports only the
stages before it (``tests/test_layout.py`` holds the order):

- ``errors.py``: every error simworld raises;
- ``_world/``: money, dates, the clock, records, state, snapshots, policy, perturbation,
  the tools, and the World they act on;
- ``_grading/``: the grader contract (Check, Verdict), projections, invariants;
- ``graders/`` (beside this package): the built-in graders;
- ``_scenario/``: a scenario directory loaded and checked;
- ``_episode/``: one episode stepped, played by an agent, replayed, graded;
- ``_agents/``: every agent kind ``--agent`` can name;
- ``_running/``: many episodes: the runner, executors, run directories, check, probe;
- ``_families/``: generated task families;
- ``_edges/``: the command line, serve, export, report, and the integrations.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simworld._agents.kinds import NoopAgent, RandomAgent, build_agent_factory
    from simworld._episode.environment import Environment
    from simworld._episode.episode import Episode, Observation
    from simworld._episode.play import Agent
    from simworld._episode.steps import StepsAgent
    from simworld._grading.verdict import Check, Verdict
    from simworld._running.runner import run_one, run_suite
    from simworld._scenario.scenario import Scenario, load_scenario, load_suite
    from simworld._world.clock import SimClock, TimeGuard
    from simworld._world.money import Money, allocate, allocate_ratios
    from simworld._world.tools import OUTCOMES, TOOLS, Kind, tool
    from simworld._world.vocab import COUNTERS
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

#: Where each public name lives.
_HOME = {
    **dict.fromkeys(("NoopAgent", "RandomAgent", "build_agent_factory"), "simworld._agents.kinds"),
    "Agent": "simworld._episode.play",
    "StepsAgent": "simworld._episode.steps",
    **dict.fromkeys(("SimClock", "TimeGuard"), "simworld._world.clock"),
    "COUNTERS": "simworld._world.vocab",
    "Environment": "simworld._episode.environment",
    **dict.fromkeys(("Episode", "Observation"), "simworld._episode.episode"),
    **dict.fromkeys(("AgentSpecError", "DateError", "MoneyError", "PolicyDenied", "ReplayError", "ScenarioError",
                     "SimworldError", "SnapshotError", "ToolArgumentError", "ToolError"), "simworld.errors"),
    **dict.fromkeys(("Money", "allocate", "allocate_ratios"), "simworld._world.money"),
    **dict.fromkeys(("run_one", "run_suite"), "simworld._running.runner"),
    **dict.fromkeys(("Scenario", "load_scenario", "load_suite"), "simworld._scenario.scenario"),
    **dict.fromkeys(("OUTCOMES", "TOOLS", "Kind", "tool"), "simworld._world.tools"),
    **dict.fromkeys(("Check", "Verdict"), "simworld._grading.verdict"),
}

#: The public module paths (the Python API reference documents them), each served by the module(s) that hold its
#: names; a path served by several answers each name from the first that has it. They are also every module
#: path of the flat layout before the stages had folders, so code written against it imports unchanged.
MODULES: Mapping[str, Sequence[str]] = {
    "simworld.actions": ("simworld._world.actions",),
    "simworld.agents": ("simworld._agents.kinds", "simworld._episode.play", "simworld._episode.steps"),
    "simworld.chat": ("simworld._agents.chat",),
    "simworld.check": ("simworld._running.check",),
    "simworld.cli": ("simworld._edges.cli",),
    "simworld.clock": ("simworld._world.clock",),
    "simworld.dates": ("simworld._world.dates",),
    "simworld.deadline": ("simworld._episode.deadline",),
    "simworld.drift": ("simworld._agents.drift",),
    "simworld.endstates": ("simworld._episode.endstates",),
    "simworld.episode": ("simworld._episode.episode", "simworld._episode.environment", "simworld._world.vocab"),
    "simworld.events": ("simworld._world.events",),
    "simworld.executors": ("simworld._running.executors",),
    "simworld.expectations": ("simworld._scenario.expectations",),
    "simworld.export": ("simworld._edges.export",),
    "simworld.families": ("simworld._families",),
    "simworld.generate": ("simworld._world.generate",),
    "simworld.grading": ("simworld._grading.contract",),
    "simworld.gym": ("simworld._edges.gym",),
    "simworld.inspect": ("simworld._edges.inspect",),
    "simworld.invariants": ("simworld._grading.invariants",),
    "simworld.llm": ("simworld._agents.llm",),
    "simworld.mcp_http": ("simworld._edges.serve_http",),
    "simworld.mcp_server": ("simworld._edges.serve",),
    "simworld.models": ("simworld._world.models",),
    "simworld.money": ("simworld._world.money",),
    "simworld.perturb": ("simworld._world.perturb",),
    "simworld.policy": ("simworld._world.policy",),
    "simworld.premium": ("simworld._world.premium",),
    "simworld.probe": ("simworld._running.probe",),
    "simworld.projection": ("simworld._grading.projection",),
    "simworld.replay": ("simworld._episode.replay",),
    "simworld.report": ("simworld._edges.report",),
    "simworld.report_html": ("simworld._edges.report_html",),
    "simworld.rundir": ("simworld._running.rundir",),
    "simworld.runner": ("simworld._running.runner", "simworld._running.job", "simworld._episode.judge",
                        "simworld._episode.play"),
    "simworld.scenario": ("simworld._scenario.scenario",),
    "simworld.schemacheck": ("simworld._scenario.schemacheck",),
    "simworld.session": ("simworld._edges.session",),
    "simworld.show": ("simworld._edges.show",),
    "simworld.snapshot": ("simworld._world.snapshot",),
    "simworld.splits": ("simworld._world.splits",),
    "simworld.state": ("simworld._world.state",),
    "simworld.strategies": ("simworld._running.strategies",),
    "simworld.subprocess_agent": ("simworld._agents.process",),
    "simworld.templates": ("simworld._world.templates",),
    "simworld.tools": ("simworld._world.tools",),
    "simworld.verdict": ("simworld._grading.verdict",),
    "simworld.verifiers": ("simworld._edges.verifiers",),
    "simworld.vocab": ("simworld._world.vocab",),
    "simworld.world": ("simworld._world.world",),
}


class _Served:
    """Imports a public module path as the module of the house that serves it (the same object, when one does).

    A finder and loader on ``sys.meta_path`` (by protocol: ``importlib.abc`` costs an --help 40 ms to import)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if fullname in MODULES else None  # type: ignore[arg-type]

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        homes = MODULES[spec.name]
        if len(homes) == 1:
            return importlib.import_module(homes[0])
        module = types.ModuleType(spec.name, f"Names of {', '.join(homes)}.")

        def __getattr__(name: str) -> Any:
            for home in homes:
                value = getattr(importlib.import_module(home), name, _MISSING)
                if value is not _MISSING:
                    return value
            raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module is the house's own."""


_MISSING = object()
if not any(isinstance(f, _Served) for f in sys.meta_path):
    sys.meta_path.append(_Served())


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
    "MODULES",
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


def make(scenario: str | Scenario, seed: int | None = None, *, world: Mapping[str, Any] | None = None,
         split: str = "dev") -> Environment:
    """An environment for a scenario (an id from the bundled suite, or a loaded Scenario) at ``seed`` (default 0).

    ``split`` reads the seed as ``simworld run --split`` does: in ``dev`` (the default) it is used as given, and
    a seed in the holdout range, a negative seed and a holdout instance (a scenario whose task.json says
    ``"split": "holdout"``) are refused; in ``holdout`` seed N is the scenario's N-th reserved holdout seed.

    ``world`` pins explicit world parameters instead (``{"year_shift": 0, "currency": "USD", ...}``,
    as ``simworld probe`` writes them; see :mod:`simworld.perturb`); the environment's seed is
    then ``seed`` if that seed gives exactly this world, else a number derived from the parameters.
    A pinned world is a dev world: ``world`` is refused with ``split="holdout"`` and for a holdout instance.

    >>> env = make("split-balance-three-ways", seed=3)
    >>> obs = env.reset()

    Raises:
        ScenarioError: an unknown scenario or split, or a seed or scenario the split refuses (one line naming
            the argument and the fix).
    """
    from simworld._episode.environment import Environment
    from simworld._scenario.scenario import check_split, load_suite
    from simworld._world.splits import check_seed
    from simworld.errors import ScenarioError

    if isinstance(scenario, str):
        (scenario,) = load_suite(None, [scenario])
    if world is not None:
        if split != "dev":
            raise ScenarioError(f"make(world=..., split={split!r}): a pinned world is a dev world; drop split, or "
                                "drop world and give a holdout seed index.")
        check_split([scenario], split)
        scenario = scenario.at_world(world)
        return Environment(scenario, scenario.world_seed(seed))
    seed = 0 if seed is None else seed
    check_seed(seed, split, "seed")
    return Environment(scenario, scenario.run_seed(seed, split))
