"""The communications grader measured on the labelled corpus of outgoing texts (tests/fixtures/comms_corpus.jsonl).

Run from the repository root:

    python benchmarks/bench_comms_corpus.py --label before --out benchmarks/results/comms_corpus_before.json

Each entry names a scenario, a seed, a text and its label (``true``, ``disclosure``, ``figure``,
``claim``). The scenario's reference solution (its first solution file, by name) is played at the
seed through the public Environment, with the text said (``{"say": TEXT, ...}``) on the terminal
call's action, so the text is judged against the correct end state; the episode is then graded with
the scenario's own communications grader (``graders.comms.communications`` with the scenario's
comms args). The table printed, and the JSON written, give:

- for ``true`` texts: how many fail any comms check (false failures), each listed with the failing
  check's detail;
- for each false class: how many the check meant for it catches (``comms:disclosure``,
  ``comms:figures``, ``comms:claims``) and how many any comms check catches.

An entry whose scenario or seed fails to load, or whose solution does not play to a terminal call
with every call ok, is an error (exit status 2): the measurement would otherwise be of fewer texts
than the corpus holds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simworld import TOOLS, Environment, Kind, load_scenario  # noqa: E402
from simworld._episode.play import play  # noqa: E402
from simworld._episode.steps import StepsAgent  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "comms_corpus.jsonl"
LABELS = ("true", "disclosure", "figure", "claim")
#: The check meant to catch each false class.
MEANT = {"disclosure": "comms:disclosure", "figure": "comms:figures", "claim": "comms:claims"}
#: The tools that end an episode: the text is said beside the one the solution ends with.
TERMINAL_TOOLS = frozenset(name for name, t in TOOLS.items() if t.kind is Kind.TERMINAL)


class _SayingAgent(StepsAgent):
    """A solution's steps, with ``text`` said beside the terminal call."""

    def __init__(self, steps: Any, variables: dict[str, Any], where: str, text: str) -> None:
        super().__init__(steps, variables, where)
        self.text = text

    def act(self, observation: Any) -> dict[str, Any] | None:
        action = super().act(observation)
        if action is not None and action["tool"] in TERMINAL_TOOLS:
            action = {"say": self.text, **action}
        return action



def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    """The corpus entries, in file order."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def comms_checks(entry: dict[str, Any], scenarios: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    """Play the entry's scenario's reference solution at its seed with the text said before the terminal call,
    and return every ``comms:*`` check of the graded result.

    Raises:
        RuntimeError: when the solution does not play to a terminal call with every call ok, the text
            was not recorded as a say event (the measurement would not be of this text), or a grader raised.
    """
    suite = entry.get("suite", "scenarios")
    key = (suite, entry["scenario"])
    if key not in scenarios:
        scenarios[key] = load_scenario(ROOT / suite / entry["scenario"])
    scenario = scenarios[key]
    steps, name = scenario.solutions[0], scenario.solution_files[0]
    env = Environment(scenario, entry["seed"], agent_name=f"corpus:{entry['id']}")
    episode = play(env, lambda sc, seed, variables: _SayingAgent(steps, variables, f"{sc.id}/{name}",
                                                                 entry["text"]))
    bad = [e for e in episode.events if e.kind != "say" and e.status != "ok"]
    if episode.stop_reason != "terminal" or episode.error or bad:
        raise RuntimeError(f"{entry['id']}: the solution {name} of {entry['scenario']} at seed {entry['seed']} did "
                           f"not play cleanly (stop {episode.stop_reason!r}, error {episode.error!r}, "
                           f"{len(bad)} call(s) not ok)")
    if not any(e.kind == "say" and e.args.get("text") == entry["text"] for e in episode.events):
        raise RuntimeError(f"{entry['id']}: the text was not recorded as a say event")
    line = env.grade()
    raised = [c for c in line["checks"] if c["detail"].startswith("grader raised ")]
    if raised:  # a grader that raised fails its own check, not a comms one: the text would read as passing
        raise RuntimeError(f"{entry['id']}: {raised[0]['name']}: {raised[0]['detail']}")
    return [c for c in line["checks"] if c["name"].startswith("comms:")]


def measure(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The confusion figures of the comms grader over ``entries``."""
    scenarios: dict[tuple[str, str], Any] = {}
    per: dict[str, dict[str, Any]] = {label: {"n": 0, "failed_any": 0, "caught_by_meant": 0, "caught_by": {},
                                              "entries": []} for label in LABELS}
    for entry in entries:
        checks = comms_checks(entry, scenarios)
        failed = [c for c in checks if not c["passed"]]
        row = per[entry["label"]]
        row["n"] += 1
        if failed:
            row["failed_any"] += 1
        for c in failed:
            row["caught_by"][c["name"]] = row["caught_by"].get(c["name"], 0) + 1
        meant = MEANT.get(entry["label"])
        if meant and any(c["name"] == meant for c in failed):
            row["caught_by_meant"] += 1
        if entry["label"] == "true" and failed or entry["label"] != "true" and not failed:
            row["entries"].append({"id": entry["id"], "failed": [{"check": c["name"], "detail": c["detail"]}
                                                                 for c in failed]})
    summary: dict[str, Any] = {}
    for label, row in per.items():
        n = row["n"]
        if label == "true":
            summary[label] = {"n": n, "false_failures": row["failed_any"],
                              "false_failure_rate": _rate(row["failed_any"], n), "failing_checks": row["caught_by"],
                              "failures": row["entries"]}
        else:
            summary[label] = {"n": n, "meant_check": MEANT[label], "caught_by_meant": row["caught_by_meant"],
                              "catch_rate_meant": _rate(row["caught_by_meant"], n), "caught_by_any": row["failed_any"],
                              "catch_rate_any": _rate(row["failed_any"], n), "caught_by": row["caught_by"],
                              "missed": [e["id"] for e in row["entries"]]}
    return summary


def _rate(k: int, n: int) -> str:
    return f"{k / n:.3f}" if n else "n/a"


def revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _table(summary: dict[str, Any]) -> str:
    lines = [f"{'class':<11} {'n':>4}  {'meant check':<17} {'caught (meant)':>15} {'caught (any)':>13}"]
    t = summary["true"]
    lines.append(f"{'true':<11} {t['n']:>4}  {'(none: pass all)':<17} {'':>15} "
                 f"{t['false_failures']:>5} failed ({t['false_failure_rate']})")
    for label in LABELS[1:]:
        s = summary[label]
        lines.append(f"{label:<11} {s['n']:>4}  {s['meant_check']:<17} {s['caught_by_meant']:>6} "
                     f"({s['catch_rate_meant']}) {s['caught_by_any']:>5} ({s['catch_rate_any']})")
    lines.append("")
    lines.append(f"false failures on true texts by check: {t['failing_checks']}")
    for f in t["failures"]:
        for c in f["failed"]:
            lines.append(f"  {f['id']}: {c['check']}: {c['detail']}")
    for label in LABELS[1:]:
        lines.append(f"{label}: caught by {summary[label]['caught_by']}; missed {len(summary[label]['missed'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the labelled corpus (JSON lines)")
    parser.add_argument("--label", required=True, help="the grader's revision label (e.g. before, after)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "comms_corpus.json")
    args = parser.parse_args(argv)
    entries = load_corpus(args.corpus)
    start = time.perf_counter()
    summary = measured(measure, entries)
    if summary is None:
        return 2
    result = {"label": args.label, "revision": revision(), "corpus": str(args.corpus.relative_to(ROOT))
              if args.corpus.is_relative_to(ROOT) else str(args.corpus), "entries": len(entries),
              "scenarios": len({(e.get("suite", "scenarios"), e["scenario"]) for e in entries}),
              "wall_s": round(time.perf_counter() - start, 1), **summary}
    print(_table(summary))
    write_result(args.out, result)
    return 0


def measured(fn: Callable[[list[dict[str, Any]]], Any], entries: list[dict[str, Any]]) -> Any:
    """``fn(entries)``, or None (the reason printed) when an entry's scenario does not load or play: then the corpus
    is wrong, not the grader."""
    try:
        return fn(entries)
    except Exception as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def write_result(path: Path, result: dict[str, Any]) -> None:
    """Write a benchmark's result as indented JSON (its folder made when missing) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
