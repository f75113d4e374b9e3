"""Processes a run starts end with it, however it ends (``kill -9`` included).

An agent process (``cmd:``) that ignores its closed stdin, or a local Ray instance's own
processes (whose agents outlive a killed raylet by most of a minute), would otherwise
outlive a run that was killed. :func:`share_fate` marks every process started from then
on with an environment variable holding a token of this process's own, and starts one
small reaper process that waits for this process to be gone (its stdin pipe reaches end
of file when the last holder of the other end exits, however it exits) and then kills
every process still carrying the mark. A run that ends normally has already stopped its
processes; the reaper then finds nothing.

Processes are found through ``/proc``, so this works on Linux and does nothing elsewhere.
A worker forked by ``--workers`` does not need it: it asks the kernel for a signal when
its parent dies (:func:`simworld._running.executors.die_with_parent`).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading

__all__ = ["FATE_VARIABLE", "share_fate"]

#: The environment variable that marks a process as the run's.
FATE_VARIABLE = "SIMWORLD_RUN_TOKEN"

# The reaper: no imports beyond the interpreter's own modules (-S: no site), so it starts in a few milliseconds.
_REAPER = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
mark = sys.argv[1].encode()
while os.read(0, 65536):
    pass
me = os.getpid()
for _ in range(3):
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/" + name + "/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if mark in env.split(b"\\0"):
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    time.sleep(0.2)
"""

_lock = threading.Lock()
_reaper: subprocess.Popen[bytes] | None = None


def share_fate() -> None:
    """Make every process started from now on (and every process they start) end once this process is gone.

    Idempotent: the first call in a process starts its reaper; later calls do nothing. On a
    system without ``/proc`` it does nothing.
    """
    global _reaper
    if _reaper is not None or not os.path.isdir("/proc/self"):
        return
    with _lock:
        if _reaper is not None:
            return
        token = secrets.token_hex(12)
        env = {k: v for k, v in os.environ.items() if k != FATE_VARIABLE}
        try:
            _reaper = subprocess.Popen([sys.executable, "-S", "-c", _REAPER, f"{FATE_VARIABLE}={token}"],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True, env=env)
        except OSError:  # no reaper is no worse than before: processes are still stopped on every normal path
            return
        os.environ[FATE_VARIABLE] = token  # inherited from here on: by agent processes, a local Ray, their children
