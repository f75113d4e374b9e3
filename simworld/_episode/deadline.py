"""Calling untrusted agent code with a deadline on the real clock.

A ``python:`` agent (or a model agent) runs in the harness's process, so a call that
blocks (a ``sleep``, an endless loop, a socket that never answers) would hang the
run. :class:`DeadlineCaller` runs each call on one worker thread per episode and
waits for it at most the episode's remaining seconds; a call that overruns raises
:class:`~simworld.errors.AgentTimeout` in the harness, which ends the episode as
``timeout``, and the worker is abandoned.

Python cannot kill a thread. An abandoned worker is a daemon (it never keeps the
process alive) and is sent an asynchronous ``AgentTimeout``, which stops a pure
Python loop at its next bytecode; a thread blocked inside C (a long ``sleep``, a
socket read) stops when that call returns. Either way the run has moved on.

The wait uses a lock with a timeout, which reads the C monotonic clock that
freezegun does not patch.

An agent may raise anything, ``KeyboardInterrupt`` and ``SystemExit`` included; it ends that
episode, never the run. A real Ctrl-C is told apart by :class:`InterruptWatch`: Python runs
signal handlers only in the main thread, so a ``KeyboardInterrupt`` is the user's only when
it is raised there while a SIGINT was seen; any other is the agent's.

An agent that calls ``os._exit`` would end the process with no line written and, with
``os._exit(0)``, exit status 0: a run that reads as passed. While agent calls run,
``os._exit`` called from an agent's thread raises :class:`AgentExit` in it instead, which ends
the episode as ``agent_error``; every other caller (a forked child, the harness) gets the real
one. An agent can still end the process by other means (``posix._exit``, a signal to itself,
a crash in C): ``simworld run --isolate`` (or ``--workers N``) plays episodes in worker
processes, where such a death loses only the episode.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython's C module under signal; typeshed has no stub
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from simworld.errors import AgentTimeout

__all__ = ["AgentExit", "DeadlineCaller", "InterruptWatch", "bounded", "is_bounded"]

T = TypeVar("T")
_STOP = object()


def bounded(factory: T) -> T:
    """Mark an agent factory whose agents are untrusted code: each of their calls gets a deadline."""
    factory.deadline_bound = True  # type: ignore[attr-defined]
    return factory


def is_bounded(factory: Any) -> bool:
    """Whether ``factory`` was marked with :func:`bounded`."""
    return bool(getattr(factory, "deadline_bound", False))


class AgentExit(BaseException):  # noqa: N818 - named for what the agent did, as SystemExit is
    """Raised in an agent's thread in place of ``os._exit``: the agent's episode ends, the run does not."""

    located = False  # its message names the agent's line, not this module's


_real_exit = os._exit
_guard_lock = threading.Lock()
_guarded_pid: int | None = None


def _guarded_exit(status: int) -> Any:
    thread = threading.current_thread()
    if os.getpid() == _guarded_pid and getattr(thread, "simworld_agent", False):
        caller = sys._getframe(1)
        raise AgentExit(f"the agent called os._exit({status!r}), which would have ended the run "
                        f"(at {os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno})")
    _real_exit(status)


def _guard_exit() -> None:
    """Put :func:`_guarded_exit` in place of ``os._exit`` in this process (once)."""
    global _guarded_pid
    if _guarded_pid == os.getpid():
        return
    with _guard_lock:
        _guarded_pid = os.getpid()
        os._exit = _guarded_exit


class DeadlineCaller:
    """One worker thread that runs calls for one episode, each waited for at most N seconds."""

    def __init__(self, name: str = "simworld-agent") -> None:
        import queue  # here, not at the top: a run of simworld's own agents never makes one

        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def call(self, fn: Callable[..., T], *args: Any, seconds: float, what: str = "the agent") -> T:
        """Run ``fn(*args)`` on the worker; return its value, re-raise its exception, or raise AgentTimeout."""
        if seconds <= 0:
            raise AgentTimeout(f"{what} had no time left before the episode's timeout")
        if self._thread is None:
            _guard_exit()
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self._thread.simworld_agent = True  # type: ignore[attr-defined]
            self._thread.start()
        done = threading.Event()
        box: list[Any] = []
        self._jobs.put((fn, args, box, done))
        if not done.wait(seconds):
            self._abandon()
            raise AgentTimeout(f"{what} gave no answer before the episode's timeout; the call was abandoned")
        ok, value = box
        if ok:
            return value
        raise value

    def close(self) -> None:
        """Let the worker thread end (it is a daemon either way)."""
        if self._thread is not None:
            self._jobs.put(_STOP)
            self._thread = None

    def _work(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                if job is _STOP:
                    return
                fn, args, box, done = job
                try:
                    box[:] = [True, fn(*args)]
                except AgentTimeout:  # sent by _abandon: this worker is no longer wanted
                    return
                except BaseException as exc:  # the agent's exception belongs to the harness thread
                    box[:] = [False, exc]
                done.set()
        except AgentTimeout:  # arrived between calls, after the worker was abandoned
            return

    def _abandon(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None or thread.ident is None:
            return
        self._jobs.put(_STOP)
        # Stop a pure-Python loop at its next bytecode; harmless if the thread is blocked in C or already done.
        import ctypes  # here: only a timed-out agent needs it

        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(AgentTimeout))


# signal.signal and signal.getsignal are the C module's functions wrapped to turn ints into enums both ways,
# which costs about 10 us a call (a failed enum lookup raises inside); a watch is entered for every episode
# played, solutions' included, and never needs the enums, so it calls the C functions themselves (and the signal
# module, enums and all, is not imported for it).
_SIGINT = int(_signal.SIGINT)


class InterruptWatch:
    """Tells a real Ctrl-C from a ``KeyboardInterrupt`` an agent raised, for the span of a ``with`` block.

    In the main thread, where the handler in place is Python's own or another callable, it
    installs a SIGINT handler that notes the signal and then calls the one it replaced (which
    raises ``KeyboardInterrupt``, as before); it puts the old one back on leaving. Anywhere
    else nothing is installed, and no ``KeyboardInterrupt`` is the user's: signals never reach
    another thread. A process that ignores SIGINT (a run's worker) keeps ignoring it.

    A signal the agent sends its own process (``os.kill(os.getpid(), SIGINT)``) reads as the
    user's: the two are the same signal.
    """

    __slots__ = ("_previous", "seen")

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def __enter__(self) -> InterruptWatch:
        if threading.current_thread() is threading.main_thread():
            previous = _signal.getsignal(_SIGINT)
            if callable(previous):
                self._previous = previous
                _signal.signal(_SIGINT, self._note)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            _signal.signal(_SIGINT, self._previous)
            self._previous = None

    def _note(self, signum: int, frame: Any) -> None:
        self.seen = True
        (self._previous or _signal.default_int_handler)(signum, frame)

    def is_users(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the user's Ctrl-C (to be raised again), not something the agent raised."""
        return isinstance(exc, KeyboardInterrupt) and self.seen
