"""What each reward pays each kind of agent: do rewards pay for doing nothing?

Run from the repository root:

    python benchmarks/bench_rewards.py [--seeds 0..9] [--out benchmarks/results/rewards.json]

Plays the bundled suite at the seeds for the agents that bound the reward from below (``noop``:
stops at once; ``random``: seeded random calls and a random terminal tool), the one that bounds
it from above (``reference``) and every ``drift:KIND`` (the reference with one drifting
computation), and ``finish-at-once`` (claims success before any call), grades every episode
as ``simworld run`` does, and scores each result line with every named reward of the Gymnasium
and verifiers environments (:mod:`simworld._grading.rewards`), and with ``parts_ungated``, the
mean of every part as ``parts`` was before it was gated. Prints one table, the mean reward per
agent and reward, and writes the same figures as JSON (with the pass count and the episodes
behind each mean).
Every figure is deterministic: the same seeds give the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simworld._agents.drift import DRIFTS  # noqa: E402
from simworld._agents.kinds import build_agent_factory  # noqa: E402
from simworld._episode.environment import Environment  # noqa: E402
from simworld._episode.episode import Observation  # noqa: E402
from simworld._episode.judge import graded_line  # noqa: E402
from simworld._episode.play import AgentFactory, play  # noqa: E402
from simworld._grading.rewards import REWARDS  # noqa: E402
from simworld._scenario.scenario import load_suite  # noqa: E402
from simworld._world.splits import parse_seeds  # noqa: E402

#: The agents measured, floor first (``finish-at-once`` claims success without a call: the policy a reward that
#: pays for untouched parts teaches).
AGENTS = ("noop", "random", "finish-at-once", "reference", *(f"drift:{d}" for d in DRIFTS))


class FinishAtOnce:
    """Ends every episode with ``finish`` before any other call."""

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """Finish, saying it is done."""
        return {"tool": "finish", "args": {"summary": "Done."}}


def ungated_parts(line: dict[str, Any]) -> float:
    """What ``parts`` was before it was gated: the mean of every part, gates included, whatever the outcome."""
    parts = line["parts"]
    return sum(parts.values()) / len(parts) if parts else 0.0


def _factory(agent: str) -> AgentFactory:
    if agent == "finish-at-once":
        return lambda scenario, seed, variables: FinishAtOnce()
    return build_agent_factory(agent)


def measure(seeds: list[int], agents: tuple[str, ...] = AGENTS) -> dict[str, dict[str, float | int]]:
    """Mean of every named reward per agent over the bundled suite at ``seeds``, with ``passed_episodes`` and
    ``episodes``."""
    scenarios = load_suite(None, None)
    figures: dict[str, dict[str, float | int]] = {}
    for agent in agents:
        factory = _factory(agent)
        sums = dict.fromkeys(REWARDS, 0.0)
        ungated = 0.0
        passed = episodes = 0
        for scenario in scenarios:
            for seed in seeds:
                line = graded_line(scenario, play(Environment(scenario, seed, agent_name=agent), factory))
                for name, fn in REWARDS.items():
                    sums[name] += fn(line)
                ungated += ungated_parts(line)
                passed += bool(line["passed"])
                episodes += 1
        figures[agent] = {**{name: round(s / episodes, 4) for name, s in sums.items()},
                          "parts_ungated": round(ungated / episodes, 4), "passed_episodes": passed,
                          "episodes": episodes}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0..9", help="seeds as simworld run --seeds reads them")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rewards.json"))
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds, "--seeds")
    figures = measure(seeds)
    print(f"mean reward over the bundled suite x seeds {args.seeds} "
          f"({next(iter(figures.values()))['episodes']} episodes per agent)")
    columns = (*REWARDS, "parts_ungated")
    print(f"{'agent':<18}" + "".join(f"{name:>14}" for name in columns) + f"{'passed':>8}")
    for agent, row in figures.items():
        print(f"{agent:<18}" + "".join(f"{row[name]:>14.4f}" for name in columns) + f"{row['passed_episodes']:>8}")
    report = {"command": f"python benchmarks/bench_rewards.py --seeds {args.seeds}", "suite": "bundled",
              "seeds": args.seeds, "rewards": list(REWARDS), "agents": figures}
    Path(args.out).write_text(json.dumps(report, indent=1, sort_keys=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
