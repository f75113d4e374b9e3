"""Long runs: peak memory over a seed sweep, and how soon a hung agent's episode ends after its timeout.

Run: python benchmarks/bench_runs.py [--small 2000] [--large 20000] [--timeout 1.0] [--dir DIR]

1. Flat memory. ``simworld run`` (the reference agent, the whole suite) is started as a
   process for about ``--small`` and about ``--large`` episodes (a seed sweep: a new seed
   per episode block), and the peak RSS of each process is read from the kernel
   (``ru_maxrss`` of the finished child). Flat memory means the two peaks are about equal.
2. Hung agents. For each way an agent can hang (a python: agent that sleeps, one that
   spins, one that waits on a socket; a cmd: agent that never answers, one that never
   reads its stdin), one episode is run with ``timeout_s`` set to ``--timeout`` and the
   time from the timeout to the episode's end is printed (the episode's wall time minus
   ``timeout_s``).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent

HANG = textwrap.dedent('''
    import socket, sys, time

    class Sleeper:
        def act(self, obs):
            time.sleep(10**6)

    class Spinner:
        def act(self, obs):
            while True:
                pass

    class Socket:
        def act(self, obs):
            server = socket.socket()
            server.bind(("127.0.0.1", 0))
            server.listen()
            socket.create_connection(server.getsockname()).recv(1)

    if __name__ == "__main__":
        if sys.argv[1] == "silent":      # reads every observation, never answers
            for line in sys.stdin:
                pass
        else:                            # never reads its stdin at all
            time.sleep(10**6)
''')


def peak_rss_mb(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """Run ``simworld ARGS`` as a child; return (peak RSS in MB, wall seconds, result lines)."""
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "simworld", *args], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = _wait4(proc.pid)
    wall = time.perf_counter() - began
    out = Path(cwd) / args[args.index("--out") + 1]
    lines = (out / "results.jsonl").read_bytes().count(b"\n")
    return usage.ru_maxrss / 1024, wall, lines


def _wait4(pid: int) -> tuple[int, int, resource.struct_rusage]:
    import os

    return os.wait4(pid, 0)


def memory(root: Path, small: int, large: int) -> None:
    n_scenarios = len([p for p in (ROOT / "scenarios").iterdir() if (p / "task.json").exists()])
    print(f"{'episodes':>9}  {'seeds':>9}  {'peak RSS MB':>11}  {'episodes/s':>10}")
    for target in (small, large):
        seeds = max(1, round(target / n_scenarios))
        out = f"mem-{target}"
        shutil.rmtree(root / out, ignore_errors=True)
        rss, wall, lines = peak_rss_mb(["run", "--seeds", f"0..{seeds - 1}", "--out", out], root)
        print(f"{lines:>9}  {f'0..{seeds - 1}':>9}  {rss:>11.1f}  {lines / wall:>10.1f}")


def hangs(root: Path, timeout: float) -> None:
    suite = root / "suite"
    shutil.rmtree(suite, ignore_errors=True)
    shutil.copytree(ROOT / "scenarios" / "waive-small-fee", suite / "scenarios" / "waive-small-fee")
    shutil.copytree(ROOT / "snapshots", suite / "snapshots")
    task = suite / "scenarios" / "waive-small-fee" / "task.json"
    data = orjson.loads(task.read_bytes())
    data["budget"] = {**data.get("budget", {}), "timeout_s": timeout}
    task.write_bytes(orjson.dumps(data))
    (root / "hang.py").write_text(HANG)
    agents = {
        "python: sleeps": "python:hang:Sleeper",
        "python: spins": "python:hang:Spinner",
        "python: dead socket": "python:hang:Socket",
        "cmd: never answers": f"cmd:{sys.executable} hang.py silent",
        "cmd: never reads stdin": f"cmd:{sys.executable} hang.py deaf",
    }
    print(f"\ntimeout_s = {timeout:g}; time from the timeout to the episode's end (median of 3):")
    for label, spec in agents.items():
        overruns = []
        for _ in range(3):
            done = subprocess.run([sys.executable, "-c", _ONE_EPISODE, str(suite / "scenarios"), spec],
                                  cwd=root, capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise SystemExit(f"{label}: {done.stderr}")
            episode_wall, stop = done.stdout.split()
            overruns.append(float(episode_wall) - timeout)
        overruns.sort()
        print(f"  {label:<24} stop_reason {stop:<8} {overruns[1] * 1000:8.1f} ms")


# One episode in a fresh process, timed from the start of play() to the sealed episode.
_ONE_EPISODE = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from simworld._agents.kinds import build_agent_factory
    from simworld._episode.episode import Environment
    from simworld._running.runner import play
    from simworld._scenario.scenario import load_suite
    (scenario,) = load_suite(Path(sys.argv[1]))
    factory = build_agent_factory(sys.argv[2])
    began = time.perf_counter()
    episode = play(Environment(scenario, 0, agent_name="hang"), factory)
    print(f"{time.perf_counter() - began:.4f} {episode.stop_reason}")
''')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=20000)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="simworld-bench-runs-"))
    root.mkdir(parents=True, exist_ok=True)
    if not args.skip_memory:
        memory(root, args.small, args.large)
    hangs(root, args.timeout)


if __name__ == "__main__":
    main()
