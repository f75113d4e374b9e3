"""Helpers for the tests of `simworld serve`: a server process over HTTP, and what it wrote."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
#: Real seconds a server may take to listen, or a client session to run.
TIMEOUT = 90


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def results(out: Path) -> list[dict[str, Any]]:
    """The result lines a server wrote to ``out/results.jsonl`` (none when there is no such file)."""
    path = out / "results.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def wait_for_results(out: Path, count: int, proc: subprocess.Popen[bytes] | None = None) -> list[dict[str, Any]]:
    """Wait until ``out/results.jsonl`` holds ``count`` lines (an episode is written just after its reply)."""
    deadline = time.monotonic() + TIMEOUT
    while len(lines := results(out)) < count:
        assert proc is None or proc.poll() is None, "the server exited before writing every episode"
        assert time.monotonic() < deadline, f"only {len(lines)} of {count} result line(s) were written"
        time.sleep(0.05)
    return lines


@contextlib.contextmanager
def http_server(log: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[bytes],
                                                                                             int]]:
    """Run ``simworld serve --transport http --port P ARGS`` until the block ends (then SIGTERM); yield (proc, P).

    The server's stderr goes to ``log``. SIMWORLD_TOKEN is taken from ``env`` only, never from the caller's.
    """
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k != "SIMWORLD_TOKEN"} | (env or {})
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "simworld", "serve", "--transport", "http", "--port", str(port),
                                 *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=environ)
        try:
            deadline = time.monotonic() + TIMEOUT
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the HTTP server never listened"
                    time.sleep(0.1)
            yield proc, port
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> int:
    """Stop a server as an operator would (SIGTERM), killing it only if it does not exit; its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout=15)
