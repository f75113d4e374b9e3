"""The valid end states of a (scenario, seed), kept so that no run plays the same solution twice.

A scenario's expected end states depend only on what the scenario says (its solutions,
target, perturbation, parameters, tools, budget and recovery), the snapshot's bytes, the
seed and the simworld code that plays them. Each is played when a grader first reads it
(an agent that matched the first solution never needs the others played) and kept:

- in a process cache of the last few hundred (scenario, seed)s, shared by ``run``,
  ``probe``, ``check`` and every trial of a seed;
- in a content-addressed cache on disk, one small file per (scenario, seed), named by a
  hash of those four inputs (the code: simworld's own source and each of the scenario's
  tools, a tool of your own included). Another run of the same seeds (another agent, another
  prompt) reads them instead of playing the solutions again. The folder is
  ``$SIMWORLD_CACHE_DIR`` or ``$XDG_CACHE_HOME/simworld/end-states`` (``~/.cache``
  when unset); it is safe to delete at any time, and ``--no-cache`` (or
  ``SIMWORLD_NO_CACHE=1``) bypasses it.

A file holds, per solution, the records its end state changed from the seed's perturbed
start, as JSON, or null for a solution not played yet; reading it puts those records back
onto that start, so a read end state has exactly the overlay a played one has. A file is
written again when an episode's grading played a solution it did not hold. A scenario built
in memory from a snapshot with no file behind it (no digest) is never written to disk.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson

from simworld._scenario.scenario import Scenario
from simworld._world.diskcache import cache_budget, cache_dir, disk_cache_enabled, set_disk_cache, used, wrote
from simworld._world.events import write_atomic
from simworld._world.hashing import blake2b
from simworld._world.held import Held
from simworld._world.models import json_bytes, record_from_json
from simworld._world.state import State

__all__ = ["KeptEndStates", "cache_dir", "clear_process_cache", "disk_cache_enabled", "hold_end_states",
           "kept_end_states", "set_disk_cache"]

_FORMAT = 2  # 2: a solution not played yet is null
#: End states held in memory. A run plays a (scenario, seed)'s trials one after another (with --concurrency N, up to
#: 4N episodes in flight), so a few dozen cover it; each one held longer keeps its states' records and their cached
#: JSON alive (~0.2 MB), and a process that held hundreds grew by ~130 MB over a sweep, paying a page fault and a
#: cold cache line for memory the next episode could have reused.
_held: Held[tuple[Scenario, KeptEndStates, tuple[int, ...]]] = Held(32)
_code: str | None = None


def hold_end_states(n: int) -> int:
    """Hold the end states of at most ``n`` (at least one) (scenario, seed)s from now on, the oldest let go first; the
    bound it replaces (see :func:`simworld._scenario.scenario.hold_starts`)."""
    return _held.bound(n)


def clear_process_cache() -> None:
    """Forget the end states held in memory (the disk cache is untouched)."""
    _held.clear()


class KeptEndStates:
    """The end states of ``scenario``'s solutions at ``seed`` known so far, by solution index (None: not played yet).

    One is shared by every episode of the (scenario, seed) in the process; threads may fill it at once (a
    solution played twice plays to the same state, and the first kept stays).
    """

    def __init__(self, scenario: Scenario, seed: int, states: list[State | None], path: Path | None) -> None:
        self.scenario = scenario
        self.seed = seed
        self._states = states
        self._path = path
        self._unsaved = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._states)

    def known(self, index: int) -> State | None:
        """Solution ``index``'s end state, or None when it has not been played (or read) yet."""
        return self._states[index]

    def keep(self, index: int, state: State, *, played: bool = True) -> State:
        """Keep ``state`` as solution ``index``'s end state unless one is kept already; the one kept.

        ``played=False``: ``state`` cost nothing to know (an episode that made the solution's calls reached it),
        so it is kept in memory for the seed's other episodes but is no reason to write a file: a sweep of an
        agent that makes solution 0's calls writes none (but for scenarios with a crash, whose solutions always
        play). It is written with a played one, when one comes.
        """
        with self._lock:
            held = self._states[index]
            if held is not None:
                return held
            self._states[index] = state
            self._unsaved = self._unsaved or (played and self._path is not None)
            return state

    def save(self) -> None:
        """Write the states known to the disk cache if some were played since it was read or written."""
        with self._lock:
            if not self._unsaved or self._path is None:
                return
            self._unsaved = False
            states = list(self._states)
        _write(self._path, self.scenario, self.seed, states)


def kept_end_states(scenario: Scenario, seed: int) -> KeptEndStates:
    """The end states of ``scenario``'s solutions at ``seed`` known so far: from memory, from disk, or none yet."""
    key = (id(scenario), seed)
    tools = _tools(scenario)

    def valid(held: tuple[Scenario, KeptEndStates, tuple[int, ...]]) -> bool:
        return held[0] is scenario and held[2] == tools

    held = _held.get(key, valid)
    if held is not None:
        return held[1]
    path = None
    if disk_cache_enabled():
        cache_budget()  # a bad SIMWORLD_CACHE_MAX_MB is named now, not when a write first trims a folder
        path = _file(scenario, seed)
    states = _read(path, scenario, seed) if path is not None else None
    kept = KeptEndStates(scenario, seed, states or [None] * len(scenario.solutions), path)
    return _held.keep(key, (scenario, kept, tools), valid)[1]  # another thread's, if it got here first


def _tools(scenario: Scenario) -> tuple[int, ...]:
    """Which implementation of each of the scenario's tools is registered now (a tool replaced at run time, by a
    test or a plugin, is another world)."""
    from simworld._world.tools import TOOLS

    return tuple(map(id, map(TOOLS.get, scenario.tools)))


def _tools_code(scenario: Scenario) -> list[str]:
    """A hash of each of the scenario's tools' code, wherever it is defined (a tool of your own included)."""
    from simworld._world.tools import TOOLS

    return [_tool_code(name, TOOLS.get(name)) for name in scenario.tools]


def _tool_code(name: str, tool: Any) -> str:
    """A hash of ``tool``'s code and latency under ``name``, hashed once per tool, function, code object and latency
    (a process asks for it at every (scenario, seed) it grades; a tool replaced, or its function's code, is
    hashed again)."""
    fn = getattr(tool, "fn", None)
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"{name}:?"
    latency = repr(getattr(tool, "latency", None))
    module = getattr(fn, "__module__", "?")
    key = (name, id(tool))
    held = _TOOL_CODE.get(key)
    if held is not None and held[0] is tool and held[1] is fn and held[2] is code and held[3] == (latency, module):
        return held[4]
    h = blake2b(latency.encode(), digest_size=12)
    _hash_code(code, h)
    hashed = f"{name}:{module}:{h.hexdigest()}"
    if len(_TOOL_CODE) >= 1024:
        _TOOL_CODE.clear()
    _TOOL_CODE[key] = (tool, fn, code, (latency, module), hashed)
    return hashed


#: Per (name, tool id): the tool, its function and code object (held, so that an id is not reused while kept), its
#: latency's repr and module, and their hash (see :func:`_tool_code`).
_TOOL_CODE: dict[tuple[str, int], tuple[Any, Any, Any, tuple[str, str], str]] = {}


def _hash_code(code: Any, h: Any) -> None:
    """Feed a code object's instructions, names and constants to ``h``, the same in every process (marshal's
    bytes are not: they depend on reference counts)."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            _hash_code(const, h)
        elif isinstance(const, frozenset):
            h.update(repr(sorted(map(repr, const))).encode())
        else:
            h.update(repr(const).encode())


def _code_digest() -> str:
    """A hash of the simworld package's own source: a code change (released or not) is a new cache."""
    global _code
    if _code is None:
        h = blake2b(digest_size=16)
        root = Path(__file__).resolve().parents[1]  # the simworld package
        for path in sorted(root.rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(path.read_bytes())
        _code = h.hexdigest()
    return _code


def _file(scenario: Scenario, seed: int) -> Path | None:
    """The cache file of (scenario, seed), or None when the scenario's snapshot has no file digest."""
    if not scenario.snapshot.digest:
        return None
    from simworld._world.tools import TOOLS

    tools = tuple(map(TOOLS.get, scenario.tools))
    codes = tuple([getattr(getattr(tool, "fn", None), "__code__", None) for tool in tools])
    held = _what.get(id(scenario))
    # Tuples compare item by item, each by identity first: the same tools and code, at the cost of a glance.
    if held is None or held[0] is not scenario or held[1] != tools or held[2] != codes:
        data = _scenario_bytes(scenario, _tools_code(scenario))
        held = (scenario, tools, codes, None if data is None else blake2b(data, digest_size=20))
        if len(_what) >= 256:
            _what.clear()
        _what[id(scenario)] = held
    if held[3] is None:  # something in the scenario that is not JSON: do not guess a key for it
        return None
    h = held[3].copy()  # the hash of what the end states depend on, the seed last
    h.update(b"\nseed %d" % seed)
    name = h.hexdigest()
    return cache_dir() / name[:2] / f"{name}.json"


def _scenario_bytes(scenario: Scenario, tools: list[str]) -> bytes | None:
    """What a (scenario, seed)'s end states depend on, but the seed, as JSON (``tools``: their code's hashes); None
    when the scenario holds something JSON cannot."""
    what = {
        "format": _FORMAT,
        "code": _code_digest(),
        "tools": tools,
        # The file's digest, and what the snapshot holds in memory (a test or a benchmark may change it there).
        "snapshot": [scenario.snapshot.digest, f"{scenario.snapshot.base.business_sum:x}",
                     f"{scenario.snapshot.base.comms_sum:x}", scenario.snapshot.clock.isoformat(),
                     repr(scenario.snapshot.policy)],
        "scenario": {
            "id": scenario.id, "target": scenario.target, "perturb": scenario.perturb, "params": scenario.params,
            "tools": list(scenario.tools), "max_steps": scenario.max_steps, "timeout_s": scenario.timeout_s,
            "solutions": [[[step.tool, step.args] for step in steps] for steps in scenario.solutions],
            "solution_files": list(scenario.solution_files),
            "recovery": None if scenario.recovery is None else [scenario.recovery.crash_at_call,
                                                                scenario.recovery.after_side_effect],
            "world": scenario.world,
        },
    }
    try:
        return orjson.dumps(what, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return None


#: Per scenario (by identity; a scenario is never changed in place: ``attrs.evolve`` makes another, and so does
#: every load): the scenario, its tools and their functions' code when it was read, and the hash of
#: :func:`_scenario_bytes` (None: not JSON), made once, not at every seed.
_what: dict[int, tuple[Scenario, tuple[Any, ...], tuple[Any, ...], Any]] = {}


def _changed(start: State, end: State) -> list[list[Any]]:
    """The records ``end`` holds in its overlay that ``start`` does not hold as the same object, in overlay
    order (the order new records were added is the order a plan lists its payments)."""
    out = []
    for (table, rid), record in end.overlay.items():
        if start.overlay.get((table, rid)) is not record:
            out.append([table, rid, orjson.Fragment(json_bytes(record))])
    return out


def _write(path: Path, scenario: Scenario, seed: int, states: list[State | None]) -> None:
    start = scenario.instance(seed).state
    body = orjson.dumps({"format": _FORMAT, "states": [None if s is None else _changed(start, s) for s in states]})
    target = os.fspath(path)
    tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"  # one per writer: workers may write one file at once
    try:
        try:
            write_atomic(target, body, tmp=tmp)
        except FileNotFoundError:  # the first file under its two-letter folder
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_atomic(target, body, tmp=tmp)
    except OSError:  # a cache that cannot be written is a cache miss next time, no more
        return
    wrote(os.path.dirname(target))


def _read(path: Path, scenario: Scenario, seed: int) -> list[State | None] | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # none yet (the usual case in a sweep of fresh seeds), or one that cannot be read: a miss
        return None
    try:
        with open(fd, "rb") as f:
            raw = f.read()
            used(f.fileno())  # read now: the last a trim removes
        data = orjson.loads(raw)
        if data.get("format") != _FORMAT or len(data["states"]) != len(scenario.solutions):
            return None
        start = scenario.instance(seed).state
        states: list[State | None] = []
        for changed in data["states"]:
            if changed is None:
                states.append(None)
                continue
            state = start
            for table, rid, record in changed:
                rebuilt = record_from_json(table, record, f"{path.name}: {table}/{rid}")
                state = state.put(rebuilt)
            states.append(state)
        return states
    except Exception:  # noqa: BLE001 - a damaged or foreign file is a miss: play the solutions again
        return None
