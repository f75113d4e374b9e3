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
"""

from __future__ import annotations

import ctypes
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from simworld.errors import AgentTimeout

__all__ = ["DeadlineCaller", "bounded", "is_bounded"]

T = TypeVar("T")
_STOP = object()


def bounded(factory: T) -> T:
    """Mark an agent factory whose agents are untrusted code: each of their calls gets a deadline."""
    factory.deadline_bound = True  # type: ignore[attr-defined]
    return factory


def is_bounded(factory: Any) -> bool:
    """Whether ``factory`` was marked with :func:`bounded`."""
    return bool(getattr(factory, "deadline_bound", False))


class DeadlineCaller:
    """One worker thread that runs calls for one episode, each waited for at most N seconds."""

    def __init__(self, name: str = "simworld-agent") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def call(self, fn: Callable[..., T], *args: Any, seconds: float, what: str = "the agent") -> T:
        """Run ``fn(*args)`` on the worker; return its value, re-raise its exception, or raise AgentTimeout."""
        if seconds <= 0:
            raise AgentTimeout(f"{what} had no time left before the episode's timeout")
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
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
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(AgentTimeout))
