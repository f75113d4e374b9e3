"""Speed and scale without a change in what a run writes: the end-state caches, --workers, Ray, a light --help.

Every test here compares bytes: a cached end state grades as the played one, a run on worker
processes or on Ray writes the run directory a single process writes, and a worker that dies
loses no episode and counts none twice.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import attrs
import orjson
import pytest
from helpers import simworld

from simworld import endstates
from simworld._agents.kinds import build_agent_factory
from simworld._episode.judge import _play_solutions, solution_end_states
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite

SUITE = load_suite()
BY_ID = {s.id: s for s in SUITE}
#: A slice of the suite that has every kind of episode: a write, a decline, a payment, a crash and recovery.
SLICE = [BY_ID[i] for i in ("split-balance-three-ways", "second-fee-waiver-decline", "overpayment-to-last-instalment",
                            "recover-payment-after-crash", "premium-increase-midterm")]


def _run_dir(path: Path) -> dict[str, bytes]:
    """Every file a run wrote but run.json (which holds wall-clock times), by its path in the run."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != "run.json"}


def _agent_that_dies_once(folder: Path, module: str) -> Path:
    """Write ``module``.py into ``folder``: a python: agent (class Once) whose first action anywhere kills its
    process (SIGKILL, as the machine would: an os._exit is caught as the agent's error) and leaves a marker file;
    every later action stops. Returns the marker's path."""
    marker = folder / f"{module}-died"
    (folder / f"{module}.py").write_text(
        "import os, signal\n"
        f"MARKER = {str(marker)!r}\n"
        "class Once:\n"
        "    def act(self, observation):\n"
        "        if not os.path.exists(MARKER):\n"
        "            open(MARKER, 'w').close()\n"
        "            os.kill(os.getpid(), signal.SIGKILL)\n"
        "        return None\n")
    return marker


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty end-state cache on disk and in memory."""
    monkeypatch.setenv("SIMWORLD_CACHE_DIR", str(tmp_path / "cache"))
    endstates.clear_process_cache()
    endstates.set_disk_cache(None)
    yield tmp_path / "cache"
    endstates.clear_process_cache()
    endstates.set_disk_cache(None)


def test_a_long_run_holds_no_more_memory_than_a_short_one(cache: Path) -> None:
    """What a sweep keeps between episodes (perturbed starts, solutions' end states, compiled patterns) is bounded:
    after a few seeds of every scenario, more seeds add nothing that stays. A process that kept every (scenario,
    seed) it met grew by ~0.2 MB an episode, which a sweep of millions cannot afford."""
    import gc
    import tracemalloc

    endstates.set_disk_cache(False)
    factory = build_agent_factory("random")
    tracemalloc.start()
    try:
        run_suite(SUITE, [0, 1, 2], "random", factory, None)
        gc.collect()
        short = tracemalloc.get_traced_memory()[0]
        run_suite(SUITE, [3, 4, 5, 6, 7, 8], "random", factory, None)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - short
    finally:
        tracemalloc.stop()
    assert grown < 2 * 2**20, f"six more seeds of the suite left {grown / 2**20:.1f} MB more held"


def _end_state_files(cache: Path) -> list[Path]:
    """The end-state files in ``cache`` (beside them, ``patterns/`` holds the graders' compiled patterns)."""
    return sorted(f for f in cache.rglob("*.json") if f.parent.name != "patterns")


class TestEndStateCache:
    @pytest.mark.parametrize("scenario", sorted(BY_ID))
    def test_a_state_read_from_disk_is_the_played_state(self, scenario: str, cache: Path) -> None:
        """Each scenario: the end states written to disk and read back have the played states' records, hash and
        overlay order (the order of new payments is the order a plan lists them)."""
        sc = BY_ID[scenario]
        played = _play_solutions(sc, 3, None)
        first = solution_end_states(sc, 3)  # plays and writes the file
        endstates.clear_process_cache()
        read = solution_end_states(sc, 3)  # reads it
        assert any(cache.rglob("*.json"))
        for p, a, b in zip(played, first, read, strict=True):
            assert p.hash == a.hash == b.hash
            assert list(p.overlay) == list(b.overlay)
            assert all(p.overlay[k] == b.overlay[k] for k in p.overlay)

    def test_cold_warm_and_no_cache_runs_write_the_same_bytes(self, tmp_path: Path, cache: Path) -> None:
        """A run that plays the solutions, one that reads them from disk and one with --no-cache are identical.
        (The random agent's episodes read every solution, and make none of their calls.)"""
        env = {**os.environ, "SIMWORLD_CACHE_DIR": str(cache)}
        for name, extra in (("cold", []), ("warm", []), ("bypass", ["--no-cache"])):
            r = subprocess.run([sys.executable, "-m", "simworld", "run", "--agent", "random", "--seeds", "0..1",
                                "--out", str(tmp_path / name), *extra], env=env, capture_output=True, text=True,
                               timeout=600)
            assert r.returncode in (0, 1), r.stderr
            if name == "cold":
                files = sorted(cache.rglob("*.json"))
                assert len(_end_state_files(cache)) == 2 * len(SUITE)
                assert len(list((cache / "patterns").iterdir())) == 1  # the graders' compiled patterns
                stamps = {f: f.stat().st_mtime_ns for f in files}
        assert _run_dir(tmp_path / "cold") == _run_dir(tmp_path / "warm") == _run_dir(tmp_path / "bypass")
        assert {f: f.stat().st_mtime_ns for f in sorted(cache.rglob("*.json"))} == stamps  # read, not rewritten

    def test_no_cache_neither_reads_nor_writes(self, tmp_path: Path, cache: Path) -> None:
        """--no-cache leaves the cache folder untouched."""
        r = simworld("run", "--seed", "0", "--scenario", "waive-small-fee", "--out", str(tmp_path / "r"),
                     "--no-cache")
        assert r.returncode == 0, r.stderr
        assert not cache.exists() or not any(cache.rglob("*.json"))

    def test_a_damaged_file_is_a_miss(self, cache: Path) -> None:
        """A cache file cut short (a full disk, a kill) is played again and rewritten, never trusted."""
        sc = BY_ID["split-balance-three-ways"]
        good = solution_end_states(sc, 5)
        (path,) = cache.rglob("*.json")
        path.write_bytes(path.read_bytes()[:40])
        endstates.clear_process_cache()
        again = solution_end_states(sc, 5)
        assert [s.hash for s in again] == [s.hash for s in good]
        assert orjson.loads(path.read_bytes())["format"] == endstates._FORMAT

    def test_the_key_follows_what_the_scenario_says(self, cache: Path) -> None:
        """Another solution, another seed or another snapshot in memory is another file; the same inputs, the same."""
        sc = BY_ID["split-balance-three-ways"]
        name = endstates._file(sc, 1)
        assert name == endstates._file(sc, 1)
        assert endstates._file(sc, 2) != name
        assert endstates._file(attrs.evolve(sc, solutions=sc.solutions[:1], solution_files=sc.solution_files[:1]),
                               1) != name
        grown = attrs.evolve(sc.snapshot, clock=sc.snapshot.clock.replace(year=2030))
        assert endstates._file(attrs.evolve(sc, snapshot=grown), 1) != name
        assert endstates._file(attrs.evolve(sc, snapshot=attrs.evolve(sc.snapshot, digest="")), 1) is None

    def test_a_broken_solution_is_never_kept(self, cache: Path) -> None:
        """Ground truth that does not play raises every time and leaves no file."""
        from simworld._scenario.scenario import Step
        from simworld.errors import BrokenSolutionError

        sc = BY_ID["waive-small-fee"]
        broken = attrs.evolve(sc, solutions=((Step("waive_fee", {"fee_id": "fee_nope", "reason": "x"}),),),
                              solution_files=("solution.jsonl",))
        for _ in range(2):
            with pytest.raises(BrokenSolutionError):
                solution_end_states(broken, 0)
        assert not cache.exists() or not any(cache.rglob("*.json"))


class TestWorkers:
    def test_two_workers_write_what_one_process_writes(self, tmp_path: Path, cache: Path) -> None:
        """--workers 2 writes results.jsonl and every event file byte for byte as one process does."""
        factory = build_agent_factory("random")
        one = run_suite(SLICE, [0, 1, 2], "random", factory, tmp_path / "one", trials=2)
        endstates.clear_process_cache()
        two = run_suite(SLICE, [0, 1, 2], "random", factory, tmp_path / "two", trials=2, workers=2)
        assert one.results == two.results
        assert _run_dir(tmp_path / "one") == _run_dir(tmp_path / "two")
        seen = orjson.loads((tmp_path / "two" / "run.json").read_bytes())["workers_seen"]
        assert sum(seen.values()) == len(SLICE) * 3 * 2 and len(seen) >= 1

    def test_a_worker_that_dies_loses_nothing_and_counts_nothing_twice(self, tmp_path: Path, cache: Path) -> None:
        """An agent that kills its worker process (once, on its first action anywhere) is played again in a new
        pool: every episode once, in grid order, the same bytes as a run where nothing died."""
        marker = _agent_that_dies_once(tmp_path, "killer")
        sys.path.insert(0, str(tmp_path))
        try:
            factory = build_agent_factory("python:killer:Once")
            died = run_suite(SLICE, [0, 1, 2], "python:killer:Once", factory, tmp_path / "died", workers=2)
            assert marker.exists(), "precondition: a worker died"
            calm = run_suite(SLICE, [0, 1, 2], "python:killer:Once", factory, tmp_path / "calm")
        finally:
            sys.path.remove(str(tmp_path))
        assert died.results == calm.results and died.harness_errors == 0
        assert all(r["stop_reason"] == "agent_stopped" for r in died.results)
        assert _run_dir(tmp_path / "died") == _run_dir(tmp_path / "calm")
        keys = [(r["scenario"], r["seed"], r["trial"]) for r in died.results]
        assert len(keys) == len(set(keys)) == len(SLICE) * 3

    def test_an_episode_that_always_kills_its_worker_is_the_only_one_lost(self, tmp_path: Path, cache: Path) -> None:
        """Episodes go to workers several a task; one that kills its worker every time is recorded as lost, and
        the episodes that shared its task are played again on their own and kept."""
        from simworld._episode.environment import Environment

        target = Environment(SLICE[0], 1).reset().request
        (tmp_path / "always.py").write_text(
            "import os, signal\n"
            f"TARGET = {target!r}\n"
            "class Always:\n"
            "    def act(self, observation):\n"
            "        if observation.request == TARGET:\n"
            "            os.kill(os.getpid(), signal.SIGKILL)\n"
            "        return None\n")
        sys.path.insert(0, str(tmp_path))
        try:
            factory = build_agent_factory("python:always:Always")
            died = run_suite(SLICE, [0, 1, 2], "python:always:Always", factory, tmp_path / "died", workers=2)
        finally:
            sys.path.remove(str(tmp_path))
        calm = run_suite(SLICE, [0, 1, 2], "noop", build_agent_factory("noop"), tmp_path / "calm")
        doomed = {(s.id, seed) for s in SLICE for seed in (0, 1, 2) if Environment(s, seed).reset().request == target}
        assert ("split-balance-three-ways", 1) in doomed and len(doomed) < len(SLICE) * 3
        lost = [r for r in died.results if r["harness_error"] is not None]
        assert {(r["scenario"], r["seed"]) for r in lost} == doomed
        assert all("died 2 times" in r["harness_error"] for r in lost)
        kept = [{k: v for k, v in r.items() if k != "agent"} for r in died.results if r["harness_error"] is None]
        assert kept == [{k: v for k, v in r.items() if k != "agent"} for r in calm.results
                        if (r["scenario"], r["seed"]) not in doomed]

    def test_workers_and_threads_do_not_combine(self, tmp_path: Path) -> None:
        """--workers with --concurrency is refused with one line naming both."""
        r = simworld("run", "--seed", "0", "--workers", "2", "--concurrency", "2", "--out", str(tmp_path / "r"))
        assert r.returncode == 2
        assert "--concurrency 2" in r.stderr and "--workers" in r.stderr

    def test_the_cli_runs_on_workers(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """simworld run --workers 2 from the command line: the same results.jsonl as without, and the progress
        line says how many episodes each worker played."""
        monkeypatch.setenv("SIMWORLD_PROGRESS_EVERY", "0")
        a = simworld("run", "--seeds", "0..1", "--out", str(tmp_path / "a"))
        b = simworld("run", "--seeds", "0..1", "--workers", "2", "--out", str(tmp_path / "b"))
        assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
        assert _run_dir(tmp_path / "a") == _run_dir(tmp_path / "b")
        last = [line for line in b.stderr.splitlines() if line.startswith("progress: ")][-1]
        played = [int(part.split("=")[1]) for part in last.split(", workers ")[1].split()]
        assert sum(played) == int(last.split()[1].split("/")[0])


def test_ray_writes_what_one_process_writes(tmp_path: Path, cache: Path) -> None:
    """--executor ray on a local Ray instance (2 CPUs, started and stopped here): the same bytes as a local run."""
    ray = pytest.importorskip("ray", reason="Ray is in the test extra; CI installs it")
    factory = build_agent_factory("random")
    local = run_suite(SLICE, [0, 1], "random", factory, tmp_path / "local")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_suite(SLICE, [0, 1], "random", factory, tmp_path / "ray", executor="ray")
    finally:
        ray.shutdown()
    assert local.results == remote.results
    assert _run_dir(tmp_path / "local") == _run_dir(tmp_path / "ray")
    meta = orjson.loads((tmp_path / "ray" / "run.json").read_bytes())
    assert meta["executor"] == "ray" and sum(meta["workers_seen"].values()) == len(SLICE) * 2


def test_a_ray_worker_that_dies_is_retried_and_counted_once(tmp_path: Path, cache: Path) -> None:
    """On Ray, an agent that kills its worker process (once, on its first action anywhere) has its task retried
    by Ray: every episode once, no harness error, the same bytes as a local run where nothing died."""
    ray = pytest.importorskip("ray", reason="Ray is in the test extra; CI installs it")
    marker = _agent_that_dies_once(tmp_path, "raykiller")
    sys.path.insert(0, str(tmp_path))
    try:
        factory = build_agent_factory("python:raykiller:Once")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}})
        try:
            died = run_suite(SLICE, [0, 1], "python:raykiller:Once", factory, tmp_path / "ray", executor="ray")
        finally:
            ray.shutdown()
        assert marker.exists(), "precondition: a Ray worker died"
        calm = run_suite(SLICE, [0, 1], "python:raykiller:Once", factory, tmp_path / "calm")
    finally:
        sys.path.remove(str(tmp_path))
    assert died.results == calm.results and died.harness_errors == 0
    assert _run_dir(tmp_path / "ray") == _run_dir(tmp_path / "calm")
    keys = [(r["scenario"], r["seed"], r["trial"]) for r in died.results]
    assert len(keys) == len(set(keys)) == len(SLICE) * 2
    meta = orjson.loads((tmp_path / "ray" / "run.json").read_bytes())
    assert sum(meta["workers_seen"].values()) == len(SLICE) * 2


def test_help_imports_nothing_heavy() -> None:
    """simworld --help loads the command line alone: no engine, no attrs, orjson, freezegun or hypothesis."""
    code = ("import sys; sys.argv = ['simworld', '--help']\n"
            "from simworld.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('simworld', 'attr', 'orjson', 'freezegun', "
            "'hypothesis', 'ray'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    loaded = set(ast.literal_eval(r.stdout.strip().splitlines()[-1]))
    # the face, the command line (served as simworld.cli), the errors and the closed vocabularies; no engine
    assert loaded <= {"simworld", "simworld.cli", "simworld._edges", "simworld._edges.cli", "simworld.errors",
                      "simworld._world", "simworld._world.vocab"}, loaded


def test_the_package_exports_on_first_use() -> None:
    """import simworld is light, and every public name still resolves (to the object its module defines)."""
    import simworld
    from simworld._episode.environment import Environment

    assert simworld.Environment is Environment
    for name in simworld.__all__:
        assert getattr(simworld, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        simworld.nope  # noqa: B018


def test_the_disk_cache_stays_within_its_bound(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep of fresh seeds writes a file per (scenario, seed); SIMWORLD_CACHE_MAX_MB bounds what they take: each
    of the 256 folders holds at most its share once a write trims it, the oldest go first, and an end state whose
    file was removed is played again to the same state."""
    from simworld._world.diskcache import trim_folder

    sc = BY_ID["waive-small-fee"]
    per_folder = 3 * 4096  # about two of this scenario's files
    monkeypatch.setenv("SIMWORLD_CACHE_MAX_MB", repr(per_folder * 256 / 2**20))
    seeds = range(400)
    played = {seed: [s.hash for s in solution_end_states(sc, seed)] for seed in seeds}
    files = list(cache.rglob("*.json"))
    assert 0 < len(files) < len(seeds)  # the bound removed some
    used: dict[Path, int] = {}
    for f in files:
        used[f.parent] = used.get(f.parent, 0) + (f.stat().st_blocks * 512 or f.stat().st_size)
    assert max(used.values()) <= per_folder  # a share of under 8 typical files: trimmed after every write
    endstates.clear_process_cache()
    assert {seed: [s.hash for s in solution_end_states(sc, seed)] for seed in seeds} == played

    # The least recently used go first, down to three quarters of the budget; under it, nothing is removed. A file
    # written first but read last (f0) is kept.
    folder = cache / "zz"
    folder.mkdir()
    for age in range(6):
        (folder / f"f{age}").write_bytes(b"x" * 4096)
        os.utime(folder / f"f{age}", ns=(age * 10**9, age * 10**9))
    os.utime(folder / "f0", ns=(10 * 10**9, 0))  # read after every other was written
    size = (folder / "f0").stat().st_blocks * 512 or 4096
    assert trim_folder(str(folder), 6 * size) == 0
    assert trim_folder(str(folder), 4 * size) == 3
    assert sorted(p.name for p in folder.iterdir()) == ["f0", "f4", "f5"]


def test_a_cache_hit_marks_its_file_used(cache: Path) -> None:
    """Reading an end state from its file sets the file's access time to now and keeps its write time: a trim
    removes files used less recently first, whenever they were written."""
    sc = BY_ID["split-balance-three-ways"]
    played = [s.hash for s in solution_end_states(sc, 4)]
    (path,) = cache.rglob("*.json")
    os.utime(path, ns=(10**9, 2 * 10**9))
    endstates.clear_process_cache()
    assert [s.hash for s in solution_end_states(sc, 4)] == played  # read from the file
    after = path.stat()
    assert after.st_mtime_ns == 2 * 10**9 and after.st_atime_ns > 10**18


def test_a_long_sweep_stays_near_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written into the cache's 256 folders, as many as 1.5 budgets' worth, each counted as a run counts
    its own: the folders hold at most 1.25 budgets at the end (the schedule's promise is about 1.125), and most of
    a budget's worth is still there (a trim removes the oldest down to three quarters of a share, no more)."""
    from simworld._world import diskcache

    share = 16 * 8192  # 16 typical files a folder: a folder is trimmed once in two of the files written to it
    monkeypatch.setenv("SIMWORLD_CACHE_MAX_MB", repr(share * diskcache.FOLDERS / 2**20))
    budget = diskcache.cache_budget()
    import hashlib

    for n in range(3 * budget // 2 // 8192):
        folder = tmp_path / hashlib.blake2b(b"%d" % n).hexdigest()[:2]  # spread as a file's name spreads it
        folder.mkdir(exist_ok=True)
        (folder / f"{n}.json").write_bytes(b"x" * 5000)  # 8 KB of the disk, a typical file
        diskcache.wrote(str(folder))
    used = sum(f.stat().st_blocks * 512 or f.stat().st_size for f in tmp_path.rglob("*.json"))
    assert budget // 2 < used <= budget * 5 // 4, (used, budget)


@pytest.mark.parametrize("value", ["lots", "-3", "0", "nan", "inf", "1e999"])
def test_a_bad_cache_bound_is_named_before_any_work(tmp_path: Path, value: str) -> None:
    """SIMWORLD_CACHE_MAX_MB set to anything but a size above 0: one line naming it and how to fix it, status 2, and
    no run directory, through the plain ``run`` reading and the full command line alike."""
    env = {**os.environ, "SIMWORLD_CACHE_MAX_MB": value, "SIMWORLD_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["run", "--seed", "1", "--out", "o"], ["run", "--seed", "1", "--out", "o", "--trials", "01"],
                 ["check", "--scenario", "waive-small-fee"]):
        done = subprocess.run([sys.executable, "-m", "simworld", *args], capture_output=True, text=True, cwd=tmp_path,
                              env=env, timeout=300)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith(f"simworld: error: SIMWORLD_CACHE_MAX_MB={value!r} is not a size"), done.stderr
        assert "megabytes above 0" in done.stderr and done.stdout == ""
    assert not (tmp_path / "o").exists() and not (tmp_path / "cache").exists()


def test_a_tools_code_changed_in_place_is_another_key(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's code is hashed once per tool, function and code object: the same tool whose function is given other
    code (a debugger's or a hot reload's edit) names another file, and giving back the first code names the first
    file again."""
    import types

    from simworld import tools

    sc = BY_ID["waive-small-fee"]
    real = tools.TOOLS["waive_fee"]
    fn = types.FunctionType(real.fn.__code__, real.fn.__globals__, real.fn.__name__, real.fn.__defaults__,
                            real.fn.__closure__)
    fn.__kwdefaults__ = real.fn.__kwdefaults__
    monkeypatch.setitem(tools.TOOLS, "waive_fee", attrs.evolve(real, fn=fn))
    key = endstates._file(sc, 0)
    assert key is not None and endstates._file(sc, 0) == key
    first = fn.__code__
    fn.__code__ = first.replace(co_consts=(*first.co_consts, "another constant"))
    assert endstates._file(sc, 0) != key
    fn.__code__ = first
    assert endstates._file(sc, 0) == key
    assert endstates._file(sc, 1) != key


def test_a_tool_replaced_at_run_time_is_not_served_from_the_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End states played with one implementation of a tool are not reused once another is registered (in memory
    or on disk), and the disk key is the same in another process under another hash seed."""
    from simworld import tools
    from simworld.errors import BrokenSolutionError, ToolArgumentError

    sc = BY_ID["waive-small-fee"]
    solution_end_states(sc, 0)
    key = endstates._file(sc, 0)
    code = ("import os; from simworld import endstates; from simworld.scenario import load_suite; "
            "(s,) = load_suite(None, ['waive-small-fee']); print(endstates._file(s, 0))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": "4242"})
    assert other.stdout.strip() == str(key), other.stderr
    real = tools.TOOLS["waive_fee"]

    def broken(world: object, **kwargs: object) -> dict[str, object]:
        raise ToolArgumentError("waive_fee: broken on purpose")

    monkeypatch.setitem(tools.TOOLS, "waive_fee", attrs.evolve(real, fn=broken))
    assert endstates._file(sc, 0) != key
    with pytest.raises(BrokenSolutionError, match="broken on purpose"):
        solution_end_states(sc, 0)
