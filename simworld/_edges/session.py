"""One episode driven call by call from outside simworld: what the integrations share.

Inspect's solver loop, a Gymnasium ``step`` and a verifiers rollout each hold the loop
themselves, so none can use :func:`simworld._episode.play.play`. A :class:`Session` is the thin
layer they drive instead: an :class:`~simworld._episode.environment.Environment` (the same world, the same
simulated clock and event log as ``simworld run``), stepped with the same actions, then sealed,
graded and (with ``out``) written exactly as ``simworld run`` writes an episode, so its
episodes regrade and export like any run's.

Also here: :func:`suite_grid`, the (scenario, seed) pairs an integration offers, with the
seeds read as ``simworld run`` reads ``--seeds`` and ``--split``, and :func:`missing` for the
one-line error of an optional extra that is not installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simworld._episode.environment import Environment
from simworld._episode.episode import Episode, Observation
from simworld._episode.judge import graded_line
from simworld._running.job import finish_episode, harness_line
from simworld._running.rundir import EVENTS, RESULTS, ResultsFile
from simworld._scenario.scenario import Scenario, check_split, load_suite
from simworld._world.splits import SPLITS, parse_seeds
from simworld._world.state import canonical_bytes
from simworld.errors import MissingDependency, ScenarioError, describe_exception

__all__ = ["Session", "missing", "parse_scenarios", "parse_seed_list", "suite_grid"]


def missing(extra: str, module: str, exc: ImportError) -> MissingDependency:
    """The error for an integration whose extra is not installed, naming the command that fixes it."""
    err = MissingDependency(f"simworld.{extra} requires the optional dependency {module}. "
                            f"Install with: pip install 'simworld[{extra}]'", name=module)
    err.__cause__ = exc
    return err


def parse_seed_list(seeds: Any, option: str = "seeds") -> list[int]:
    """Seeds given as ``simworld run --seeds`` takes them (``"0..9"``, ``"3,7"``), as one int, or as a list."""
    if isinstance(seeds, bool):
        raise ScenarioError(f"{option} {seeds!r}: expected A..B, a seed, a comma list or a list of ints.")
    if isinstance(seeds, int):
        return parse_seeds(str(seeds), option)
    if isinstance(seeds, str):
        return parse_seeds(seeds, option)
    if isinstance(seeds, Sequence) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        return parse_seeds(",".join(str(s) for s in seeds), option) if seeds else []
    raise ScenarioError(f"{option} {seeds!r}: expected A..B (e.g. 0..9), a seed, a comma list (3,7,11) or a list "
                        "of ints.")


def parse_scenarios(scenario: str | Sequence[str] | None) -> list[str] | None:
    """Scenario ids given as one id, a comma list or a list; None (or empty) for the whole suite."""
    if scenario is None:
        return None
    ids = scenario.split(",") if isinstance(scenario, str) else list(scenario)
    ids = [str(i).strip() for i in ids if str(i).strip()]
    return ids or None


def suite_grid(scenario: str | Sequence[str] | None = None, seeds: Any = 0, split: str = "dev",
               suite: str | Path | None = None) -> list[tuple[Scenario, int]]:
    """The (scenario, seed as run) pairs for these arguments, in ``simworld run``'s order (scenario, then seed).

    With ``split="holdout"`` seed N is each scenario's N-th reserved holdout seed, as in ``simworld run``; a
    holdout instance among the scenarios is refused in any other split
    (:func:`simworld._scenario.scenario.check_split`).
    """
    if split not in SPLITS:
        raise ScenarioError(f"split {split!r} is unknown; use one of {', '.join(SPLITS)}.")
    scenarios = load_suite(Path(suite) if suite is not None else None, parse_scenarios(scenario))
    seed_list = parse_seed_list(seeds)
    if not seed_list:
        raise ScenarioError("seeds [] names no seed; give at least one, e.g. 0..9.")
    check_split(scenarios, split)
    return [(s, s.run_seed(n, split)) for s in scenarios for n in seed_list]


class Session:
    """One episode of ``scenario`` at ``seed`` stepped by a foreign loop, then graded as ``simworld run`` grades it.

    ``step(action)`` takes the actions an agent returns (``{"tool": NAME, "args": {...}}``, optionally with
    ``"usage"``; None or ``{"stop": true}`` to stop). ``finish()`` ends the episode if it has not ended
    (``agent_stopped``), seals and grades it, runs the scenario's post-run hooks and, with ``out``, writes its
    event file and appends its result line to ``out/results.jsonl``; it returns the result line, the same
    fields ``simworld run`` writes. A grader or harness failure is the line's ``harness_error``, never a pass.
    """

    def __init__(self, scenario: Scenario, seed: int, *, agent_name: str, trial: int = 0,
                 out: str | Path | None = None) -> None:
        self.scenario = scenario
        self.seed = seed
        self.trial = trial
        self.out = Path(out) if out is not None else None
        self.env = Environment(scenario, seed, agent_name=agent_name)
        #: The latest observation (the first one after construction).
        self.observation: Observation = self.env.reset()
        self.episode: Episode | None = None
        self.result: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        """Whether the episode has ended (a terminal tool, a stop, the step or time budget)."""
        return self.env.done

    def step(self, action: Any) -> Observation:
        """Apply one action; the next observation (``resumed`` after a crash: a fresh agent takes over)."""
        self.observation, _ = self.env.step(action)
        return self.observation

    def finish(self) -> dict[str, Any]:
        """End (if need be), seal, grade and record the episode; its result line. Idempotent."""
        if self.result is not None:
            return self.result
        if not self.env.done:
            self.env.step(None)
        scenario, seed, trial = self.scenario, self.seed, self.trial
        episode = self.episode = self.env.episode()
        try:
            line = graded_line(scenario, episode, trial=trial)
        except Exception as exc:  # a harness bug, or ground truth that does not play at this seed
            line = harness_line(scenario.id, seed, trial, episode.agent, episode,
                                "while grading: " + describe_exception(exc, frames=True), category=scenario.category)
        if self.out is not None:
            (self.out / EVENTS).mkdir(parents=True, exist_ok=True)
        finish_episode(scenario, episode, line, self.out, trial)
        if self.out is not None:
            with ResultsFile(self.out / RESULTS) as results:
                results.append(canonical_bytes(line) + b"\n")
        self.result = line
        return line
