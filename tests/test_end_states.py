"""Solutions' end states are played when a grader first reads them: an episode grades exactly as if every
solution had been played first, and only the solutions the end-state grader reached are played."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from simworld import endstates
from simworld._agents.kinds import build_agent_factory
from simworld._episode import judge
from simworld._episode.environment import Environment
from simworld._episode.judge import SolutionEndStates, _play_solutions, graded_line, solution_end_states
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._scenario.scenario import Scenario, load_suite
from simworld._world.clock import TimeGuard
from simworld.errors import BrokenSolutionError

SUITE = load_suite()
BY_ID = {s.id: s for s in SUITE}


@pytest.fixture
def no_disk() -> Iterator[None]:
    endstates.set_disk_cache(False)
    endstates.clear_process_cache()
    yield
    endstates.set_disk_cache(None)
    endstates.clear_process_cache()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SIMWORLD_CACHE_DIR", str(tmp_path / "cache"))
    endstates.set_disk_cache(True)
    endstates.clear_process_cache()
    yield tmp_path / "cache"
    endstates.set_disk_cache(None)
    endstates.clear_process_cache()


@pytest.fixture
def plays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file names of the solutions played from now on, in order."""
    played: list[str] = []
    real = judge._play_solution

    def counting(scenario: Scenario, seed: int, guard: Any, name: str, steps: Any) -> Any:
        played.append(name)
        return real(scenario, seed, guard, name, steps)

    monkeypatch.setattr(judge, "_play_solution", counting)
    return played


def _fresh(scenario: Scenario) -> Scenario:
    """A copy with kept end states and calls of its own."""
    return attrs.evolve(scenario)


def _episode(sc: Scenario, seed: int, agent: str, guard: TimeGuard) -> Any:
    return play(Environment(sc, seed, agent_name=agent, guard=guard), build_agent_factory(agent))


def _state_check(line: dict[str, Any]) -> dict[str, Any]:
    (check,) = (c for c in line["checks"] if c["name"] == "end_state_matches_a_solution")
    return check


@pytest.mark.usefixtures("no_disk")
class TestGradedAsIfAllWerePlayed:
    @pytest.mark.parametrize("agent", ["reference", "random", "noop", "drift:round-each", "drift:resplit"])
    def test_a_lazy_grade_is_the_eager_grade(self, agent: str) -> None:
        """Over the suite at two seeds: the result line graded with end states played on demand is, byte for
        byte, the line graded with every solution played first."""
        with TimeGuard() as guard:
            for scenario in SUITE:
                for seed in (3, 8):
                    sc = _fresh(scenario)
                    episode = _episode(sc, seed, agent, guard)
                    lazy = graded_line(sc, episode, guard=guard)
                    eager = graded_line(sc, episode, _play_solutions(_fresh(scenario), seed, guard))
                    assert orjson.dumps(lazy) == orjson.dumps(eager), (agent, sc.id, seed)

    def test_every_solution_read_plays_to_the_eager_end_state(self) -> None:
        """Read in any order, each lazily played end state hashes as the one played with nothing kept."""
        with TimeGuard() as guard:
            for scenario in SUITE:
                played = _play_solutions(_fresh(scenario), 6, guard)
                lazy = SolutionEndStates(_fresh(scenario), 6, guard)
                assert len(lazy) == len(played)
                assert [lazy[i].hash for i in reversed(range(len(lazy)))] == [s.hash for s in reversed(played)]
                assert lazy[-1] is lazy[len(lazy) - 1] and lazy[:] == tuple(lazy)
                with pytest.raises(IndexError, match=scenario.id):
                    lazy[len(lazy)]


@pytest.mark.usefixtures("no_disk")
class TestOnlyWhatIsReadIsPlayed:
    def test_the_reference_agent_has_no_solution_played(self, plays: list[str]) -> None:
        """An episode that made the first solution's calls is graded without playing any solution; a recovery
        scenario's, whose agent died mid-episode, has the first played and no other."""
        with TimeGuard() as guard:
            for scenario in SUITE:
                sc = _fresh(scenario)
                episode = _episode(sc, 2, "reference", guard)
                plays.clear()
                line = graded_line(sc, episode, guard=guard)
                assert line["passed"] and _state_check(line)["detail"] == "matches solution 0", sc.id
                assert plays == ([] if sc.recovery is None else [sc.solution_files[0]]), sc.id

    def test_an_episode_that_made_a_later_solutions_calls_plays_only_the_earlier_ones(self, plays: list[str]) -> None:
        """Playing the second solution as the agent: the first is played to compare, the second is the
        episode's own end state, and no later one is played."""
        multi = [s for s in SUITE if len(s.solutions) > 2 and s.recovery is None]
        assert multi
        with TimeGuard() as guard:
            for scenario in multi:
                sc = _fresh(scenario)
                name = sc.solution_files[1]
                episode = play(Environment(sc, 4, agent_name="second", guard=guard),
                               steps_factory(sc.solutions[1], name))
                plays.clear()
                line = graded_line(sc, episode, guard=guard)
                assert _state_check(line)["passed"], sc.id
                assert plays == [sc.solution_files[0]], sc.id

    def test_an_agent_matching_no_solution_has_each_played_once_per_seed(self, plays: list[str]) -> None:
        """Nothing matches a noop episode: every solution is read and played, once for all the seed's
        episodes (another trial reads the kept end states)."""
        sc = _fresh(BY_ID["split-balance-three-ways"])
        with TimeGuard() as guard:
            for _trial in range(2):
                graded_line(sc, _episode(sc, 1, "noop", guard), guard=guard)
        assert plays == list(sc.solution_files)


@pytest.mark.usefixtures("no_disk")
class TestBrokenGroundTruth:
    def _broken_second(self) -> Scenario:
        sc = _fresh(BY_ID["split-balance-three-ways"])  # a noop episode matches none of its solutions
        broken = list(sc.solutions)
        broken[1] = broken[1][:1]  # cut after its first call: no terminal tool
        return attrs.evolve(sc, solutions=tuple(broken))

    def test_a_broken_solution_read_by_a_grader_fails_the_grading(self) -> None:
        """A grader that reads a solution that does not play cannot hide it: grading raises BrokenSolutionError
        naming the file, though the grader caught it."""
        sc = self._broken_second()
        with TimeGuard() as guard:
            episode = _episode(sc, 2, "noop", guard)
            with pytest.raises(BrokenSolutionError, match=sc.solution_files[1]) as caught:
                graded_line(sc, episode, guard=guard)
        assert [name for name, _ in caught.value.problems] == [sc.solution_files[1]]

    def test_an_episode_graded_against_an_earlier_solution_is_graded(self) -> None:
        """The episode that matched the first solution (which plays) is graded against it; the eager end states
        still name the broken file."""
        sc = self._broken_second()
        with TimeGuard() as guard:
            line = graded_line(sc, _episode(sc, 2, "reference", guard), guard=guard)
            assert line["passed"] and line["harness_error"] is None
            with pytest.raises(BrokenSolutionError, match=sc.solution_files[1]):
                solution_end_states(sc, 2, guard)


class TestDiskCache:
    def test_a_file_holds_the_solutions_played_so_far(self, cache: Path, plays: list[str]) -> None:
        """A file holds the end states played so far, null for the rest; another process (the memory cleared)
        reads it, plays only the rest and writes the file whole; every end state is the played one."""
        sc = _fresh(BY_ID["split-balance-three-ways"])
        with TimeGuard() as guard:
            ends = SolutionEndStates(sc, 7, guard)
            ends[1]
            ends.done()
            assert plays == [sc.solution_files[1]]
            (path,) = cache.rglob("*.json")
            states = orjson.loads(path.read_bytes())["states"]
            assert [i for i, state in enumerate(states) if state is not None] == [1]
            endstates.clear_process_cache()
            graded_line(sc, _episode(sc, 7, "noop", guard), guard=guard)
            assert plays == [sc.solution_files[1], *(f for i, f in enumerate(sc.solution_files) if i != 1)]
            assert None not in orjson.loads(path.read_bytes())["states"]
            endstates.clear_process_cache()
            stamp = path.stat().st_mtime_ns
            read = solution_end_states(sc, 7, guard)
            assert len(plays) == len(sc.solutions) and path.stat().st_mtime_ns == stamp  # read, not played
            assert [s.hash for s in read] == [s.hash for s in _play_solutions(_fresh(sc), 7, guard)]

    def test_an_end_state_that_cost_nothing_writes_no_file(self, cache: Path, plays: list[str]) -> None:
        """A reference episode made solution 0's calls: its end state is solution 0's, kept in memory for the seed's
        other episodes, and no file is written for it (a sweep of such an agent writes none). When a later
        episode of the seed plays the others, the file is written whole, solution 0's state included."""
        sc = _fresh(BY_ID["split-balance-three-ways"])
        with TimeGuard() as guard:
            graded_line(sc, _episode(sc, 7, "reference", guard), guard=guard)
            assert plays == [] and not list(cache.rglob("*.json"))
            graded_line(sc, _episode(sc, 7, "noop", guard), guard=guard)
            assert plays == list(sc.solution_files[1:])  # solution 0's from memory
            (path,) = cache.rglob("*.json")
            assert None not in orjson.loads(path.read_bytes())["states"]
            endstates.clear_process_cache()
            read = solution_end_states(sc, 7, guard)
            assert plays == list(sc.solution_files[1:])
            assert [s.hash for s in read] == [s.hash for s in _play_solutions(_fresh(sc), 7, guard)]


@pytest.mark.usefixtures("no_disk")
class TestPlayedStraightThrough:
    @pytest.mark.parametrize("seed", [0, 5])
    def test_the_end_state_is_the_agent_loops(self, seed: int) -> None:
        """Every solution of the suite, played without the agent loop, ends in the state a Stepper driven by its
        steps ends in: the same hash and the same records in the same overlay order."""
        from simworld._episode.episode import Stepper

        with TimeGuard() as guard:
            for scenario in SUITE:
                sc = _fresh(scenario)
                for name, steps in zip(sc.solution_files, sc.solutions, strict=True):
                    state, why = judge._play_solution(sc, seed, guard, name, steps)
                    full = play(Stepper(_fresh(scenario), seed, agent_name=name, guard=guard),
                                steps_factory(steps, name))
                    assert why is None and state.hash == full.final_state.hash, (sc.id, name)
                    assert list(state.overlay) == list(full.final_state.overlay), (sc.id, name)

    @pytest.mark.parametrize("how", ["no terminal call", "a call refused", "a read refused", "a search refused",
                                     "over the step budget", "a bad reference"])
    def test_a_solution_that_does_not_play_says_why_as_the_agent_loop_does(self, how: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """A solution that does not play straight through is played again by the agent loop, whose reason names
        what went wrong (a read that no later step reads, made by its checks alone, too)."""
        from simworld._scenario.scenario import Step
        from simworld._world.world import World

        passed_over: list[str] = []
        pass_over = World.pass_over
        monkeypatch.setattr(World, "pass_over", lambda self, tool, args: passed_over.append(tool.name) or pass_over(
            self, tool, args))

        sc = _fresh(BY_ID["waive-small-fee"])
        steps = sc.solutions[0]
        if how == "no terminal call":
            steps, expected = steps[:-1], "it stopped with 'agent_stopped'"
        elif how == "a call refused":
            steps, expected = (Step("waive_fee", {"fee_id": "fee_nope", "reason": "x"}), *steps), "fee_nope"
        elif how == "a read refused":  # a read no later step reads is made by its checks: they refuse it too
            steps, expected = (*steps[:-1], Step("get_plan", {"plan_id": "pln_nope"}), steps[-1]), "pln_nope"
        elif how == "a search refused":
            steps, expected = (*steps[:-1], Step("find_customer", {"query": "  "}), steps[-1]), "query is empty"
        elif how == "over the step budget":
            sc = attrs.evolve(sc, max_steps=len(steps) - 1)
            expected = "it stopped with 'max_steps'"
        else:
            steps, expected = (Step(steps[0].tool, {"x": {"$from": [9, "nope"]}}), *steps), "step 0"
        with TimeGuard() as guard:
            state, why = judge._play_solution(sc, 1, guard, "solution.jsonl", steps)
        assert why is not None and expected in why, why
        if how.endswith("refused") and how != "a call refused":
            assert passed_over[-1] == steps[-2].tool

    def test_a_solution_played_while_grading_leaves_simulated_time_where_the_episode_left_it(self) -> None:
        """simworld's own tools read the world's clock, so a solution played by the end-state grader does not move
        the time foreign code sees: a grader after it sees the episode's last instant, played or not."""
        sc = _fresh(BY_ID["split-balance-three-ways"])
        with TimeGuard() as guard:
            frozen = guard._factory  # the freezer's own time (freezegun gives pytest's frames the real time)
            episode = _episode(sc, 3, "noop", guard)
            ended = frozen()
            assert ended == sc.instance(3).clock.replace(tzinfo=None)  # a noop episode makes no call
            graded_line(sc, episode, guard=guard)  # plays every solution: none matches a noop episode
            assert frozen() == ended
            assert sc.instance(3).calls, "the solutions were played"

    @pytest.mark.parametrize("after_side_effect", [True, False])
    @pytest.mark.parametrize("scenario_id", ["recover-payment-after-crash", "recover-split-before-write",
                                             "waive-small-fee"])
    def test_a_crash_is_played_without_the_agent_loop(self, scenario_id: str, after_side_effect: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
        """A recovery scenario's solutions end, played straight through, in the state the agent loop's crash and
        fresh agent end in: the agent dying after its call landed (a message then sent twice), or before."""
        from simworld._episode.episode import Stepper
        from simworld._scenario.scenario import Recovery

        sc = _fresh(BY_ID[scenario_id])
        if sc.recovery is None:  # die sending the message: the fresh agent, whose log lacks it, sends it again
            steps = sc.solutions[sc.solution_files.index("solution-with-message.jsonl")]
            sc = attrs.evolve(sc, recovery=Recovery([s.tool for s in steps].index("send_message") + 1, True))
        sc = attrs.evolve(sc, recovery=attrs.evolve(sc.recovery, after_side_effect=after_side_effect))
        with TimeGuard() as guard:
            for seed in range(3):
                loops = [play(Stepper(_fresh(sc), seed, agent_name=name, guard=guard), steps_factory(steps, name))
                         for name, steps in zip(sc.solution_files, sc.solutions, strict=True)]
                with monkeypatch.context() as patched:
                    patched.setattr(judge, "play", None)  # the agent loop is not called
                    for loop, name, steps in zip(loops, sc.solution_files, sc.solutions, strict=True):
                        if loop.crash is None or any(e.status != "ok" for e in loop.events):
                            continue  # no crash in a solution this short, or one that does not play (see below)
                        state, why = judge._play_solution(sc, seed, guard, name, steps)
                        assert why is None and state.hash == loop.final_state.hash, (seed, name)
                        assert list(state.overlay) == list(loop.final_state.overlay), (seed, name)

    def test_a_crash_near_the_step_budget_is_left_to_the_agent_loop(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The crash takes a step of its own: a solution within a step of the budget is played by the agent loop,
        which counts the steps, and ends where it ends."""
        sc = _fresh(BY_ID["recover-payment-after-crash"])
        name, steps = sc.solution_files[0], sc.solutions[0]
        sc = attrs.evolve(sc, max_steps=len(steps) + 1)
        loops: list[Any] = []
        real = judge.play

        def counting(*args: Any) -> Any:
            loops.append(real(*args))
            return loops[-1]

        monkeypatch.setattr(judge, "play", counting)
        with TimeGuard() as guard:
            state, why = judge._play_solution(sc, 2, guard, name, steps)
        assert len(loops) == 1 and loops[0].crash is not None
        assert why is None and state is loops[0].final_state

    @pytest.mark.parametrize("size", [5_000, 200_000])
    def test_arguments_past_an_action_limit_are_refused_as_the_agent_loop_refuses_them(self, size: int) -> None:
        """Long arguments are walked as an agent's are: a reason past the longest string an action may hold does
        not play, and the reason says so; a long one within it plays."""
        from simworld._scenario.scenario import Step

        sc = _fresh(BY_ID["waive-small-fee"])
        steps = tuple(Step(s.tool, {**s.args, "reason": "x" * size}) if s.tool == "waive_fee" else s
                      for s in sc.solutions[1])
        with TimeGuard() as guard:
            state, why = judge._play_solution(sc, 1, guard, "solution.jsonl", steps)
        if size < 100_000:
            assert why is None, why
        else:
            assert why is not None and "characters" in why, why
