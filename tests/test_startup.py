"""What a run does once, done only as needed: freezegun whenever foreign code may run in its episodes (and only
then); simworld's version as importlib.metadata gives it."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from helpers import ROOT, copy_suite

from simworld._running.runner import own_code_only, simworld_version
from simworld._scenario.scenario import load_suite

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
        code = ("import sys; from simworld._edges.launch import main; sys.argv = ['simworld', 'run', '--seed', '1', "
                "'--scenario', 'cancel-midterm-refund', '--out', sys.argv[1]]\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\n"
                "print('importlib.metadata' in sys.modules)")
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                              cwd=tmp_path, env={**os.environ, "SIMWORLD_NO_CACHE": "1"})
        assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-2000:]


class TestWhatARunImports:
    #: Modules a run of simworld's own agents has no use for, imported where they are needed instead: calendar
    #: (and its locale: the days of a month are counted in simworld._world.dates), traceback (a failure's
    #: description), queue (a deadline's worker, for a foreign agent) and shutil (a merge across file systems).
    NOT_IMPORTED = ("calendar", "traceback", "queue", "shutil")

    def test_a_run_never_imports_what_it_does_not_use(self, tmp_path: Path) -> None:
        """A run of the reference agent (the console entry point, as `simworld run` starts) finishes without
        importing any of NOT_IMPORTED: each costs every start a millisecond or more."""
        code = ("import sys; from simworld._edges.launch import main; sys.argv = ['simworld', 'run', '--seed', '1', "
                "'--scenario', 'cancel-midterm-refund', '--scenario', 'move-due-day-fifteenth', '--out', sys.argv[1]]\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\n"
                f"print(sorted(m for m in {self.NOT_IMPORTED!r} if m in sys.modules))")
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                              cwd=tmp_path, env={**os.environ, "SIMWORLD_NO_CACHE": "1"})
        assert (tmp_path / "out" / "results.jsonl").exists(), done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:] + done.stderr[-2000:]

