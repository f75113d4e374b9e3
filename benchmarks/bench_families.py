"""Task families at scale: generate ~TOTAL instances, run the reference agent, export, and check a slice.

Run from the repository root:

    python benchmarks/bench_families.py --total 10000 --check 1000 --workers 2 --out /tmp/bench-families

Each family gets an equal share of TOTAL, capped at half its dev parameter space (fixtures x
parameter values x phrasings x recovery choices, x 0.8 for the holdout share) so that small spaces are
not exhausted; what the caps leave goes to the families with room. Prints one JSON object: the
instances written, generation time and rate, the run's time, each export's time and size, and the
result of ``simworld check`` over CHECK instances (an equal slice of every family) at seeds 0..2.
The run's and each check process's stdout and stderr are kept under OUT (``run.stdout``,
``check-K.stdout``, ...).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simworld._families import generate, load_families  # noqa: E402
from simworld.errors import FamilyError  # noqa: E402


def _space(family: object) -> int:
    f = family  # a Family
    size = len(f.fixtures) * len(f.phrasings) * max(1, len(f.recovery))  # type: ignore[attr-defined]
    for _, ranges in f.intents:  # type: ignore[attr-defined]
        for spec in ranges.values():
            size *= spec["int"][1] - spec["int"][0] + 1 if "int" in spec else len(spec["choice"])
    return int(size * (1 - f.holdout_share))  # type: ignore[attr-defined]


def _counts(families: list, total: int) -> dict[str, int]:
    caps = {f.name: max(1, _space(f) // 2) for f in families}
    counts = dict.fromkeys(caps, 0)
    left = total
    while left > 0:
        open_ = [n for n in counts if counts[n] < caps[n]]
        if not open_:
            break
        share = max(1, left // len(open_))
        for n in open_:
            add = min(share, caps[n] - counts[n], left)
            counts[n] += add
            left -= add
    return counts


def _cli(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "simworld", *args], capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - start, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total", type=int, default=10000)
    parser.add_argument("--check", type=int, default=1000, help="instances to check at seeds 0..2 (0: none)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-families"))
    ns = parser.parse_args()
    shutil.rmtree(ns.out, ignore_errors=True)
    suite = ns.out / "suite"
    families = load_families()
    counts = _counts(families, ns.total)
    figures: dict[str, object] = {"families": len(families), "counts": counts}

    # Generation: families with the same count are drawn together, on --workers processes.
    start = time.perf_counter()
    by_count: dict[int, list] = {}
    for f in families:
        by_count.setdefault(counts[f.name], []).append(f)
    index = b""
    disagreements: list[str] = []  # instances not written: the solver or their own graders disagree
    for count, group in sorted(by_count.items()):
        try:
            done = generate(group, count, ns.seed, suite, workers=ns.workers)
            disagreements += [d for r in done.values() for d in r.disagreements]
        except FamilyError:  # a space smaller than its cap once undecidable points are skipped: one at a time
            for f in group:
                n = count
                while True:
                    try:
                        done = generate([f], n, ns.seed, suite)
                        disagreements += done[f.name].disagreements
                        break
                    except FamilyError:
                        n = n * 3 // 4
                counts[f.name] = n
                index += (suite / "index.jsonl").read_bytes()
            continue
        index += (suite / "index.jsonl").read_bytes()
    (suite / "index.jsonl").write_bytes(index)
    took = time.perf_counter() - start
    lines = [json.loads(x) for x in index.splitlines()]
    mix: dict[str, int] = {}
    for x in lines:
        key = "/".join(x["outcomes"])
        mix[key] = mix.get(key, 0) + 1
    prompts = {(suite / x["id"] / "prompt.md").read_bytes() for x in lines}
    combos = {json.dumps([x["family"], x["fixture"], x["params"], x["recovery"]], sort_keys=True) for x in lines}
    figures["generate"] = {"instances": len(lines), "seconds": round(took, 1),
                           "instances_per_s": round(len(lines) / took, 1),
                           "bytes": sum(p.stat().st_size for p in suite.rglob("*") if p.is_file()),
                           "outcome_mix": {k: round(v / len(lines), 3) for k, v in sorted(mix.items())},
                           "distinct_prompt_templates": round(len(prompts) / len(lines), 3),
                           "distinct_intent_parameter_points": len(combos),
                           "disagreements": len(disagreements), "disagreement_examples": disagreements[:3]}

    run_dir = ns.out / "run"
    took, done = _cli("run", "--suite", str(suite), "--agent", "reference", "--seed", "0", "--out", str(run_dir),
                      "--workers", str(ns.workers))
    (ns.out / "run.stdout").write_text(done.stdout)
    (ns.out / "run.stderr").write_text(done.stderr)
    results = [json.loads(x) for x in (run_dir / "results.jsonl").read_bytes().splitlines()] \
        if (run_dir / "results.jsonl").exists() else []
    failed: dict[str, int] = {}
    for x in results:
        if not x["passed"]:
            family = next((f.name for f in families if x["scenario"].startswith(f.name + "-")), "?")
            failed[family] = failed.get(family, 0) + 1
    figures["run"] = {"seconds": round(took, 1), "exit": done.returncode, "episodes": len(results),
                      "passed": sum(1 for x in results if x["passed"]), "failed_by_family": failed,
                      "last_line": done.stdout.strip()[-200:]}
    for fmt in ("openai", "trl"):
        target = ns.out / f"train-{fmt}.jsonl"
        took, done = _cli("export", str(run_dir), "--format", fmt, "--out", str(target))
        figures[f"export_{fmt}"] = {"seconds": round(took, 1), "exit": done.returncode,
                                    "bytes": target.stat().st_size if target.exists() else 0,
                                    "lines": len(target.read_bytes().splitlines()) if target.exists() else 0}

    if ns.check:
        per = math.ceil(ns.check / len(families))
        chosen: list[str] = []
        for f in families:
            chosen += [x["id"] for x in lines if x["family"] == f.name][:per]
        taken = set(chosen)  # families smaller than the slice leave room: topped up in index order
        chosen += [x["id"] for x in lines if x["id"] not in taken][:max(0, ns.check - len(chosen))]
        chosen = chosen[:ns.check]
        parts = [ns.out / f"check-{k}" for k in range(ns.workers)]
        for k, part in enumerate(parts):
            part.mkdir(parents=True)
            for sid in chosen[k::ns.workers]:
                (part / sid).symlink_to(suite / sid)
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-m", "simworld", "check", "--suite", str(part), "--seeds", "0..2",
                                   "--no-cache"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                 for part in parts]
        outs = [p.communicate() for p in procs]
        took = time.perf_counter() - start
        for k, (out, err) in enumerate(outs):  # kept: a process that exits 1 says why in them
            (ns.out / f"check-{k}.stdout").write_text(out)
            (ns.out / f"check-{k}.stderr").write_text(err)
        scores = [line for out, _ in outs for line in out.splitlines() if line.startswith("mutation score")]
        figures["check"] = {"instances": len(chosen), "seeds": "0..2", "seconds": round(took, 1),
                            "exit_codes": [p.returncode for p in procs], "mutation_scores": scores,
                            "outputs": [str(ns.out / f"check-{k}.std{{out,err}}") for k in range(len(procs))]}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
