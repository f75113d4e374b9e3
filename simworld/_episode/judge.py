"""Grading one episode: the end states of the scenario's solutions at its seed, its graders, its result line."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import orjson

from simworld._episode.contract import CONTRACT_VERSION
from simworld._episode.endstates import KeptEndStates, kept_end_states
from simworld._episode.episode import Episode, Stepper
from simworld._episode.play import play
from simworld._episode.steps import PLAIN_SCALARS, steps_factory, worked_out
from simworld._grading.contract import grade_episode
from simworld._scenario.scenario import Scenario, Step
from simworld._world.actions import plain_action, plain_value
from simworld._world.clock import SimClock, TimeGuard
from simworld._world.state import State
from simworld._world.tools import TOOLS
from simworld._world.world import World, own_tool
from simworld.errors import BrokenSolutionError, ScenarioError

__all__ = ["SolutionEndStates", "grade", "graded_line", "result_line", "solution_end_states"]


def graded_line(scenario: Scenario, episode: Episode, solutions: Sequence[State] | None = None,
                trial: int = 0, *, guard: TimeGuard | None = None) -> dict[str, Any]:
    """The result line of an episode: graded against every valid end state at its seed.

    ``solutions`` may be passed when already computed for the seed (they are the same for
    every trial and every agent). Without them, each solution is played when a grader first
    reads its end state (see :class:`SolutionEndStates`); one that does not play then is a
    BrokenSolutionError, raised once the graders are done.
    """
    if solutions is None:
        lazy = SolutionEndStates(scenario, episode.seed, guard, episode=episode)
        grading = grade(scenario, episode, lazy)
        lazy.done()
    else:
        grading = grade(scenario, episode, solutions)
    return {**result_line(episode, grading), "category": scenario.category, "trial": trial}


def solution_end_states(scenario: Scenario, seed: int, guard: TimeGuard | None = None, *,
                        episode: Episode | None = None) -> tuple[State, ...]:
    """The end state of every solution of ``scenario`` at ``seed``, all played now (each once, then kept: see
    :mod:`simworld._episode.endstates`).

    A solution that does not play to a terminal tool, every call ok, is a
    BrokenSolutionError (a ScenarioError) naming each such solution file: the ground
    truth is wrong, and no agent should be graded against it.

    ``episode``, an episode played from this seed's start, spares playing a solution whose
    calls it made, exactly and in order (see :func:`made_the_calls_of`): its end state is that one.
    """
    return SolutionEndStates(scenario, seed, guard, episode=episode).all()


class SolutionEndStates(Sequence[State]):
    """The end states of ``scenario``'s solutions at ``seed``, each played when first read, then kept.

    What a grader that takes ``solutions`` receives in a run. The end-state grader reads them
    in order and stops at the first its episode matches, so the solutions after that one are
    never played; the one whose calls ``episode`` made (see :func:`made_the_calls_of`) is not
    played either: its end state is the episode's own. Kept end states (see
    :mod:`simworld._episode.endstates`) are shared by every episode of the seed.

    A solution that does not play raises BrokenSolutionError when read; :meth:`done` raises it
    again after grading, naming every such file that was read, so that a grader catching it
    cannot hide wrong ground truth.
    """

    def __init__(self, scenario: Scenario, seed: int, guard: TimeGuard | None = None, *,
                 episode: Episode | None = None) -> None:
        self._scenario = scenario
        self._seed = seed
        self._guard = guard
        self._kept: KeptEndStates = kept_end_states(scenario, seed)
        self._episode = _from_start(scenario, seed, episode)
        self._broken: dict[int, tuple[str, str]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    @overload
    def __getitem__(self, index: int) -> State: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[State, ...]: ...

    def __getitem__(self, index: int | slice) -> State | tuple[State, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"solution index {index} out of range: {self._scenario.id} has {n} solution(s)")
        index %= n
        known = self._kept.known(index)
        if known is not None:
            return known
        state, why, played = self._end_state(index)
        if why is not None:
            self._broken[index] = (self._scenario.solution_files[index], why)
            raise BrokenSolutionError(self._scenario.path, self._seed, (self._broken[index],))
        return self._kept.keep(index, state, played=played)

    def __iter__(self) -> Iterator[State]:
        for i in range(len(self)):
            yield self[i]

    def _end_state(self, index: int) -> tuple[State, str | None, bool]:
        """Solution ``index``'s end state: the episode's when it made the solution's calls, else played now; why
        it does not play (None when it does); and whether it was played."""
        name, steps = self._scenario.solution_files[index], self._scenario.solutions[index]
        if self._episode is not None and made_the_calls_of(self._episode, self._scenario, steps):
            return self._episode.final_state, None, False
        return (*_play_solution(self._scenario, self._seed, self._guard, name, steps), True)

    def all(self) -> tuple[State, ...]:
        """Every end state, played now where not known; BrokenSolutionError names each file that does not play."""
        states = []
        for i in range(len(self)):
            try:
                states.append(self[i])
            except BrokenSolutionError:
                continue
        self.done()
        return tuple(states)

    def done(self) -> None:
        """Write newly played end states to the disk cache; raise BrokenSolutionError if a solution read did not
        play."""
        if self._broken:
            raise BrokenSolutionError(self._scenario.path, self._seed,
                                      tuple(self._broken[i] for i in sorted(self._broken)))
        self._kept.save()


class _SolutionStepper(Stepper):
    """A Stepper for a solution's scripted steps, which read results, never the request or the tool schemas."""

    for_agent = False


def made_the_calls_of(episode: Episode, scenario: Scenario, steps: Sequence[Step]) -> bool:
    """Whether ``episode`` made exactly the calls ``steps`` make, in order, every one ok, ending at a terminal tool.

    Each step's arguments are resolved as a solution's are, against the episode's own results, and
    compared with the calls' arguments as bytes. The same start, the same calls: the determinism
    contract makes the end state the one playing ``steps`` reaches (the same contract kept calls rest
    on, see :class:`simworld._world.world.World`). A recovery scenario, whose agent dies mid-episode,
    always plays its solutions.
    """
    events = episode.events
    if (scenario.recovery is not None or episode.error is not None or episode.stop_reason != "terminal"
            or len(events) != len(steps)):
        return False
    variables = dict(episode.variables)
    # A solution file's arguments and plain variables resolve to exact JSON values: their bytes are their plain
    # copy's, so they are compared as they are (the recorded arguments passed every limit an action has).
    _read, plain, resolvers = worked_out(steps)
    exact = plain and all(type(v) in PLAIN_SCALARS for v in variables.values())
    results: list[Any] = []
    for resolve, step, event in zip(resolvers, steps, events, strict=True):
        if event.status != "ok" or event.tool != step.tool:
            return False
        try:
            args = resolve(variables, results)  # only read: compared as bytes
        except ScenarioError:  # a reference the episode's results do not hold: play the solution, which names it
            return False
        if not _same_args(args, event.args, exact):
            return False
        results.append(event.result)
    return True


def _same_args(args: Any, recorded: Any, exact: bool) -> bool:
    """Whether a solution step's resolved ``args`` are the ``recorded`` arguments of a call, as bytes of their plain
    copy (``exact``: they are exact JSON values already, see :func:`made_the_calls_of`)."""
    if exact:
        try:
            return orjson.dumps(args) == orjson.dumps(recorded)
        except TypeError:  # an integer past 64 bits, a lone surrogate: the careful copy says what it is
            pass
    plain, problem = plain_value(args, "args")
    return problem is None and orjson.dumps(plain) == orjson.dumps(recorded)


def _play_solutions(scenario: Scenario, seed: int, guard: TimeGuard | None,
                    episode: Episode | None = None) -> tuple[State, ...]:
    """Every solution's end state at ``seed``, played now with nothing kept (but the episode's calls, when given)."""
    states = []
    problems = []
    mine = _from_start(scenario, seed, episode)
    for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True):
        if mine is not None and made_the_calls_of(mine, scenario, steps):
            states.append(mine.final_state)
            continue
        state, why = _play_solution(scenario, seed, guard, name, steps)
        if why is not None:
            problems.append((name, why))
        states.append(state)
    if problems:
        raise BrokenSolutionError(scenario.path, seed, tuple(problems))
    return tuple(states)


def _from_start(scenario: Scenario, seed: int, episode: Episode | None) -> Episode | None:
    """``episode`` if it was played from this seed's start (the one its calls can stand for a solution's from)."""
    return episode if episode is not None and episode.initial_state is scenario.instance(seed).state else None


def _play_solution(scenario: Scenario, seed: int, guard: TimeGuard | None, name: str,
                   steps: Sequence[Step]) -> tuple[State, str | None]:
    """Play one solution from the seed's start: its end state, and why it does not play (None when it does)."""
    state = _play_straight(scenario, seed, guard, name, steps)
    if state is not None:
        return state, None
    # A solution that does not play (or a crash near the step budget): the whole agent loop, which says why.
    env = _SolutionStepper(scenario, seed, agent_name=f"solution:{name}", guard=guard)
    played = play(env, steps_factory(steps, name))
    bad = [e for e in played.events if e.status != "ok"]
    if played.error or played.outcome is None or bad:
        return played.final_state, played.error or (
            f"call seq {bad[0].seq} {bad[0].tool} returned {bad[0].status}: {bad[0].result}" if bad
            else f"it stopped with {played.stop_reason!r}")
    return played.final_state, None


def _play_straight(scenario: Scenario, seed: int, guard: TimeGuard | None, name: str,
                   steps: Sequence[Step]) -> State | None:
    """The end state of a solution that plays straight through: each call ok, the last one terminal, within the
    step budget; None for any other (the agent loop plays that one again, to say why).

    The world, the calls and their order are a :class:`_SolutionStepper`'s driven by a
    :class:`~simworld._episode.steps.StepsAgent`, without the observations, the agent
    loop's guards and the sealed episode, which no end state depends on. With simworld's own
    tools only, a call is applied as :meth:`World.call <simworld._world.world.World.call>`
    applies it, without recording an event, which nothing here reads (see
    :meth:`World.apply <simworld._world.world.World.apply>`).

    A scenario's crash (its ``recovery``) is played as the loop plays it: an agent that dies before
    its call lands leaves the world as it was, and the fresh one makes that call; one that dies
    after it landed leaves its effect, and the fresh one, which reads a log without it, makes it again.
    """
    crash = scenario.recovery
    if crash is not None and len(steps) + 2 > scenario.max_steps:
        return None  # the crash takes a step of its own: near the budget, the agent loop counts them
    inst = scenario.instance(seed)
    tools = dict(zip(scenario.tools, map(TOOLS.__getitem__, scenario.tools), strict=True))  # {n: TOOLS[n] ...}
    # simworld's own tools read the world's clock, never datetime.now(): simulated time is shown to foreign code
    # (a tool of your own) only, so that a solution played while grading leaves freezegun where the episode left it.
    foreign = _foreign(tools)
    clock = SimClock(inst.clock, guard if foreign else None)
    clock.set(inst.clock)
    world = World(inst.state, clock, scenario.snapshot.policy, tools, inst.calls)
    variables = dict(inst.vars)
    analysed, plain, resolvers = worked_out(steps)
    # A tool of your own may read the world's events: then each call is recorded, as in the agent loop.
    read = None if foreign else analysed
    plain = plain and PLAIN_SCALARS.issuperset(map(type, variables.values()))  # each value's type one of them
    results: list[Any] = []
    try:
        for i, step in enumerate(steps):
            if i >= scenario.max_steps:
                return None
            args = resolvers[i](variables, results)  # a problem is the agent loop's to name (see below)
            tool = step.tool
            copied = _plain_copy(args) if plain else None
            if copied is not None:
                args = copied
            else:
                action, problem = plain_action({"tool": tool, "args": args})
                if problem is not None:
                    return None
                tool, args = action["tool"], action.get("args", {})
            passed = None if read is None or i in read else tools.get(tool)
            if passed is not None and passed.checks is not None and (crash is None or i + 1 != crash.crash_at_call):
                # A read whose result no later step reads: its checks, not its result (which no end state holds).
                if not world.pass_over(passed, args):
                    return None
                results.append(None)
                continue
            if crash is not None and crash.after_side_effect and i + 1 == crash.crash_at_call:
                # The agent dies after this call lands, before the log has it: the fresh agent that reads the log
                # makes the call again (when it did not end the episode). Dying before it lands changes nothing.
                again = orjson.loads(orjson.dumps(args))  # the fresh agent's own arguments, whatever the call did
                if _call(world, tool, args, read is None) is _NOT_OK:
                    return None
                if world.outcome is not None:
                    return world.state
                args = again
            result = _call(world, tool, args, read is None)
            if result is _NOT_OK:
                return None
            if world.outcome is not None:
                return world.state
            if read is None:
                results.append(result)
            else:  # a result no later step reads is left as bytes
                results.append(orjson.loads(result) if i in read else None)
    except Exception:  # noqa: BLE001 - a template or a tool that fails: the agent loop names it
        return None
    return None


#: What :func:`_call` returns for a call that is not ok.
_NOT_OK = object()


def _call(world: World, name: str, args: dict[str, Any], record: bool) -> Any:
    """Make one call of a solution: its recorded result (``record``: through :meth:`World.call`) or its result's
    JSON bytes (through :meth:`World.apply`, which records no event); ``_NOT_OK`` when it is not ok."""
    if record:
        event = world.call(name, args, plain=True)
        return event.result if event.status == "ok" else _NOT_OK
    result = world.apply(name, args)
    return _NOT_OK if result is None else result


def _plain_copy(args: Any) -> Any:
    """A copy of ``args``, made of exact JSON values (see :func:`~simworld._episode.steps.worked_out`), by a JSON
    round trip, when it is far inside every limit on an action (:mod:`~simworld._world.actions`): then it is the copy
    ``plain_action`` makes.
    None when it is not (``plain_action`` walks it, and names the problem)."""
    try:
        dumped = orjson.dumps(args)  # refuses an integer past 64 bits and a lone surrogate
    except TypeError:
        return None
    # Each value takes a byte at least, and each level a bracket: few bytes and brackets, few values and levels.
    if len(dumped) > _QUICK_BYTES or dumped.count(b"[") + dumped.count(b"{") > _QUICK_LEVELS:
        return None
    return orjson.loads(dumped)


#: What :func:`_plain_copy` takes, far inside :data:`~simworld._world.actions.MAX_NODES`, ``MAX_DEPTH`` and the text
#: limits.
_QUICK_BYTES, _QUICK_LEVELS = 4096, 16
def _foreign(tools: dict[str, Any]) -> bool:
    """Whether any of ``tools`` is not simworld's own (a tool of your own): found once per set of tools."""
    key = tuple(tools.values())
    foreign = _FOREIGN.get(key)
    if foreign is None:
        foreign = not all(map(own_tool, key))
        if len(_FOREIGN) >= 256:
            _FOREIGN.clear()
        _FOREIGN[key] = foreign
    return foreign


#: Whether a set of tools (the objects, held so that their ids are not reused) has one that is not simworld's own.
_FOREIGN: dict[tuple[Any, ...], bool] = {}


def grade(scenario: Scenario, episode: Episode, solutions: Sequence[State]) -> dict[str, Any]:
    """Grade an episode with the scenario's graders; a grader that raises is a failed check, never a pass."""
    ex = scenario.expectations
    return grade_episode(ex.graders, episode, solutions, ex.weights)


def result_line(episode: Episode, grading: dict[str, Any]) -> dict[str, Any]:
    """An episode's result fields and its grade. ``harness_error`` is set when the harness, a user's tool or a
    grader failed (the episode's own error when it ended as ``harness_error``, else the grader's)."""
    line = {
        "scenario": episode.scenario,
        "seed": episode.seed,
        "agent": episode.agent,
        "outcome": episode.outcome,
        "stop_reason": episode.stop_reason,
        "error": episode.error,
        **grading,
        "counters": dict(episode.counters),
        "state_hash": episode.state_hash,
        "events_hash": episode.events_hash,
        "contract": CONTRACT_VERSION,
    }
    if episode.stop_reason == "harness_error":
        line["harness_error"] = episode.error
    line.setdefault("harness_error", None)
    return line
