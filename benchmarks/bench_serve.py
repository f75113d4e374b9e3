"""Server CPU per MCP tool call of ``simworld serve --transport http``, under load from the official MCP client.

Run: python benchmarks/bench_serve.py [--old DIR] [--sessions 20,50,200] [--seconds 20] [--rounds 1]
                                       [--clients 2] [--open-loop] [--raw] [--nice N] [--instructions N]
                                       [--out benchmarks/results/serve.json]

A server process is started per (tree, level) with ``simworld serve --transport http --scenario
split-balance-three-ways --seed 3 --out TMP``; ``--old DIR`` adds the tree at DIR (e.g. a checkout of the
previous release) as a second server, and the two alternate within each round, so the ratio is measured on the
same loaded machine at the same time.

**Closed loop.** ``--clients`` client processes hold N sessions open together (``mcp.client.streamable_http``
and ``ClientSession``, the SDK's own client). Each session slot plays episode after episode: initialize, the
scenario's reference solution call by call, then ends the session (DELETE). Every reply must equal, byte for
byte, the reply a lone session got for the same call (a session that saw another's writes would get another
schedule back: that is cross-talk), and every result line the server writes must be a passing episode of
exactly the solution's calls. Slots start episodes for ``--warmup`` + ``--seconds`` and finish the one they
are in, so the server's CPU (user + system, from ``/proc``) from just before the clients start to just after
they exit covers whole episodes; divided by the tool calls they made, it is the figure. It includes everything
the server does for those episodes (initialize, DELETE, grading, writing results and event files). The
server's RSS is read before the clients start, after the warm-up, at the end and after the last episode.

**Open loop** (``--open-loop``): at each level, calls are offered at half the capacity the closed loop measured
at that level (tool calls per wall second of that run), spread over its N sessions on a fixed schedule, and the
latency of each call is counted from when it was due (so a stalled server cannot hide its queue); p50 and p99 are
reported.
Each slot calls every ``N / rate`` seconds, and the slots' phases are spread evenly over a whole episode (the
solution's calls), across all client processes from one common origin: at any moment the slots stand at
different calls of their episodes, as independent agents would. (Phases spread over one call's interval
instead put every slot at the same call at once, so all 50 episodes ended, were graded and were reopened in
one burst per episode: a queue that the schedule made, not the offered rate.) Each client process also records
how late its own event loop wakes from a 5 ms sleep (``client_lag_ms``): the part of a call's latency that may be
the client's, not the server's.

**Instructions** (``--instructions N``): the server runs under valgrind (cachegrind, no cache simulation) and
the official client plays N episodes one after another, after one warm-up episode; the server's instructions for
those N episodes, less a run with none, divided by their tool calls, are its instructions per tool call. Unlike CPU
time, which moves by tens of percent with the machine's other work (and with how many requests the server finds
at each wake-up), the count is the same run after run to about 1% (session ids are random, and collections fall
where they fall), so it shows a change between trees that the CPU figures cannot. It counts the server's own code,
not the kernel's (socket and file system calls), and one session at a time, so no request shares a wake-up with another.

The machine is shared and has few cores, so absolute figures are noisy; the ratio between trees in one run is
the figure to quote. ``--nice N`` (negative needs root) runs every server and client process at priority N so
that the machine's other work does not stand in the latency: each in a session of its own whose autogroup gets
nice N as well, since with ``kernel.sched_autogroup_enabled`` (the default on many distributions) a process's
own nice only weighs against the processes of its own session, and a CPU-bound job in any other terminal takes
an equal share whatever it says. ``--pin`` runs the server on the first CPU and the clients on the others, as a
server and its clients on machines of their own would run: on a small machine the official client spends several
times the server's CPU per call, and without it the server's calls queue behind the clients' work. Results go to
``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from _record import commit_of
from _valgrind import VALGRIND, instruction_count

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "split-balance-three-ways"
SEED = 3
TICKS = os.sysconf("SC_CLK_TCK")
#: The sleep whose overshoot measures a client's event-loop lag in the open loop.
LAG_TICK = 0.005


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


#: With ``--pin``: the CPUs the server runs on, and the clients' (see the module docstring).
PINS: dict[str, set[int]] = {}


def _pin(pid: int, role: str) -> None:
    """Keep process ``pid`` on the CPUs ``--pin`` gives its role (``server`` or ``clients``)."""
    if role in PINS:
        os.sched_setaffinity(pid, PINS[role])


def _prioritise(pid: int, nice: int) -> None:
    """Run process ``pid`` (a session leader) at priority ``nice``, within its session and, through its autogroup,
    against the other sessions' processes."""
    os.setpriority(os.PRIO_PROCESS, pid, nice)
    autogroup = Path(f"/proc/{pid}/autogroup")
    if autogroup.exists():
        autogroup.write_text(str(nice))


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class Server:
    """``simworld serve --transport http`` of the tree at ``tree``, in its own process (under ``wrapper``, e.g.
    valgrind, if given)."""

    def __init__(self, tree: Path, out: Path, nice: int = 0, wrapper: tuple[str, ...] = ()) -> None:
        self.port = _free_port()
        self.out = out
        self.log = out.parent / f"{out.name}.log"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        env.pop("SIMWORLD_TOKEN", None)
        if wrapper:
            env["PYTHONHASHSEED"] = "0"
        with self.log.open("wb") as sink:
            self.proc = subprocess.Popen(
                [*wrapper, sys.executable, "-m", "simworld", "serve", "--transport", "http", "--port",
                 str(self.port), "--scenario", SCENARIO, "--seed", str(SEED), "--out", str(out)],
                cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=bool(nice))
        _pin(self.proc.pid, "server")
        if nice:
            _prioritise(self.proc.pid, nice)
        deadline = time.monotonic() + (600 if wrapper else 60)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server never listened") from None
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self, how: signal.Signals = signal.SIGTERM) -> None:
        self.proc.send_signal(how)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- the client side (runs in its own processes) -------------------------------------------------------------


def _solution() -> tuple[list[Any], dict[str, Any]]:
    from simworld._scenario.scenario import load_suite

    (scenario,) = load_suite(None, [SCENARIO])
    return list(scenario.solutions[0]), dict(scenario.instance(scenario.run_seed(SEED, "dev")).vars)


async def _episode(client: Any, url: str, steps: list[Any], variables: dict[str, Any],
                   on_call: Any) -> list[str]:
    """One MCP session playing the solution; the text of every reply."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from simworld._world.templates import resolve_args

    texts: list[str] = []
    results: list[Any] = []
    async with (streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        for i, step in enumerate(steps):
            args = resolve_args(step.args, variables, results, f"step {i}")
            started = time.perf_counter()
            reply = await on_call(session.call_tool(step.tool, args))
            texts.append("\n".join(block.text for block in reply.content))
            on_call.done(started)
            if reply.is_error:
                raise RuntimeError(f"tool error: {texts[-1]}")
            results.append(orjson.loads(reply.content[0].text))
    return texts


def _first_due(spec: dict[str, Any], k: int, calls: int) -> float:
    """When slot ``k`` of this client process makes its first paced call, on ``time.perf_counter``'s clock: the
    slots of every process together are phased evenly over one episode of ``calls`` calls from the common
    ``spec["origin"]`` (wall-clock seconds)."""
    period = spec["interval"] * calls
    origin = spec["origin"] - (time.time() - time.perf_counter())
    return origin + period * (spec["first"] + k) / spec["total"]


async def _watch_lag(lags: list[tuple[float, float]], sleep: Callable[[float], Awaitable[Any]]) -> None:
    """Record, until cancelled, how late this client's event loop wakes from a :data:`LAG_TICK` sleep, as
    (``perf_counter`` time, lateness): time that a call's latency may owe to the client rather than the server."""
    while True:
        before = time.perf_counter()
        await sleep(LAG_TICK)
        now = time.perf_counter()
        lags.append((now, now - before - LAG_TICK))


class _Calls:
    """Counts and times the calls a client makes, and their completion times."""

    def __init__(self) -> None:
        self.stamps: list[tuple[float, float]] = []  # (completion time, latency)
        self.due: float | None = None

    async def __call__(self, awaitable: Any) -> Any:
        return await awaitable

    def done(self, started: float) -> None:
        now = time.perf_counter()
        origin = self.due if self.due is not None else started
        self.stamps.append((now, now - origin))


def _freeze() -> None:
    """Keep what a client process has loaded (the SDK, pydantic, httpx, the scenario) out of its collector's sight:
    a full collection over it paused the SDK client for up to ~100 ms here, during which the calls it made or read
    looked late, although the server had answered them."""
    gc.collect()
    gc.freeze()


def client_main(spec: dict[str, Any]) -> dict[str, Any]:
    """Hold ``spec["sessions"]`` session slots open against ``spec["url"]`` until ``spec["until"]``."""
    import anyio
    import httpx2

    # Imported here, not at the first episode: an import inside the loop would stall every slot of this client.
    import mcp.client.streamable_http  # noqa: F401

    steps, variables = _solution()
    _freeze()
    url, until = spec["url"], spec["until"]
    if spec.get("episodes") is not None:  # episodes one after another, for the instruction count
        anyio.run(_episodes_in_turn, url, steps, variables, spec["episodes"])
        return {}
    expected: list[str] | None = spec.get("expected")
    interval: float | None = spec.get("interval")  # open loop: seconds between one slot's calls
    calls = _Calls()
    report: dict[str, Any] = {"episodes": 0, "errors": [], "crosstalk": 0, "stamps": None}
    lags: list[tuple[float, float]] = []

    class Paced(_Calls):
        def __init__(self, start: float, interval: float) -> None:
            super().__init__()
            self.next = start
            self.interval = interval

        async def __call__(self, awaitable: Any) -> Any:
            delay = self.next - time.perf_counter()
            if delay > 0:
                await anyio.sleep(delay)
            self.due = self.next
            self.next += self.interval
            return await awaitable

    async def slot(k: int) -> None:
        pacer: _Calls = calls
        if interval is not None:
            pacer = Paced(_first_due(spec, k, len(steps)), interval)
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(120.0)) as client:
            while time.time() < until:
                try:
                    texts = await _episode(client, url, steps, variables, pacer)
                except Exception as exc:
                    report["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
                    continue
                report["episodes"] += 1
                if expected is not None and texts != expected:
                    report["crosstalk"] += 1
        if pacer is not calls:
            calls.stamps.extend(pacer.stamps)

    async def main() -> None:
        async with anyio.create_task_group() as watch:
            if interval is not None:
                watch.start_soon(_watch_lag, lags, anyio.sleep)
            async with anyio.create_task_group() as tg:
                for k in range(spec["sessions"]):
                    tg.start_soon(slot, k)
            watch.cancel_scope.cancel()

    if spec["sessions"] == 0:  # a lone episode: what every reply must equal
        report["expected"] = anyio.run(_episode_alone, url, steps, variables)
        return report
    anyio.run(main)
    # Completion times go back as wall-clock times so the parent can cut them to its window.
    offset = time.time() - time.perf_counter()
    report["stamps"] = [(t + offset, lat) for t, lat in calls.stamps]
    report["lags"] = [(t + offset, lag) for t, lag in lags]
    return report


async def _raw_slot(port: int, k: int, spec: dict[str, Any], steps: list[Any], variables: dict[str, Any],
                    calls: _Calls, report: dict[str, Any]) -> None:
    """One session slot over a plain HTTP/1.1 keep-alive connection: the requests the SDK client makes for an
    episode (initialize, initialized, tools/list, the calls, DELETE), each call paced when ``interval`` is set."""
    import asyncio

    from simworld._world.templates import resolve_args

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    host = f"127.0.0.1:{port}".encode()

    async def http(method: bytes, message: Any = None, sid: bytes | None = None) -> tuple[bytes, bytes]:
        body = b"" if message is None else orjson.dumps(message)
        head = [b"%s /mcp HTTP/1.1" % method, b"host: " + host, b"accept: application/json, text/event-stream",
                b"content-type: application/json", b"content-length: %d" % len(body)]
        if sid is not None:
            head += [b"mcp-session-id: " + sid, b"mcp-protocol-version: 2025-11-25"]
        writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        response = await reader.readuntil(b"\r\n\r\n")
        fields = dict(line.split(b": ", 1) for line in response.split(b"\r\n")[1:] if b": " in line)
        return response, await reader.readexactly(int(fields.get(b"content-length", b"0")))

    interval, expected = spec.get("interval"), spec["expected"]
    due = _first_due(spec, k, len(steps)) if interval else 0.0
    try:
        while time.time() < spec["until"]:
            response, _ = await http(b"POST", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
            sid = response.split(b"mcp-session-id: ", 1)[1].split(b"\r\n", 1)[0]
            await http(b"POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
            await http(b"POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, sid)
            results: list[Any] = []
            texts: list[str] = []
            for i, step in enumerate(steps):
                args = resolve_args(step.args, variables, results, f"step {i}")
                if interval:
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                sent = time.perf_counter()
                started = due if interval else sent
                _, body = await http(b"POST", {"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
                                               "params": {"name": step.tool, "arguments": args}}, sid)
                calls.due = started
                calls.done(started)
                replied = time.perf_counter()
                report["response_s"].append((replied, replied - sent))
                due += interval or 0.0
                result = orjson.loads(body)["result"]
                texts.append("\n".join(block["text"] for block in result["content"]))
                if result["isError"]:
                    raise RuntimeError(f"tool error: {texts[-1]}")
                results.append(orjson.loads(result["content"][0]["text"]))
            await http(b"DELETE", None, sid)
            report["episodes"] += 1
            if texts != expected:
                report["crosstalk"] += 1
    except Exception as exc:
        report["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
    finally:
        writer.close()


def raw_client_main(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec["sessions"]`` slots of :func:`_raw_slot` until ``spec["until"]``."""
    import asyncio
    from urllib.parse import urlsplit

    steps, variables = _solution()
    _freeze()
    port = urlsplit(spec["url"]).port or 80
    calls = _Calls()
    report: dict[str, Any] = {"episodes": 0, "errors": [], "crosstalk": 0, "response_s": []}
    lags: list[tuple[float, float]] = []

    async def main() -> None:
        watch = asyncio.ensure_future(_watch_lag(lags, asyncio.sleep)) if spec.get("interval") else None
        await asyncio.gather(*(_raw_slot(port, k, spec, steps, variables, calls, report)
                               for k in range(spec["sessions"])))
        if watch is not None:
            watch.cancel()

    asyncio.run(main())
    offset = time.time() - time.perf_counter()
    report["stamps"] = [(t + offset, lat) for t, lat in calls.stamps]
    report["response_s"] = [(t + offset, response) for t, response in report["response_s"]]
    report["lags"] = [(t + offset, lag) for t, lag in lags]
    return report


async def _episodes_in_turn(url: str, steps: list[Any], variables: dict[str, Any], episodes: int) -> None:
    import httpx2

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(600.0)) as client:
        for _ in range(episodes):
            await _episode(client, url, steps, variables, _Calls())


async def _episode_alone(url: str, steps: list[Any], variables: dict[str, Any]) -> list[str]:
    import httpx2

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(120.0)) as client:
        return await _episode(client, url, steps, variables, _Calls())


# --- the parent: servers, windows, figures -------------------------------------------------------------------


def _clients(url: str, sessions: int, procs: int, until: float, expected: list[str],
             interval: float | None = None, raw: bool = False, origin: float = 0.0,
             nice: int = 0) -> list[subprocess.Popen[bytes]]:
    """``procs`` client processes sharing ``sessions`` slots; in the open loop slot ``first + k`` of ``total`` has
    its phase from ``origin`` (:func:`_first_due`)."""
    shares = [sessions // procs + (1 if i < sessions % procs else 0) for i in range(procs)]
    firsts = [sum(shares[:i]) for i in range(procs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clients = [subprocess.Popen([sys.executable, __file__, "--client", orjson.dumps({
        "url": url, "sessions": n, "until": until, "expected": expected, "interval": interval,
        "raw": raw, "origin": origin, "first": first, "total": sessions}).decode()], stdout=subprocess.PIPE, env=env,
        start_new_session=bool(nice)) for n, first in zip(shares, firsts, strict=True) if n]
    for client in clients:
        _pin(client.pid, "clients")
        if nice:
            _prioritise(client.pid, nice)
    return clients


def _collect(procs: list[subprocess.Popen[bytes]]) -> list[dict[str, Any]]:
    reports = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=600)
        reports.append(orjson.loads(stdout))
    return reports


def _lines(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(tree: Path, work: Path, sessions: int, seconds: float, warmup: float, procs: int,
            rate: float | None = None, raw: bool = False, nice: int = 0) -> dict[str, Any]:
    """One server of ``tree`` under ``sessions`` slots: closed loop, or open loop at ``rate`` calls/s.

    Slots start episodes for ``warmup + seconds`` and finish the one they are in, so the server's CPU from just
    before the clients start to just after they exit covers whole episodes: it is divided by every tool call
    they made. Latency percentiles are over the calls that end after ``warmup``. RSS is read before the clients
    start, after ``warmup``, at the end and after the last episode.
    """
    out = work / f"out-{tree.name}-{sessions}-{'open' if rate else 'closed'}-{int(raw)}-{time.monotonic_ns()}"
    server = Server(tree, out, nice)
    try:
        (lone,) = _collect([subprocess.Popen([sys.executable, __file__, "--client", orjson.dumps({
            "url": server.url, "sessions": 0, "until": 0}).decode()], stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)})])
        expected = lone["expected"]
        pid = server.proc.pid
        rss = [_rss_mb(pid)]
        cpu0 = _cpu_s(pid)
        start = time.time()
        interval = sessions / rate if rate else None
        # The schedule starts a second after the clients are launched: time for them to start and open sessions.
        clients = _clients(server.url, sessions, procs, start + warmup + seconds, expected, interval, raw,
                           origin=start + 1.0, nice=nice)
        time.sleep(warmup)
        rss.append(_rss_mb(pid))
        time.sleep(seconds)
        rss.append(_rss_mb(pid))
        reports = _collect(clients)
        cpu1 = _cpu_s(pid)
        rss.append(_rss_mb(pid))
    finally:
        server.stop()
    stamps = sorted(s for r in reports for s in r["stamps"])
    # Latency counts the calls after the warm-up: the first ones wait behind every session's opening at once.
    latencies = [lat for t, lat in stamps if t >= start + warmup]
    # The raw client also times each call from its request written to its response read: without the time the
    # client itself was late to send it.
    responses = [x for r in reports for t, x in r.get("response_s", ()) if t >= start + warmup]
    lags = [lag for r in reports for t, lag in r.get("lags", ()) if t >= start + warmup]
    episodes = sum(r["episodes"] for r in reports)
    errors = [e for r in reports for e in r["errors"]]
    crosstalk = sum(r["crosstalk"] for r in reports)
    lines = _lines(out)[1:]  # the first is the lone episode's
    bad_lines = [line for line in lines if not (line["passed"] and line["counters"]["tool_calls"] == len(expected))]
    shutil.rmtree(out, ignore_errors=True)
    calls = len(stamps)
    span = stamps[-1][0] - stamps[0][0] if calls > 1 else float("nan")
    return {
        "sessions": sessions, "mode": "open" if rate else "closed",
        "client": "raw-http" if raw else "mcp-sdk", "nice": nice,
        "offered_calls_per_s": rate, "tool_calls": calls, "episodes": episodes,
        "server_cpu_s": round(cpu1 - cpu0, 3),
        "server_cpu_ms_per_call": round(1000 * (cpu1 - cpu0) / calls, 3) if calls else None,
        "calls_per_s": round(calls / span, 1),
        "latency_ms": {"p50": round(1000 * _percentile(latencies, 0.5), 2),
                       "p99": round(1000 * _percentile(latencies, 0.99), 2)},
        **({"response_ms": {"p50": round(1000 * _percentile(responses, 0.5), 2),
                            "p99": round(1000 * _percentile(responses, 0.99), 2)}} if responses else {}),
        **({"client_lag_ms": {"p50": round(1000 * _percentile(lags, 0.5), 2),
                              "p99": round(1000 * _percentile(lags, 0.99), 2),
                              "max": round(1000 * max(lags), 2)}} if lags else {}),
        "rss_mb": {"before": rss[0], "after_warmup": rss[1], "end": rss[2], "after_last_episode": rss[3]},
        "errors": len(errors), "error_samples": errors[:3], "crosstalk": crosstalk,
        "result_lines": len(lines), "bad_result_lines": len(bad_lines),
    }


def instructions(tree: Path, work: Path, episodes: int) -> float:
    """The server's instructions per tool call (valgrind's count): ``episodes`` episodes of the official client one
    after another, less none, over their tool calls; each server plays one warm-up episode first, so what it builds
    at its first episode is left out, as the CPU figures leave it out."""
    def client(url: str, n: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, __file__, "--client", orjson.dumps({
            "url": url, "sessions": 1, "until": 0, "episodes": n}).decode()], stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)})

    def counted(n: int) -> int:
        out = work / f"counted-{tree.name}-{n}-{time.monotonic_ns()}"
        server = Server(tree, out, wrapper=VALGRIND)
        try:
            for run in (1, n):
                _collect([client(server.url, run)])
        finally:
            server.stop(signal.SIGINT)  # a clean exit, after which valgrind writes its count
        found = instruction_count(server.log.read_text())
        shutil.rmtree(out, ignore_errors=True)
        if found is None:
            raise SystemExit(f"valgrind run of {tree}'s server gave no count: {server.log.read_text()[-2000:]}")
        return found

    steps, _ = _solution()
    return (counted(episodes) - counted(0)) / (episodes * len(steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="a second tree to measure, alternating with this one")
    parser.add_argument("--new", type=Path, default=ROOT, help="the tree to measure (default: this one)")
    parser.add_argument("--sessions", default="20,50,200")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="how long slots keep starting episodes after the warm-up")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the second RSS reading")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--open-loop", action="store_true")
    parser.add_argument("--raw", action="store_true",
                        help="also measure the server's own capacity and open-loop latency with a plain HTTP client "
                             "(the SDK client's CPU, not the server's, bounds what it can offer)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve.json")
    parser.add_argument("--nice", type=int, default=0,
                        help="the scheduling priority of every server and client process (e.g. -10, as root), so "
                             "that a loaded machine's other processes do not stand in the latency")
    parser.add_argument("--instructions", type=int, metavar="N", default=0,
                        help="also count the server's instructions per tool call under valgrind over N episodes "
                             "played one after another (deterministic; needs valgrind)")
    parser.add_argument("--pin", action="store_true",
                        help="run the server on the first CPU and the clients on the others (needs two CPUs)")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client is not None:
        spec = orjson.loads(args.client)
        sys.stdout.buffer.write(orjson.dumps(raw_client_main(spec) if spec.get("raw") else client_main(spec)))
        return
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            parser.error("--pin needs two CPUs: one for the server, the rest for the clients")
        PINS.update(server={cpus[0]}, clients=set(cpus[1:]))
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (e.g. apt-get install valgrind)")
    trees = {"new": args.new.resolve()} | ({"old": args.old.resolve()} if args.old else {})
    levels = [int(n) for n in args.sessions.split(",") if n]
    runs: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        for round_ in range(args.rounds):
            for n in levels:
                order = list(trees.items()) if round_ % 2 == 0 else list(reversed(trees.items()))
                for name, tree in order:
                    run = {"name": name, "round": round_} | measure(tree, work, n, args.seconds, args.warmup,
                                                                     args.clients, nice=args.nice)
                    runs.append(run)
                    print(orjson.dumps(run).decode(), flush=True)
        if args.open_loop:  # at each level, half the capacity its closed loop measured
            for n in levels:
                for name, tree in trees.items():
                    closed = [r for r in runs if r["name"] == name and r["sessions"] == n and r["mode"] == "closed"]
                    capacity = statistics.median(r["calls_per_s"] for r in closed)
                    run = {"name": name, "round": 0, "capacity_calls_per_s": capacity} | measure(
                        tree, work, n, args.seconds, args.warmup, args.clients, rate=capacity / 2, nice=args.nice)
                    runs.append(run)
                    print(orjson.dumps(run).decode(), flush=True)
        if args.raw:  # the plain client reads JSON responses: an SSE-answering server (the old one) cannot be read
            for name, tree in [("new", trees["new"])]:
                raw_closed = measure(tree, work, 50, args.seconds, args.warmup, 1, raw=True, nice=args.nice)
                runs.append({"name": name, "round": 0} | raw_closed)
                print(orjson.dumps(runs[-1]).decode(), flush=True)
                capacity = raw_closed["calls_per_s"]
                run = {"name": name, "round": 0, "capacity_calls_per_s": capacity} | measure(
                    tree, work, 50, args.seconds, args.warmup, 1, rate=capacity / 2, raw=True, nice=args.nice)
                runs.append(run)
                print(orjson.dumps(run).decode(), flush=True)
        counts: dict[str, Any] = {}
        if args.instructions:
            for name, tree in trees.items():
                counts[name] = round(instructions(tree, work, args.instructions))
                print(f"{name}: {counts[name]:,} server instructions per tool call", flush=True)
            if args.old:
                counts["ratio_new_over_old"] = round(counts["new"] / counts["old"], 3)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary: dict[str, Any] = {}
    for name in trees:
        for n in levels:
            mine = [r["server_cpu_ms_per_call"] for r in runs
                    if r["name"] == name and r["sessions"] == n and r["mode"] == "closed" and r["client"] == "mcp-sdk"
                    and r["server_cpu_ms_per_call"]]
            if mine:
                summary[f"{name}@{n}"] = round(statistics.median(mine), 3)
    if args.old:
        for n in levels:
            if f"old@{n}" in summary and f"new@{n}" in summary:
                summary[f"ratio_new_over_old@{n}"] = round(summary[f"new@{n}"] / summary[f"old@{n}"], 3)
    # The trees' own paths are this machine's: the command names the old tree by role and an --out inside this tree
    # relative to it.
    out = args.out.resolve()

    def shown(arg: str) -> str:
        if args.old and arg == str(args.old):
            return "OLD_TREE"
        return str(out.relative_to(ROOT)) if Path(arg).resolve() == out and out.is_relative_to(ROOT) else arg

    argv = [shown(a) if a else '""' for a in sys.argv[1:]]
    document = {"command": "python benchmarks/bench_serve.py " + " ".join(argv),
                "cpus": os.cpu_count(), "commits": {name: commit_of(tree) for name, tree in trees.items()},
                "scenario": SCENARIO, "seed": SEED,
                "server_cpu_ms_per_call": summary,
                **({"server_instructions_per_call": counts} if counts else {}), "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    print(orjson.dumps(summary).decode())


if __name__ == "__main__":
    main()
