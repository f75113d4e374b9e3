"""The fixed cost of a one-seed run: the CPU of ``simworld run --seed 42`` minus its episodes, against a baseline.

Run: python benchmarks/bench_startup.py [--baseline REF_OR_DIR] [--runs 10] [--out FILE]

Each tree (this checkout, and ``--baseline``: a git ref of this repository, exported to a
temporary directory, or the directory of another checkout) is run as whole processes,
``python -m simworld ...`` with ``PYTHONPATH`` set to the tree, the trees alternating in
every round so that a noisy machine slows both alike. Each process's CPU (user + system)
is read from the kernel when it is reaped (``os.wait4``). In every round, for each tree:

- ``one``: ``simworld run --seed 42`` (the whole suite, 28 episodes);
- ``two``: ``simworld run --seeds 42..43``: one seed more, so ``episodes = two - one`` is
  what one seed's episodes cost, and ``fixed = one - episodes`` is the rest: the interpreter,
  imports, reading the arguments and the suite, run.json, the table;
- ``help``: ``simworld --help``;
- ``python``: ``python -c pass``, the interpreter alone (the floor under every figure).

Figures are medians over the rounds; each one's smallest sample is reported too (a loaded
machine only ever adds CPU), and ``least_fixed`` compares the smallest one-seed runs less the
median episodes. Bytecode is compiled once into a private cache (``PYTHONPYCACHEPREFIX``)
before timing, as an installed package has it, and each tree has its own warm end-state
cache (``SIMWORLD_CACHE_DIR``), as repeated runs do. The summary is printed and written as
JSON (default ``benchmarks/results/startup.json``); nothing is asserted: quote the ratios,
which one run measures on both trees alike.

With ``--instructions``, valgrind (cachegrind) also counts the instructions of ``one`` and ``two`` once per tree,
after the timed rounds, in the same warm state and with ``PYTHONHASHSEED=0``: the fixed cost as a count that is
the same on every run whatever else the machine does (it leaves out what the kernel does for the process, such
as loading extension modules and starting child processes, which CPU time includes). Needs valgrind on PATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
from _record import commit_of, recorded_command  # benchmarks/, this script's folder
from _valgrind import VALGRIND, instruction_count

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "one": ["run", "--seed", "42", "--overwrite"],
    "two": ["run", "--seeds", "42..43", "--overwrite"],
    "help": ["--help"],
}


def cpu_of(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """CPU seconds (user + system) of ``cmd`` as a child process, read when it is reaped; it must exit 0."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


class Tree:
    """One source tree, measured as whole ``python -m simworld`` processes."""

    def __init__(self, label: str, path: Path, work: Path) -> None:
        self.label, self.path, self.work = label, path, work / label
        self.work.mkdir()
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env.update(PYTHONPATH=str(path), PYTHONPYCACHEPREFIX=str(work / "pyc"),
                        SIMWORLD_CACHE_DIR=str(self.work / "cache"), SIMWORLD_PROGRESS_EVERY="100000")
        self.samples: dict[str, list[float]] = {name: [] for name in (*COMMANDS, "episodes", "fixed", "python")}

    def measure(self, keep: bool = True) -> None:
        """One round: each command once; with ``keep`` the figures are recorded."""
        got = {}
        for name, args in COMMANDS.items():
            out = ["--out", str(self.work / "out")] if args[0] == "run" else []
            got[name] = cpu_of([sys.executable, "-m", "simworld", *args, *out], self.env, self.work)
        got["python"] = cpu_of([sys.executable, "-c", "pass"], self.env, self.work)
        got["episodes"] = got["two"] - got["one"]
        got["fixed"] = got["one"] - got["episodes"]
        if keep:
            for name, value in got.items():
                self.samples[name].append(value)

    def instructions(self) -> dict[str, float]:
        """Millions of instructions of ``one`` and ``two`` under valgrind, and the fixed cost and episodes they give."""
        got = {}
        for name in ("one", "two"):
            cmd = [*VALGRIND, sys.executable, "-m", "simworld", *COMMANDS[name], "--out", str(self.work / "out")]
            done = subprocess.run(cmd, env={**self.env, "PYTHONHASHSEED": "0"}, cwd=self.work, capture_output=True,
                                  text=True)
            found = instruction_count(done.stderr)
            if done.returncode != 0 or found is None:
                raise SystemExit(f"valgrind run of {self.path} failed: {done.stderr[-2000:]}")
            got[name] = found / 1e6
        got["episodes"] = got["two"] - got["one"]
        got["fixed"] = got["one"] - got["episodes"]
        return {name: round(value, 1) for name, value in got.items()}

    def medians(self) -> dict[str, float]:
        return {name: round(statistics.median(values), 4) for name, values in self.samples.items()}

    def least(self) -> dict[str, float]:
        """Each figure's smallest sample: a shared machine only ever adds CPU (cache misses, a busy sibling core)."""
        return {name: round(min(values), 4) for name, values in self.samples.items()}



def baseline_tree(spec: str, work: Path) -> tuple[Path, str]:
    """The baseline's source directory and how to name it: a directory as given, else a git ref exported."""
    if Path(spec).is_dir():
        return Path(spec), commit_of(Path(spec)) or "a checkout"
    target = work / "baseline-src"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", spec], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {spec!r}: neither a directory nor a git ref of this repository "
                         f"({archive.stderr.decode().strip()}).")
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    ref = subprocess.run(["git", "-C", str(ROOT), "rev-parse", spec], capture_output=True, text=True).stdout.strip()
    return target, ref


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="main", help="git ref of this repository, or a checkout's directory")
    ap.add_argument("--runs", type=int, default=10, help="rounds (each tree's commands once per round)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "startup.json")
    ap.add_argument("--instructions", action="store_true",
                    help="also count each tree's instructions under valgrind (deterministic; needs valgrind)")
    args = ap.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on PATH (e.g. apt-get install valgrind); leave the flag out to "
                 "measure CPU time alone")
    work = Path(tempfile.mkdtemp(prefix="simworld-bench-startup-"))
    try:
        base_path, base_name = baseline_tree(args.baseline, work)
        trees = [Tree("baseline", base_path, work), Tree("this", ROOT, work)]
        for tree in trees:  # compile the bytecode and fill the end-state cache, untimed
            tree.measure(keep=False)
        for i in range(args.runs):
            for tree in trees if i % 2 == 0 else trees[::-1]:
                tree.measure()
        old, new = (t.medians() for t in trees)
        ratios = {name: round(new[name] / old[name], 3) for name in ("fixed", "one", "help")}
        ratios["fixed_above_python"] = round((new["fixed"] - new["python"]) / (old["fixed"] - old["python"]), 3)
        old_least, new_least = (t.least() for t in trees)
        ratios["least_one"] = round(new_least["one"] / old_least["one"], 3)
        ratios["least_fixed"] = round((new_least["one"] - new["episodes"]) / (old_least["one"] - old["episodes"]), 3)
        report = {
            "command": recorded_command("benchmarks/bench_startup.py", sys.argv[1:]),
            "what": "CPU seconds (user+system) of whole processes, medians; fixed = one - (two - one), where one is "
                    "`simworld run --seed 42` and two is `simworld run --seeds 42..43`",
            "rounds": args.runs,
            "baseline": base_name,
            "this": commit_of(ROOT),
            "baseline_cpu_s": old,
            "this_cpu_s": new,
            "baseline_least_cpu_s": old_least,
            "this_least_cpu_s": new_least,
            "ratio_this_to_baseline": ratios,
        }
        if args.instructions:
            old_i, new_i = (t.instructions() for t in trees)
            report["what_instructions"] = "millions of instructions under valgrind, counted once per tree"
            report["baseline_instructions_m"], report["this_instructions_m"] = old_i, new_i
            report["instruction_ratio_this_to_baseline"] = {name: round(new_i[name] / old_i[name], 3)
                                                            for name in ("fixed", "one")}
        for label, m in (("baseline", old), ("this", new)):
            print(f"{label:>8}: one-seed run {m['one']:.3f} CPU-s = episodes {m['episodes']:.3f} + fixed "
                  f"{m['fixed']:.3f} (interpreter alone {m['python']:.3f}); --help {m['help']:.3f}")
        print("ratio this/baseline: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
        if args.instructions:
            for label, m in (("baseline", old_i), ("this", new_i)):
                print(f"{label:>8}: instructions (M): one-seed run {m['one']:.0f} = episodes {m['episodes']:.0f} + "
                      f"fixed {m['fixed']:.0f}")
            print("instruction ratio this/baseline: " + ", ".join(
                f"{k} {v:.2f}x" for k, v in report["instruction_ratio_this_to_baseline"].items()))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
        print(f"written to {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
