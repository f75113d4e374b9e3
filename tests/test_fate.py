"""A run killed with ``kill -9`` leaves no process behind: workers, a local Ray's processes, agent processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes through /proc (Linux)")

# Ignores its closed stdin and SIGTERM, and starts a child in a session of its own: only a reaper finds them.
STUBBORN = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True)\n"
    "sys.stdin.readline()\n"
    "time.sleep(300)\n"
)


def _marked(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in env.split(b"\0") and state != "Z":
            found.append(int(name))
    return found


def _kill_and_watch(tmp_path: Path, *options: str, seeds: str, started: int, settle_s: float = 60) -> None:
    """Start ``simworld run``, wait until at least ``started`` marked processes besides it are running, kill -9 it,
    and require every marked process gone within a few seconds."""
    marker = f"SIMWORLD_TEST_FATE={uuid.uuid4().hex}"
    name, value = marker.split("=")
    proc = subprocess.Popen([sys.executable, "-m", "simworld", "run", "--seeds", seeds, *options,
                             "--out", str(tmp_path / "o")], cwd=tmp_path,
                            env={**os.environ, name: value, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + settle_s
    try:
        while time.monotonic() < deadline and len(_marked(marker)) < started + 1:
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.1)
        before = _marked(marker)
        assert len(before) >= started + 1, f"precondition: the run started its processes ({before})"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 5
    left = _marked(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _marked(marker)
    for pid in left:  # never leave them to the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes outlived the killed run by 5 s: {left}"


def test_workers_die_with_their_run(tmp_path: Path) -> None:
    """kill -9 of `simworld run --workers 2`: both workers are gone within 5 s (they were left blocked forever)."""
    _kill_and_watch(tmp_path, "--workers", "2", seeds="0..9999", started=2)


def test_agent_processes_and_their_children_die_with_their_run(tmp_path: Path) -> None:
    """kill -9 of a run whose cmd: agent ignores end of file and SIGTERM and left a child in another session:
    every one of them is gone within 5 s."""
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    _kill_and_watch(tmp_path, "--agent", f"cmd:{sys.executable} stubborn.py", seeds="0", started=2)


@pytest.mark.slow
def test_a_local_ray_dies_with_its_run(tmp_path: Path) -> None:
    """kill -9 of `simworld run --executor ray`: Ray's workers and its own processes are gone within 5 s."""
    _kill_and_watch(tmp_path, "--executor", "ray", seeds="0..9999", started=4, settle_s=120)
