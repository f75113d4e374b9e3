"""What a run does once, done only as needed: freezegun whenever foreign code may run in its episodes (and only
then); simworld's version as importlib.metadata gives it."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import ROOT, copy_suite

from simworld._agents.kinds import build_agent_factory
from simworld._running import runner
from simworld._running.runner import own_code_only, platform_name, run_header, simworld_version
from simworld._scenario.scenario import load_suite
from simworld._world import hashing

#: An agent that writes down what datetime.now() and the observation say the time is, then stops.
CLOCK_AGENT = '''
import json, sys
from datetime import datetime

class Agent:
    def act(self, observation):
        with open("seen.json", "w") as f:
            json.dump({"now": datetime.now().isoformat(), "simulated": observation.now}, f)
        return None
'''
GRADER = '''
from simworld.verdict import Check, Verdict

def fine(episode):
    return Verdict.from_checks([Check("fine", True, "always")])
'''


def console_run(tmp_path: Path, args: list[str], *, before: str = "",
                after: str = "") -> subprocess.CompletedProcess[str]:
    """``simworld run --seed 1 ARGS --out TMP/out`` through the console entry point, as `simworld run` starts, in a
    process of its own with the disk cache off: ``before`` run first; with ``after``, main's exit is caught and
    ``after`` run once it returns (else the process exits as main makes it)."""
    code = (f"import sys\n{before}\nfrom simworld._edges.launch import main\n"
            f"sys.argv = ['simworld', 'run', '--seed', '1', *{args!r}, '--out', sys.argv[1]]\n"
            + (f"try:\n    main()\nexcept SystemExit:\n    pass\n{after}" if after else "main()"))
    return subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "SIMWORLD_NO_CACHE": "1"})


class TestOwnCodeOnly:
    @pytest.mark.parametrize("agent", ["reference", "noop", "random", "drift:resplit", "scripted:steps.jsonl"])
    def test_simworlds_own_agents_over_the_bundled_suite(self, agent: str) -> None:
        """The built-in agents over the bundled suite (built-in graders and tools only) run no foreign code."""
        assert own_code_only(agent, load_suite(None, ["waive-small-fee", "split-balance-three-ways"]))

    @pytest.mark.parametrize("agent", ["python:my_agent:Agent", "cmd:python agent.py", "openai:gpt-4o-mini",
                                       "referenceX", "drift"])
    def test_any_other_agent_is_foreign(self, agent: str) -> None:
        """A user's agent (python:, cmd:) or a model's loop (openai:) is foreign code, and so is an unknown spec."""
        assert not own_code_only(agent, load_suite(None, ["waive-small-fee"]))

    @pytest.mark.parametrize("key, value", [("graders", [{"grader": "guard_graders:fine"}]),
                                            ("hooks", {"pre_grade": ["guard_graders:fine"]}),
                                            ("hooks", {"post_run": ["simworld.export:openai_hook"]})])
    def test_a_scenarios_own_grader_or_hook_is_foreign(self, tmp_path: Path, key: str, value: object) -> None:
        """A grader or hook a scenario names (not one of graders/) makes even the reference agent's run foreign."""
        (tmp_path / "guard_graders.py").write_text(GRADER)
        suite = copy_suite(tmp_path, "waive-small-fee", **{key: value})
        try:
            scenarios = load_suite(suite)
        finally:
            sys.path[:] = [p for p in sys.path if p != str(tmp_path)]
            sys.modules.pop("guard_graders", None)
        assert not own_code_only("reference", scenarios)


class TestThePublicApiGuardsAsTheCommandDoes:
    """``run_suite`` with its default ``guard_time``: freezegun for a run with foreign code in it, none for one of
    simworld's own agents over built-in graders and tools, as ``simworld run`` decides."""

    @staticmethod
    def _guards(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
        entered: list[bool] = []
        real = runner.TimeGuard

        class Recording(real):  # type: ignore[misc, valid-type]
            def __enter__(self) -> Any:
                entered.append(True)
                return super().__enter__()

        monkeypatch.setattr(runner, "TimeGuard", Recording)
        return entered

    @pytest.mark.parametrize("agent", ["reference", "random", "noop", "drift:resplit"])
    def test_simworlds_own_agents_run_without_freezegun(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        agent: str) -> None:
        entered = self._guards(monkeypatch)
        runner.run_suite(load_suite(None, ["waive-small-fee"]), [3], agent, build_agent_factory(agent), tmp_path)
        assert entered == []

    def test_a_factory_of_your_own_sees_simulated_time_whatever_agent_it_names(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A factory that is not build_agent_factory's own, named as one of simworld's agents: its agent's
        datetime.now() is the episode's simulated instant."""
        entered = self._guards(monkeypatch)
        seen: list[tuple[str, str]] = []

        class Clock:
            def act(self, observation: Any) -> None:
                seen.append((datetime.now().isoformat(), observation.now))

        runner.run_suite(load_suite(None, ["waive-small-fee"]), [3], "random", lambda sc, seed, v: Clock(), tmp_path)
        assert entered == [True]
        assert seen and seen[0][0] + "Z" == seen[0][1].replace(".000Z", "Z"), seen

    def test_forced_either_way(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """guard_time=True guards an own-code run; the bytes it writes are those of the unguarded run."""
        entered = self._guards(monkeypatch)
        scenarios = load_suite(None, ["waive-small-fee", "split-balance-three-ways"])
        runner.run_suite(scenarios, [3, 4], "random", build_agent_factory("random"), tmp_path / "a")
        runner.run_suite(scenarios, [3, 4], "random", build_agent_factory("random"), tmp_path / "b", guard_time=True)
        assert entered == [True]
        for name in ("results.jsonl", *(f"events/{p.name}" for p in (tmp_path / "a" / "events").iterdir())):
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run([sys.executable, "-m", "simworld", "run", "--scenario", "waive-small-fee", "--seed", "3",
                           "--out", "out", *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


class TestForeignCodeSeesSimulatedTime:
    def test_a_python_agent_reads_simulated_time(self, tmp_path: Path) -> None:
        """A python: agent's datetime.now() is the episode's simulated instant, as before."""
        (tmp_path / "clock_agent.py").write_text(CLOCK_AGENT)
        done = _run(tmp_path, "--agent", "python:clock_agent:Agent")
        assert done.returncode == 1, done.stderr  # it stops at once: the episode fails, the run goes on
        seen = orjson.loads((tmp_path / "seen.json").read_bytes())
        assert seen["now"] + "Z" == seen["simulated"].replace(".000Z", "Z"), seen

    def test_an_own_code_run_writes_the_bytes_a_guarded_one_does(self, tmp_path: Path) -> None:
        """The reference agent's results and events are the same with freezegun (a custom grader that passes
        makes the run foreign) as without: only foreign code ever saw the difference."""
        (tmp_path / "guard_graders.py").write_text(GRADER)
        plain = _run(tmp_path, "--agent", "random")
        assert plain.returncode in (0, 1), plain.stderr
        bare = {p.name: p.read_bytes() for p in (tmp_path / "out" / "events").iterdir()}
        line = orjson.loads((tmp_path / "out" / "results.jsonl").read_bytes())
        suite = copy_suite(tmp_path / "s", "waive-small-fee", graders=[{"grader": "guard_graders:fine"}])
        guarded = _run(tmp_path, "--agent", "random", "--suite", str(suite), "--overwrite")
        assert guarded.returncode in (0, 1), guarded.stderr
        assert {p.name: p.read_bytes() for p in (tmp_path / "out" / "events").iterdir()} == bare
        other = orjson.loads((tmp_path / "out" / "results.jsonl").read_bytes())
        assert other["checks"] == [*line["checks"], {"name": "fine", "passed": True, "detail": "always"}]
        assert {k: v for k, v in other.items() if k not in ("checks", "parts", "suite")} == \
            {k: v for k, v in line.items() if k not in ("checks", "parts", "suite")}


class TestVersion:
    def test_the_installed_version_as_importlib_metadata_gives_it(self) -> None:
        """simworld_version() is the version the installed package's metadata says: the packaging reads it from
        simworld/_running/version.py, the one place it is written."""
        assert simworld_version() == importlib.metadata.version("simworld")

    def test_a_run_never_reads_the_package_metadata(self, tmp_path: Path) -> None:
        """A run (the console entry point, as `simworld run` starts) learns its version without importlib.metadata
        (about 20 ms of imports at every start)."""
        done = console_run(tmp_path, ["--scenario", "cancel-midterm-refund"],
                           after="print('importlib.metadata' in sys.modules)")
        assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-2000:]

    def test_a_run_leaves_its_objects_to_the_exit_not_to_the_collector(self, tmp_path: Path) -> None:
        """The console entry point freezes what the run made before it exits, so that the collector's passes as
        the interpreter shuts down skip them; the run's files are all written first."""
        done = console_run(tmp_path, ["--scenario", "waive-small-fee"],
                           before="import atexit, gc; atexit.register(lambda: print('frozen', gc.get_freeze_count()))")
        assert done.returncode == 0, done.stderr[-2000:]
        assert int(done.stdout.strip().splitlines()[-1].split()[1]) > 10_000
        assert len((tmp_path / "out" / "results.jsonl").read_bytes().splitlines()) == 1


class TestWhatARunImports:
    #: Modules a run of simworld's own agents has no use for, imported where they are needed instead: calendar
    #: (and its locale: the days of a month are counted in simworld._world.dates), traceback (a failure's
    #: description), queue (a deadline's worker, for a foreign agent) and shutil (a merge across file systems);
    #: subprocess (run.json's platform is read without `uname -p`) and hashlib with OpenSSL's _hashlib (BLAKE2b
    #: comes from _blake2).
    NOT_IMPORTED = ("calendar", "traceback", "queue", "shutil", "subprocess", "hashlib", "_hashlib")

    def test_a_run_never_imports_what_it_does_not_use(self, tmp_path: Path) -> None:
        """A run of the reference agent (the console entry point, as `simworld run` starts) finishes without
        importing any of NOT_IMPORTED: each costs every start a millisecond or more."""
        done = console_run(tmp_path, ["--scenario", "cancel-midterm-refund", "--scenario", "move-due-day-fifteenth"],
                           after=f"print(sorted(m for m in {self.NOT_IMPORTED!r} if m in sys.modules))")
        assert (tmp_path / "out" / "results.jsonl").exists(), done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:] + done.stderr[-2000:]



class TestBlake2b:
    @pytest.mark.parametrize("data, size", [(b"", 16), (b"holdout/waive-small-fee/3", 8), (bytes(range(256)) * 9, 20),
                                            (b"\x00" * 200, 64)])
    def test_the_same_digests_as_hashlibs(self, data: bytes, size: int) -> None:
        """The BLAKE2b simworld hashes with (from _blake2, without OpenSSL) gives hashlib's bytes, at once or fed in
        parts."""
        fed = hashing.blake2b(digest_size=size)
        for start in range(0, len(data), 100):
            fed.update(data[start:start + 100])
        assert hashing.blake2b(data, digest_size=size).digest() == hashlib.blake2b(data, digest_size=size).digest()
        assert fed.hexdigest() == hashlib.blake2b(data, digest_size=size).hexdigest()

    def test_hashlibs_own_when_blake2_is_missing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An interpreter without the private _blake2 module gets hashlib's blake2b instead."""
        monkeypatch.setitem(sys.modules, "_blake2", None)  # None in sys.modules: `import _blake2` fails
        monkeypatch.delitem(sys.modules, "simworld._world.hashing")
        fresh = importlib.import_module("simworld._world.hashing")
        assert fresh.blake2b is hashlib.blake2b


class TestPlatformName:
    def test_what_platform_platform_says(self) -> None:
        """run.json's platform is platform.platform()'s string; on Linux that string with the processor left out,
        which platform.platform() leaves out itself when `uname -p` says unknown or the machine (as almost
        everywhere)."""
        assert run_header("reference")["platform"] == platform_name()
        if platform.processor() in ("", "unknown", platform.machine()):
            assert platform_name() == platform.platform()
        else:  # a processor named apart from the machine (Gentoo's CPU model): the rest is the same
            assert platform_name() == platform.platform().replace(
                "-" + platform.processor().replace(" ", "_").replace("(", "-").replace(")", "-"), "", 1)

    def test_linux_starts_no_child_process(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """On Linux the string is made from os.uname() and the C library's version, never from `uname -p`."""
        monkeypatch.setattr(sys, "platform", "linux")
        monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "box", "6.8.0-45-generic",
                                                                   "#45 SMP (x)", "aarch64")))
        monkeypatch.setattr(platform, "libc_ver", lambda: ("glibc", "2.39"))
        monkeypatch.setattr(platform, "platform", lambda: pytest.fail("platform.platform() ran"))
        assert platform_name() == "Linux-6.8.0-45-generic-aarch64-with-glibc2.39"

    @pytest.mark.parametrize("release, expected", [
        ("5.15.90.1-microsoft-standard-WSL2", "Linux-5.15.90.1-microsoft-standard-WSL2-x86_64-with-musl1.2"),
        ("4.4 (custom/build)", "Linux-4.4_-custom-build-x86_64-with-musl1.2"),
        ("unknown", "Linux-x86_64-with-musl1.2"),
    ])
    def test_cleaned_as_platform_platform_cleans(self, monkeypatch: pytest.MonkeyPatch, release: str,
                                                 expected: str) -> None:
        """Characters unfit for a file name become dashes (a space an underscore), "unknown" is dropped and dashes
        fold, as platform.platform() does."""
        monkeypatch.setattr(sys, "platform", "linux")
        monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "box", release, "#1", "x86_64")))
        monkeypatch.setattr(platform, "libc_ver", lambda: ("musl", "1.2"))
        assert platform_name() == expected

    def test_elsewhere_platform_platforms_own(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Off Linux (macOS names its processor, Windows its edition) the string is platform.platform()'s."""
        monkeypatch.setattr(sys, "platform", "darwin")
        monkeypatch.setattr(platform, "platform", lambda: "macOS-14.5-arm64-arm-64bit")
        assert platform_name() == "macOS-14.5-arm64-arm-64bit"


def _rglob_digest(scenarios: list[Any]) -> str:
    """suite_digest as it was written with pathlib: what the scandir walk must give, byte for byte."""
    h = hashing.blake2b(digest_size=16)
    for scenario in scenarios:
        h.update(f"scenario {scenario.id}\n".encode())
        for path in sorted(p for p in scenario.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(f"{path.relative_to(scenario.path).as_posix()}\n".encode())
            h.update(hashing.blake2b(path.read_bytes(), digest_size=16).digest())
        h.update(f"snapshot {scenario.snapshot.name} {scenario.snapshot.digest}\n".encode())
    return h.hexdigest()


class _Snapshot:
    name, digest = "base", "d1"


class _Scenario:
    def __init__(self, path: Path) -> None:
        self.id, self.path, self.snapshot = path.name, path, _Snapshot()


class TestSuiteDigest:
    def test_the_bundled_suite_as_rglob_hashed_it(self) -> None:
        suite = load_suite()
        assert runner.suite_digest(suite) == _rglob_digest(suite)

    def test_files_are_taken_in_rglobs_order_and_by_its_rules(self, tmp_path: Path) -> None:
        """Paths in the order of their parts ("a/b" before "a-c", though "-" sorts before "/"), hidden files, a link
        to a file, no file under a linked directory or a __pycache__, a __pycache__ file left out too."""
        one = tmp_path / "one"
        for name, text in [("task.json", "{}"), ("a/b", "1"), ("a-c", "2"), (".hidden", "3"), ("a/z/deep.jsonl", "4"),
                           ("__pycache__/x.pyc", "5"), ("a/__pycache__", "6"), ("B", "7")]:
            (one / name).parent.mkdir(parents=True, exist_ok=True)
            (one / name).write_text(text)
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "far.txt").write_text("8")
        (one / "linked-dir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
        (one / "linked-file").symlink_to(one / "a" / "b")
        (one / "dangling").symlink_to(tmp_path / "nothing")
        two = tmp_path / "two"
        two.mkdir()
        suite = [_Scenario(one), _Scenario(two)]
        assert runner.suite_digest(suite) == _rglob_digest(suite)
        before = runner.suite_digest(suite)
        (one / "a" / "z" / "deep.jsonl").write_text("9")  # the same size, other bytes
        assert runner.suite_digest(suite) != before
        assert runner.suite_digest(suite) == _rglob_digest(suite)

    def test_a_suite_under_a_pycache_directory_hashes_no_file(self, tmp_path: Path) -> None:
        inside = tmp_path / "__pycache__" / "s"
        inside.mkdir(parents=True)
        (inside / "task.json").write_text("{}")
        assert runner.suite_digest([_Scenario(inside)]) == _rglob_digest([_Scenario(inside)])
