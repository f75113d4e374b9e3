"""The Gymnasium environment: JSON text in and out, a sparse final reward, simworld run's world and grade."""

from __future__ import annotations

import json
import warnings
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from helpers import readme_example

from simworld._agents.drift import DRIFTS
from simworld._agents.kinds import build_agent_factory
from simworld._edges.gym import ENV_ID, REWARDS, SimworldEnv
from simworld._episode.episode import Observation
from simworld._episode.steps import StepsAgent
from simworld._grading.rewards import parts_reward, right_attempt
from simworld._running.runner import run_one
from simworld.errors import ScenarioError


def observation(text: str) -> Observation:
    """An observation text back as simworld's Observation (what a simworld agent reads)."""
    data = json.loads(text)
    return Observation(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def play(env: SimworldEnv, agent: Any, **reset: Any) -> tuple[list[float], bool, bool, dict[str, Any]]:
    """Drive ``agent`` (act(observation) -> action) through one episode; the rewards and the last flags and info."""
    obs, info = env.reset(**reset)
    rewards: list[float] = []
    while True:
        action = agent(env, observation(obs))
        obs, reward, terminated, truncated, info = env.step(json.dumps(action))
        rewards.append(reward)
        if terminated or truncated:
            return rewards, terminated, truncated, info


def reference(env: SimworldEnv, obs: Observation) -> dict[str, Any] | None:
    session = env.session
    assert session is not None
    agent = getattr(session, "_test_agent", None)
    if agent is None:
        agent = StepsAgent(session.scenario.solutions[0], dict(session.env.variables), session.scenario.id)
        session._test_agent = agent  # type: ignore[attr-defined]
    return agent.act(obs)


def noop(env: SimworldEnv, obs: Observation) -> None:
    return None


class TestChecker:
    def test_gymnasium_env_checker(self) -> None:
        """Gymnasium's own checker passes (spaces, reset determinism, step determinism, render), made through the
        registry."""
        env = gymnasium.make(ENV_ID, scenario="waive-small-fee", seeds="0..3", render_mode="ansi")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*render fps.*")
            check_env(env.unwrapped)
        env.close()

    def test_observations_lie_in_the_observation_space(self) -> None:
        """Every observation of a reference episode, crash included, is in the observation space."""
        env = SimworldEnv(scenario="recover-payment-after-crash", seeds=0)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        session = env.session
        assert session is not None
        agent = StepsAgent(session.scenario.solutions[0], dict(session.env.variables), "x")
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(json.dumps(agent.act(observation(obs))))
            assert env.observation_space.contains(obs)
            done = terminated or truncated


class TestEpisodes:
    @pytest.mark.parametrize("reward", ["total", "passed", "parts"])
    def test_reference_gets_reward_one_over_the_suite(self, reward: str) -> None:
        """The reference solution, played through step(), passes every scenario at seeds 0 and 1: reward 1 at the
        end, 0 before, terminated."""
        env = SimworldEnv(seeds="0..1", reward=reward)
        for scenario, seed in env.grid:
            rewards, terminated, truncated, info = play(env, reference, options={"scenario": scenario.id,
                                                                                 "seed": seed})
            assert (terminated, truncated) == (True, False), scenario.id
            assert rewards[-1] == 1.0 and set(rewards[:-1]) <= {0.0}, (scenario.id, rewards)
            assert info["result"]["passed"] is True
            assert info["category"] == scenario.category == info["result"]["category"]

    def test_noop_fails_every_scenario(self) -> None:
        """An agent that stops at once scores 0 on passed, and its final info carries the failing grade."""
        env = SimworldEnv(seeds="0..1", reward="passed")
        for scenario, seed in env.grid:
            rewards, terminated, truncated, info = play(env, noop, options={"scenario": scenario.id, "seed": seed})
            assert rewards == [0.0] and terminated and not truncated
            assert info["result"]["passed"] is False and info["result"]["stop_reason"] == "agent_stopped"

    def test_truncated_at_max_steps(self) -> None:
        """An agent that never ends is truncated at the scenario's max_steps; the final info has the result."""
        env = SimworldEnv(scenario="waive-small-fee", seeds=0)
        env.reset(seed=0)
        session = env.session
        assert session is not None
        budget = session.scenario.max_steps
        action = json.dumps({"tool": "find_customer", "args": {"query": "cus_001"}})
        for step in range(1, budget + 1):
            _, reward, terminated, truncated, info = env.step(action)
            if step < budget:
                assert (reward, terminated, truncated) == (0.0, False, False)
        assert (terminated, truncated) == (False, True)
        assert info["result"]["stop_reason"] == "max_steps" and info["result"]["counters"]["steps"] == budget
        with pytest.raises(RuntimeError, match="reset"):
            env.step(action)

    def test_same_result_as_simworld_run(self) -> None:
        """An episode played through the environment grades byte for byte as simworld run grades the same calls."""
        env = SimworldEnv(scenario="split-yen-seven-ways", seeds=3)
        *_, info = play(env, reference, seed=0)
        scenario = env.grid[0][0]

        def agent() -> StepsAgent:
            from simworld._episode.environment import Environment

            e = Environment(scenario, 3)
            e.reset()
            return StepsAgent(scenario.solutions[0], dict(e.variables), scenario.id)

        _, line = run_one(scenario, 3, agent)
        ours = dict(info["result"])
        assert ours.pop("agent") == "gym" and ours.pop("hook_errors") == []
        assert ours == {k: v for k, v in line.items() if k != "agent"}

    def test_not_json_is_an_invalid_action_the_agent_reads(self) -> None:
        """Text that is not JSON is recorded as an invalid action and the episode goes on."""
        env = SimworldEnv(scenario="waive-small-fee", seeds=0)
        env.reset(seed=0)
        obs, reward, terminated, truncated, _ = env.step("list the fees please")
        data = json.loads(obs)
        assert data["last_status"] == "error" and not terminated and not truncated and reward == 0.0


def spec_agent(spec: str) -> Any:
    """An ``--agent SPEC`` agent (noop, random, reference, drift:KIND) as ``play`` drives one, fresh per episode."""
    factory = build_agent_factory(spec)

    def act(env: SimworldEnv, obs: Observation) -> Any:
        session = env.session
        assert session is not None
        agent = getattr(session, "_test_agent", None)
        if agent is None:
            agent = factory(session.scenario, session.seed, dict(session.env.variables))
            session._test_agent = agent  # type: ignore[attr-defined]
        return agent.act(obs)

    return act


def mean_reward(spec: str, reward: str, seeds: str = "0..2") -> float:
    """The mean final reward of ``spec``'s agent over the bundled suite at ``seeds``, played through step()."""
    env = SimworldEnv(seeds=seeds, reward=reward)
    agent = spec_agent(spec)
    finals = [play(env, agent, options={"scenario": s.id, "seed": n})[0][-1] for s, n in env.grid]
    return sum(finals) / len(finals)


class TestRewards:
    @pytest.mark.parametrize("reward", ["parts", "passed"])
    def test_doing_nothing_or_acting_at_random_earns_almost_nothing(self, reward: str) -> None:
        """Over the suite at seeds 0..2, an agent that stops at once and a random agent average at most 0.05."""
        assert mean_reward("noop", reward) == 0.0
        assert mean_reward("random", reward) <= 0.05

    def test_parts_ranks_reference_over_drift_over_random(self) -> None:
        """parts keeps the ranking it exists to teach: the reference above every drifting agent, each of them
        far above a random agent (at least ten times its mean)."""
        reference = mean_reward("reference", "parts")
        random = mean_reward("random", "parts")
        assert reference == 1.0
        for kind in DRIFTS:
            drift = mean_reward(f"drift:{kind}", "parts")
            assert random * 10 < drift < reference, (kind, random, drift, reference)

    def test_parts_is_zero_without_a_right_attempt(self) -> None:
        """A wrong outcome class, a failed gate, a missed required step or a crash scores 0, whatever else went
        right; a right attempt scores the plain mean of its non-gate parts."""
        attempt: dict[str, Any] = {
                   "passed": False, "total": 0.9, "outcome_class_correct": True, "error": None, "harness_error": None,
                   "forbidden_changes": [], "unauthorised_actions": [], "wrong_recipients": [],
                   "step_scores": {"read": 1.0, "write": 1.0, "done": 1.0},
                   "parts": {"outcome": 1.0, "forbidden": 1.0, "state": 0.8, "steps": 1.0, "money": 0.6}}
        assert right_attempt(attempt) and parts_reward(attempt) == 0.8
        for change in ({"outcome_class_correct": False}, {"forbidden_changes": ["plans/p1"]},
                       {"unauthorised_actions": [{"tool": "waive_fee"}]}, {"wrong_recipients": [{"record": "m"}]},
                       {"step_scores": {"read": 1.0, "write": 0.0, "done": 1.0}}, {"error": "boom"},
                       {"total": 0.0}):
            assert parts_reward({**attempt, **change}) == 0.0, change

    def test_named_rewards(self) -> None:
        """The environment offers exactly the shared named rewards."""
        assert REWARDS == ("total", "passed", "parts")


class TestReadme:
    def test_readme_example_runs(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The README's Gymnasium example runs as written."""
        exec(readme_example("# gym_example.py"), {})
        assert capsys.readouterr().out.splitlines()[-1] == "0.0 True False fees"


class TestSeeding:
    def test_reset_seed_is_deterministic(self) -> None:
        """reset(seed=S) picks the same (scenario, seed) and gives byte-identical observations, in any instance."""
        a, b = SimworldEnv(seeds="0..9"), SimworldEnv(seeds="0..9")
        for s in range(5):
            obs_a, info_a = a.reset(seed=s)
            obs_b, info_b = b.reset(seed=s)
            assert (obs_a, info_a) == (obs_b, info_b)
        picks = {(a.reset(seed=s)[1]["scenario"], a.reset(seed=s)[1]["seed"]) for s in range(40)}
        assert len(picks) > 10  # seeds spread over the grid

    def test_options_name_the_episode(self) -> None:
        """options={"scenario", "seed"} starts exactly that episode; one outside the grid is refused."""
        env = SimworldEnv(scenario="waive-small-fee,split-yen-seven-ways", seeds="0..2")
        _, info = env.reset(options={"scenario": "split-yen-seven-ways", "seed": 2})
        assert (info["scenario"], info["seed"]) == ("split-yen-seven-ways", 2)
        with pytest.raises(ScenarioError, match="no such"):
            env.reset(options={"scenario": "waive-small-fee", "seed": 9})
        with pytest.raises(ScenarioError, match="unknown key"):
            env.reset(options={"world": 1})

    def test_unknown_reward(self) -> None:
        """An unknown reward names the allowed ones."""
        with pytest.raises(ScenarioError, match="total, passed, parts"):
            SimworldEnv(reward="score")
