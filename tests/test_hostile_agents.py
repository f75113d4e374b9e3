"""Nothing an agent does ends or fools a run: every hostile agent ends only its own episodes, as a user runs it.

The corpus: agents that exit (``sys.exit(0)``, ``sys.exit(3)``, ``os._exit(0)``), raise ``KeyboardInterrupt``,
``GeneratorExit`` or a ``BaseException`` of their own, raise an exception that cannot be printed, fail while
being built or closed, hang, spin, return garbage, and agent processes that close their stdout or exit. Each
runs as ``simworld run`` and must end with one line per episode, the right stop reason, run.json complete and
exit status 1 (some failed), never 0 (all passed), 3 (a harness error) or 130 (interrupted).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
from helpers import ROOT, copy_suite, edit_task

SCENARIOS = ("waive-small-fee", "split-balance-three-ways")
SEEDS = "0..1"
EPISODES = len(SCENARIOS) * 2

HOSTILE = '''
import os, signal, sys, time


class Exit0:
    def act(self, obs):
        sys.exit(0)


class Exit3:
    def act(self, obs):
        sys.exit(3)


class OsExit0:
    def act(self, obs):
        os._exit(0)


class Interrupt:
    def act(self, obs):
        raise KeyboardInterrupt


class GenExit:
    def act(self, obs):
        raise GeneratorExit("bye")


class Mine(BaseException):
    pass


class RaiseMine:
    def act(self, obs):
        raise Mine("mine")


class Unprintable(Exception):
    def __str__(self):
        raise SystemExit(1)


class RaiseUnprintable:
    def act(self, obs):
        raise Unprintable()


class ExitWhileBuilt:
    def __init__(self):
        sys.exit(0)

    def act(self, obs):
        return None


class InterruptWhileClosed:
    def act(self, obs):
        return {"tool": "finish", "args": {"summary": "done"}}

    def end(self, outcome, stop_reason):
        raise KeyboardInterrupt


class Sleeper:
    def act(self, obs):
        time.sleep(10**6)


class Spinner:
    def act(self, obs):
        while True:
            pass


class Garbage:
    def __init__(self):
        self.n = 0

    def act(self, obs):
        self.n += 1
        return [object(), float("nan"), {1: 2}, "x" * 10][self.n % 4]


class Loop(dict):
    pass


class SelfContaining:
    def act(self, obs):
        loop = Loop(tool="finish")
        loop["args"] = loop
        return loop


class HostileDict(dict):
    def __iter__(self):
        raise SystemExit(0)

    def keys(self):
        raise SystemExit(0)

    def items(self):
        raise SystemExit(0)

    def get(self, *a):
        raise SystemExit(0)

    def __getitem__(self, k):
        raise SystemExit(0)


class ReturnsHostile:
    def act(self, obs):
        return HostileDict(tool="finish", args={})
'''

# name -> (agent spec, extra run options, the stop reason every episode must end with, words its error must hold)
CORPUS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "sys.exit(0)": ("python:hostile:Exit0", (), "agent_error", "SystemExit: 0"),
    "sys.exit(3)": ("python:hostile:Exit3", (), "agent_error", "SystemExit: 3"),
    "os._exit(0)": ("python:hostile:OsExit0", (), "agent_error", "os._exit(0)"),
    "KeyboardInterrupt": ("python:hostile:Interrupt", (), "agent_error", "KeyboardInterrupt"),
    "GeneratorExit": ("python:hostile:GenExit", (), "agent_error", "GeneratorExit: bye"),
    "a BaseException of its own": ("python:hostile:RaiseMine", (), "agent_error", "Mine: mine"),
    "an exception that cannot be printed": ("python:hostile:RaiseUnprintable", (), "agent_error",
                                            "could not be read"),
    "sys.exit while built": ("python:hostile:ExitWhileBuilt", (), "agent_error", "could not be built: SystemExit"),
    "KeyboardInterrupt while closed": ("python:hostile:InterruptWhileClosed", (), "terminal", ""),
    "sleeps": ("python:hostile:Sleeper", (), "timeout", "timeout"),
    "spins": ("python:hostile:Spinner", (), "timeout", "timeout"),
    "garbage": ("python:hostile:Garbage", (), "max_steps", ""),
    "self-containing action": ("python:hostile:SelfContaining", (), "max_steps", ""),
    "action that exits when read": ("python:hostile:ReturnsHostile", (), "max_steps", ""),
    "sys.exit(0) on workers": ("python:hostile:Exit0", ("--workers", "2"), "agent_error", "SystemExit: 0"),
    "KeyboardInterrupt on threads": ("python:hostile:Interrupt", ("--concurrency", "2"), "agent_error",
                                     "KeyboardInterrupt"),
    "os._exit(0) isolated": ("python:hostile:OsExit0", ("--isolate",), "agent_error", "os._exit(0)"),
    "process closes stdout": (f'cmd:{sys.executable} -c "import os,time; os.close(1); time.sleep(60)"', (),
                              "agent_error", "closed"),
    "process exits 0": (f'cmd:{sys.executable} -c "import sys; sys.exit(0)"', (), "agent_error", "exited"),
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile.py").write_text(HOSTILE)
    copy_suite(folder, *SCENARIOS)
    for sid in SCENARIOS:  # a short timeout, so the hanging agents cost seconds
        task = folder / "scenarios" / sid / "task.json"
        data = orjson.loads(task.read_bytes())
        edit_task(task, budget={**data["budget"], "timeout_s": 1})
    return folder


def _run(home: Path, out: Path, agent: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "simworld", "run", "--suite", str(home / "scenarios"), "--agent",
                           agent, "--seeds", SEEDS, *options, "--out", str(out)],
                          capture_output=True, text=True, cwd=home, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


class TestCorpus:
    @pytest.mark.parametrize("name", list(CORPUS))
    def test_a_hostile_agent_ends_only_its_episodes(self, home: Path, name: str) -> None:
        """The run ends, writes one line per episode with the expected stop reason, is complete, and exits 1."""
        agent, options, stop, words = CORPUS[name]
        out = home / f"out-{uuid.uuid4().hex[:8]}"
        done = _run(home, out, agent, *options)
        assert done.returncode == 1, (name, done.returncode, done.stderr[-2000:])
        lines = [orjson.loads(line) for line in (out / "results.jsonl").read_bytes().splitlines()]
        assert len(lines) == EPISODES, (name, len(lines))
        assert {line["stop_reason"] for line in lines} == {stop}, (name, [line["error"] for line in lines])
        assert all(words in (line["error"] or "") for line in lines), (name, [line["error"] for line in lines])
        assert all(line["harness_error"] is None and not line["passed"] for line in lines)
        meta = orjson.loads((out / "run.json").read_bytes())
        assert meta["status"] == "complete" and meta["episodes"] == EPISODES
        assert "interrupted" not in done.stderr and "Traceback" not in done.stderr

    def test_an_agent_that_ends_its_worker_is_recorded_as_lost(self, home: Path, tmp_path: Path) -> None:
        """With --isolate, an agent that kills its own process loses only its episodes, recorded (exit 3)."""
        (home / "killer.py").write_text("import os, signal\nclass Kill:\n    def act(self, obs):\n"
                                        "        os.kill(os.getpid(), signal.SIGKILL)\n")
        done = _run(home, tmp_path / "o", "python:killer:Kill", "--isolate")
        assert done.returncode == 3, done.stderr[-2000:]
        lines = [orjson.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_bytes().splitlines()]
        assert len(lines) == EPISODES and all("died 2 times" in line["error"] for line in lines)


SLOW = "import time\nclass Slow:\n    def act(self, obs):\n        time.sleep(0.2)\n        return None\n"


class TestCtrlC:
    def test_a_real_ctrl_c_still_interrupts(self, home: Path, tmp_path: Path) -> None:
        """SIGINT from the user stops the run (exit 130, run.json interrupted); --resume finishes it."""
        (home / "slow.py").write_text(SLOW)
        argv = [sys.executable, "-m", "simworld", "run", "--suite", str(home / "scenarios"),
                "--agent", "python:slow:Slow", "--seeds", "0..19", "--out", str(tmp_path / "o")]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=home, env=env)
        results = tmp_path / "o" / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (results.exists() and results.read_bytes().count(b"\n") >= 2):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err[-2000:]
        meta = orjson.loads((tmp_path / "o" / "run.json").read_bytes())
        assert meta["status"] == "interrupted" and 2 <= meta["episodes"] < 40
        resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, cwd=home, env=env, timeout=240)
        assert resumed.returncode == 1 and results.read_bytes().count(b"\n") == 40


DISPATCH = HOSTILE + '''

CASES = {"exit0": Exit0, "exit3": Exit3, "os_exit": OsExit0, "interrupt": Interrupt, "generator_exit": GenExit,
         "own_base_exception": RaiseMine, "unprintable": RaiseUnprintable, "sleeps": Sleeper, "spins": Spinner,
         "garbage": Garbage, "self_containing": SelfContaining, "exits_when_read": ReturnsHostile}


class Dispatch:
    """Plays the hostile agent its scenario's request names ([case:NAME])."""

    def __init__(self):
        self.agent = None

    def act(self, obs):
        if self.agent is None:
            self.agent = CASES[obs.request.rsplit("[case:", 1)[1].split("]")[0]]()
        return self.agent.act(obs)
'''

# case -> the stop reason its episode must end with
ONE_RUN = {"exit0": "agent_error", "exit3": "agent_error", "os_exit": "agent_error", "interrupt": "agent_error",
           "generator_exit": "agent_error", "own_base_exception": "agent_error", "unprintable": "agent_error",
           "sleeps": "timeout", "spins": "timeout", "garbage": "max_steps", "self_containing": "max_steps",
           "exits_when_read": "max_steps"}


def test_every_hostile_agent_in_one_run(tmp_path: Path) -> None:
    """One run over a suite with one scenario per hostile behaviour: it ends, writes one line per episode with the
    right stop reason, is complete, and exits 1."""
    source = ROOT / "scenarios" / SCENARIOS[0]
    for case in ONE_RUN:
        target = tmp_path / "scenarios" / f"hostile-{case.replace('_', '-')}"
        shutil.copytree(source, target)
        data = orjson.loads((target / "task.json").read_bytes())
        data["id"] = target.name
        data["budget"] = {**data["budget"], "timeout_s": 1}
        (target / "task.json").write_bytes(orjson.dumps(data))
        (target / "prompt.md").write_text((source / "prompt.md").read_text() + f"\n[case:{case}]\n")
    shutil.copytree(ROOT / "snapshots", tmp_path / "snapshots")
    (tmp_path / "dispatch.py").write_text(DISPATCH)
    done = subprocess.run([sys.executable, "-m", "simworld", "run", "--suite", str(tmp_path / "scenarios"),
                           "--agent", "python:dispatch:Dispatch", "--seeds", "0..1", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr[-2000:]
    lines = [orjson.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_bytes().splitlines()]
    assert len(lines) == 2 * len(ONE_RUN)
    for line in lines:
        case = line["scenario"].removeprefix("hostile-").replace("-", "_")
        assert line["stop_reason"] == ONE_RUN[case], (case, line["error"])
        assert line["harness_error"] is None and not line["passed"]
    meta = orjson.loads((tmp_path / "o" / "run.json").read_bytes())
    assert meta["status"] == "complete" and meta["episodes"] == 2 * len(ONE_RUN)
