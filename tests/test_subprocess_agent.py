"""cmd: agents and the episode's deadline: one that stops reading, or never answers, is a timeout, and is killed."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import copy_suite

from simworld._agents.kinds import build_agent_factory
from simworld._agents.process import SubprocessAgent
from simworld._episode.environment import Environment
from simworld._episode.episode import Episode
from simworld._episode.play import play
from simworld._scenario.scenario import load_suite
from simworld._world.clock import TimeGuard, wall_monotonic

SID = "waive-small-fee"
TIMEOUT_S = 2

# Prints a pile of actions without ever reading stdin: the harness's observations (about 14 KB each)
# fill the pipe after a few steps. Its child shares its process group and must die with it.
NEVER_READS = """\
import subprocess, sys, time
subprocess.Popen(['sleep', '300'])
for _ in range(200):
    sys.stdout.write('{"tool": "find_customer", "args": {"query": "Jon Park"}}\\n')
sys.stdout.flush()
time.sleep(300)
"""

# Reads its first observation, then thinks forever.
NEVER_ANSWERS = """\
import subprocess, sys, time
subprocess.Popen(['sleep', '300'])
sys.stdin.readline()
time.sleep(300)
"""

# Answers eight times before reading anything, then reads all eight observations: the harness must
# have waited for room in the pipe and written each one whole.
READS_LATE = """\
import json, sys, time
for _ in range(8):
    sys.stdout.write('{"tool": "find_customer", "args": {"query": "Jon Park"}}\\n')
sys.stdout.flush()
time.sleep(1.0)
seen = [json.loads(sys.stdin.readline()) for _ in range(8)]
whole = all(o["type"] == "observation" and o["step"] == i for i, o in enumerate(seen))
sys.stdout.write(json.dumps({"tool": "decline", "args": {"reason": f"whole={whole}"}}) + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""


def _live_members(pgid: int) -> list[int]:
    """Live processes in the group (a killed child may linger as a zombie until its new parent reaps it)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live


def _group_gone(pgid: int) -> bool:
    """The group has no live process, allowing a few seconds for SIGKILL to land."""
    until = wall_monotonic() + 5
    while _live_members(pgid) and wall_monotonic() < until:
        threading.Event().wait(0.05)
    return not _live_members(pgid)


def _play(tmp_path: Path, source: str, timeout_s: float = TIMEOUT_S, **budget: Any) -> tuple[Episode, float, int]:
    """Play one episode of the script as a cmd: agent under freezegun, as simworld run does.

    Returns the episode, the wall seconds it took and the agent's pid (its process group).
    A harness that blocks for good fails the test instead of hanging it.
    """
    suite = copy_suite(tmp_path, SID, budget={"max_steps": 200, "timeout_s": timeout_s, **budget})
    (scenario,) = load_suite(suite, [SID])
    script = tmp_path / "agent.py"
    script.write_text(source)
    made: list[SubprocessAgent] = []
    spec = build_agent_factory(f"cmd:{sys.executable} {script}")

    def factory(sc: Any, seed: int, variables: dict[str, Any]) -> Any:
        made.append(spec(sc, seed, variables))
        return made[-1]

    box: list[Episode] = []

    def run() -> None:
        with TimeGuard() as guard:
            box.append(play(Environment(scenario, 0, agent_name="cmd", guard=guard), factory))

    began = wall_monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout_s + 30)
    assert not worker.is_alive(), "the harness blocked on the agent process"
    return box[0], wall_monotonic() - began, made[0].proc.pid


class TestAgentThatNeverReads:
    def test_full_pipe_ends_as_timeout(self, tmp_path: Path) -> None:
        """An agent that answers but never reads stdin fills the pipe; the episode ends as timeout on time."""
        episode, took, pid = _play(tmp_path, NEVER_READS)
        assert episode.stop_reason == "timeout", episode.error
        assert "did not read its observation" in (episode.error or "")
        assert 2 <= len(episode.events) < 200  # it played a few steps, then the pipe was full
        assert took < TIMEOUT_S + 10
        assert _group_gone(pid), "the agent's process group is still alive"


class TestAgentThatNeverAnswers:
    def test_silence_ends_as_timeout(self, tmp_path: Path) -> None:
        """An agent that reads its observation but never answers ends as timeout (not agent_error), killed."""
        episode, took, pid = _play(tmp_path, NEVER_ANSWERS)
        assert episode.stop_reason == "timeout", episode.error
        assert "gave no action within the 2 s timeout; it was killed" in (episode.error or "")
        assert episode.events == ()
        assert took < TIMEOUT_S + 10
        assert _group_gone(pid), "the agent's process group is still alive"


class TestAgentThatReadsLate:
    @pytest.mark.parametrize("timeout_s", [30])
    def test_observations_arrive_whole(self, tmp_path: Path, timeout_s: int) -> None:
        """Observations written while the pipe is full are delivered whole, in order, once the agent reads."""
        episode, _, pid = _play(tmp_path, READS_LATE, timeout_s=timeout_s)
        assert (episode.stop_reason, episode.outcome) == ("terminal", "decline"), episode.error
        assert episode.events[-1].args == {"reason": "whole=True"}
        assert len(episode.events) == 9
        assert _group_gone(pid)
