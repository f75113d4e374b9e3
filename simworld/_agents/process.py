"""``--agent cmd:"COMMAND"``: an agent in another process, in any language, speaking JSON lines.

The protocol, one JSON object per line:

- simworld writes to the agent's stdin one **observation** per step: the same fields a
  Python agent gets (``request``, ``policy``, ``tools``, ``step``, ``now``, ``last_tool``,
  ``last_status``, ``last_result``, ``resumed``, ``history``), plus ``"type": "observation"``;
- the agent answers on stdout with one **action**: ``{"tool": NAME, "args": {...}}``
  (optionally with ``"usage": {"input_tokens": N, "output_tokens": M}``, and with
  ``"say": TEXT``, words to the customer written with the call), ``{"say": TEXT}`` (words
  alone; the episode goes on), ``{"say": TEXT, "stop": true}`` (a last word, then stop), or
  ``null`` to stop. What the agent says is recorded and judged as a message to the customer;
- when the episode ends simworld writes ``{"type": "end", "outcome": ..., "stop_reason": ...}``
  and closes stdin; the agent should exit.

One process runs one episode (a crash after a recovery scenario's crash point starts a
fresh one). Anything the agent writes to stderr is kept (the last lines go into the
error if it fails). A process that exits or prints a line that is not JSON is recorded
as errored (``agent_error``), with the reason; one that gives no action, or stops reading
its observations, within the episode's ``timeout_s`` (counted from its start) is recorded
as ``timeout``. Either way its whole process group is killed, so nothing is left behind,
and the run goes on. If the run itself is killed (``kill -9``), the agent's stdin reaches
end of file, and any process it left behind is killed within a second or so
(:mod:`simworld._episode.fate`). A line that is JSON but absurd (nested past orjson's depth limit, a
number past a double, a lone surrogate escape, or values past :mod:`simworld._world.actions`'
limits) is not fatal: it comes back to the agent as an error result, like a wrong shape.

Observations are written to a non-blocking pipe and waited on with ``poll``, so an agent
that never reads its stdin cannot block the harness once the pipe's buffer is full.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import subprocess
import threading
from collections import deque
from typing import Any

import orjson

from simworld._episode.episode import Observation
from simworld._episode.fate import share_fate
from simworld._world.actions import MAX_DEPTH, Refused
from simworld._world.clock import wall_monotonic
from simworld.errors import AgentTimeout

__all__ = ["AgentProcessError", "SubprocessAgent"]


class AgentProcessError(RuntimeError):
    """The agent process crashed or broke the protocol (the episode is recorded as errored)."""

    located = False  # its message says what happened; where in simworld it was noticed does not matter


#: How long the closing ``end`` message may wait for an agent that does not read it.
END_GRACE_S = 1.0
#: How long an agent whose pipe closed may take to exit before it is called still running.
EXIT_GRACE_S = 0.5


def _unreadable(error: orjson.JSONDecodeError) -> str | None:
    """The problem with a line that is JSON orjson will not read, or None for a line that is not JSON at all."""
    text = str(error)
    where = f"(at char {error.pos})"
    if text.startswith("depth limit exceeded"):
        return f"the action: nested too deep to read {where}; at most {MAX_DEPTH} levels"
    if text.startswith("number is infinity when parsed as double"):
        return (f"the action: a number too large to read {where}; send amounts as decimal strings such as "
                "'12.34'")
    if "surrogate in string" in text:
        return f"the action: a string with a lone surrogate escape {where}; strings must be valid Unicode"
    return None


def _wait(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Wait up to ``seconds`` for ``proc`` to exit, on the real clock.

    ``Popen.wait(timeout=...)`` reads ``time.monotonic``, which freezegun stops during a run,
    so its timeout would never expire; this polls against a clock freezegun cannot reach.
    """
    deadline = wall_monotonic() + seconds
    pause = threading.Event()
    while proc.poll() is None and wall_monotonic() < deadline:
        pause.wait(0.01)


class SubprocessAgent:
    """Drives one agent process for one episode."""

    reads_results_only = True  # it writes what it is shown to the process, as JSON (see simworld._episode.play.Agent)

    def __init__(self, command: str, timeout_s: float) -> None:
        self.command = command
        self.argv = shlex.split(command)
        self.timeout_s = timeout_s
        self.began = wall_monotonic()
        share_fate()  # a run killed with kill -9 takes this process (and what it started) with it
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise AgentProcessError(f"cannot start agent command {command!r}: {exc.strerror or exc}") from None
        assert self.proc.stdin is not None
        os.set_blocking(self.proc.stdin.fileno(), False)  # written with a deadline: see _send
        self.closed = False
        self.lines: deque[bytes] = deque()
        self.ready = threading.Event()
        self.eof = False
        self.stderr_tail: deque[str] = deque(maxlen=20)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self.stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.stderr_reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(raw)
            self.ready.set()
        self.eof = True
        self.ready.set()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    def _why(self) -> str:
        if self.proc.poll() is not None:  # it has exited: let the reader take in what it wrote last
            self.stderr_reader.join(timeout=1.0)
        tail = " | ".join(list(self.stderr_tail)[-3:])
        return f"; stderr: {tail}" if tail else ""

    def _exit_code(self) -> int | None:
        """The agent's own exit code, or None if it is still running once its pipe has closed.

        A pipe closes as its process exits, a moment before the exit can be collected: wait briefly for it.
        """
        _wait(self.proc, EXIT_GRACE_S)
        return self.proc.poll()

    def _deadline(self) -> float:
        return self.began + self.timeout_s

    def _send(self, message: dict[str, Any], deadline: float) -> None:
        """Write one line to the agent's stdin, waiting for room in the pipe until ``deadline`` (wall clock)."""
        if self.closed or self.proc.stdin is None:
            raise AgentProcessError(f"agent process was already closed (code {self.proc.poll()})")
        data = memoryview(orjson.dumps(message) + b"\n")
        fd = self.proc.stdin.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        while data:
            try:
                data = data[os.write(fd, data):]
                continue
            except BlockingIOError:  # the pipe is full: the agent has not read what it was sent
                pass
            except OSError:
                code = self._exit_code()
                self.close()
                if code is None:
                    raise AgentProcessError("agent process closed its stdin before reading its observation (it had "
                                            f"not exited); it was stopped{self._why()}") from None
                raise AgentProcessError(f"agent process exited (code {code}) before reading its "
                                        f"observation{self._why()}") from None
            remaining = deadline - wall_monotonic()
            if remaining <= 0:
                self.close(grace=0)
                raise AgentTimeout(f"agent process did not read its observation within the {self.timeout_s:g} s "
                                   f"timeout; it was killed{self._why()}")
            poller.poll(min(remaining, 1.0) * 1000)  # poll's own timeout: freezegun cannot stop it

    def act(self, observation: Observation) -> dict[str, Any] | Refused | None:
        """Send the observation; wait (within the episode's timeout) for one action line.

        Raises:
            AgentTimeout: no action (or the observation not read) within the timeout; the process is killed.
            AgentProcessError: the process exited or printed a line that is not JSON; it is killed.
        """
        self._send({"type": "observation", **observation.to_json()}, self._deadline())
        while not self.lines:
            if self.eof:
                code = self._exit_code()
                self.close()
                if code is None:  # its code now would be that of our own kill, not anything it did
                    raise AgentProcessError("agent process closed its stdout without an action (it had not "
                                            f"exited); it was stopped{self._why()}")
                raise AgentProcessError(f"agent process exited with code {code} without an action{self._why()}")
            remaining = self._deadline() - wall_monotonic()
            if remaining <= 0:
                self.close(grace=0)
                raise AgentTimeout(f"agent process gave no action within the {self.timeout_s:g} s timeout; "
                                   f"it was killed{self._why()}")
            self.ready.clear()
            if not self.lines and not self.eof:
                self.ready.wait(min(remaining, 1.0))
        raw = self.lines.popleft()
        try:
            action = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problem = _unreadable(exc)
            if problem is not None:
                return Refused(problem)  # JSON, but absurd: an error result the agent can read
            self.close()
            shown = raw.decode("utf-8", "replace").strip()[:120]
            raise AgentProcessError(f"agent printed a line that is not JSON: {shown!r}; every stdout line must be "
                                    'one action, {"tool": NAME, "args": {...}} or null') from None
        if action is None:
            return None
        if not isinstance(action, dict):
            return {"tool": None, "args": action}  # a wrong shape is an error result the agent can read
        return action

    def end(self, outcome: str | None, stop_reason: str) -> None:
        """Tell the agent the episode is over (waiting at most END_GRACE_S to be read), then make sure it is gone."""
        with contextlib.suppress(AgentProcessError, AgentTimeout):
            self._send({"type": "end", "outcome": outcome, "stop_reason": stop_reason},
                       wall_monotonic() + END_GRACE_S)
        self.close()

    def close(self, grace: float = 0.5) -> None:
        """Close stdin, give the process ``grace`` seconds, then terminate and kill its whole process group (once).

        A process that has already run out its time gets no grace (``grace=0``).
        """
        if self.closed:
            return
        self.closed = True
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()
        _wait(self.proc, grace)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            _wait(self.proc, 2.0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # children it left in its group
