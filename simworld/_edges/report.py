"""What a run did, at a glance: summaries, failure modes and run-to-run comparison.

``simworld report RUN`` reads a run directory with :mod:`simworld._running.rundir`'s readers (a
trailing line cut off by a kill is skipped, an incomplete run is said to be one) and
builds one JSON-able document: pass rate and mean score overall, by category, by
scenario and by check, pass^k where there are trials, and the failure modes ranked
(which checks fail most, with an example episode each). ``--compare BASELINE`` adds the
flips from the baseline to this run, and says when the two runs' agents were told different
conversation rules; ``--episode`` adds an episode's transcript
(:mod:`simworld._edges.transcript`). The text and HTML reports are renderings of that
document (:func:`render_text` here, :mod:`simworld._edges.report_html` for the page), so the
three never disagree.

Categories come from the suite (``--suite``, default the bundled one); for a scenario the
suite lacks, from the result line's own ``category`` if it has one, else ``unknown``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from simworld._running.rundir import RESULTS, Key, describe_status, line_key, pass_hat_k, read_meta, read_results
from simworld.errors import RunDirError

__all__ = ["BREAKDOWNS", "FORMAT", "Run", "compare_runs", "load_run", "render_text", "summarize"]

#: The ``format`` field of the JSON report.
FORMAT = "simworld.report/1"
#: What ``--by`` can break a run down by.
BREAKDOWNS = ("category", "scenario", "check")
#: run.json fields that say which grid a run covers: two runs to be compared must share them.
GRID_FIELDS = ("suite_digest", "scenarios", "seeds", "split")


@attrs.frozen
class Run:
    """A run directory read as far as it got: its run.json (or None), its whole result lines, what was skipped."""

    path: Path
    meta: dict[str, Any] | None
    lines: tuple[dict[str, Any], ...]
    bad_lines: tuple[int, ...] = ()

    @property
    def note(self) -> str | None:
        """One line saying the run is incomplete (killed or still going), or None when it is complete."""
        return describe_status(self.path, self.meta, len(self.lines))


def load_run(path: Path, *, skip_bad_lines: bool = False) -> Run:
    """Read ``path`` (a directory written by ``simworld run``, ``merge`` or ``serve``).

    Raises:
        RunDirError: ``path`` is not a directory holding results.jsonl, or a line is not a result
            (unless ``skip_bad_lines``).
    """
    if not path.is_dir():
        raise RunDirError(f"report: {str(path)!r} is not a directory; give a run directory written by simworld run "
                          "(it holds results.jsonl).")
    if not (path / RESULTS).is_file():
        raise RunDirError(f"report: {str(path)!r} has no {RESULTS}; give a run directory written by simworld run.")
    bad: list[int] | None = [] if skip_bad_lines else None
    lines = tuple(read_results(path / RESULTS, skip_bad=bad))
    return Run(path, read_meta(path), lines, tuple(bad or ()))


def _rate(passed: int, n: int) -> float:
    return round(passed / n, 4) if n else 0.0


def _group(lines: Iterable[dict[str, Any]], key: Any) -> list[dict[str, Any]]:
    """Episodes, passed, pass rate and mean score per value of ``key(line)``, in first-seen order."""
    acc: dict[str, list[float]] = {}
    for line in lines:
        a = acc.setdefault(key(line), [0, 0, 0.0])
        a[0] += 1
        a[1] += bool(line["passed"])
        a[2] += float(line["total"])
    return [{"name": name, "episodes": int(n), "passed": int(p), "pass_rate": _rate(int(p), int(n)),
             "mean_total": round(t / n, 4)} for name, (n, p, t) in acc.items()]


def _checks_of(line: Mapping[str, Any]) -> dict[str, bool]:
    """Check name -> passed for one result line (a name listed twice passes only if every instance passes)."""
    out: dict[str, bool] = {}
    for c in line.get("checks") or ():
        name = str(c.get("name"))
        out[name] = out.get(name, True) and bool(c.get("passed"))
    return out


def category_of(line: Mapping[str, Any], categories: Mapping[str, str]) -> str:
    """An episode's category: the suite's for its scenario, else its result line's own, else ``unknown``."""
    return categories.get(str(line["scenario"])) or str(line.get("category") or "unknown")


def episode_ref(line: Mapping[str, Any]) -> dict[str, Any]:
    """An episode's place in the grid, as a JSON object."""
    scenario, seed, trial = line_key(line)
    return {"scenario": scenario, "seed": seed, "trial": trial}


def _describe(ref: Mapping[str, Any]) -> str:
    return f"{ref['scenario']} seed {ref['seed']}" + (f" trial {ref['trial']}" if ref.get("trial") else "")


def summarize(run: Run, categories: Mapping[str, str]) -> dict[str, Any]:
    """The report document for one run (see the module docstring); ``categories`` maps scenario id to category."""
    lines = run.lines
    meta = run.meta or {}
    n = len(lines)
    passed = sum(bool(x["passed"]) for x in lines)
    harness = sum(x.get("harness_error") is not None for x in lines)
    trials = max((int(x.get("trial", 0)) for x in lines), default=0) + 1
    tasks: dict[tuple[str, int], list[int]] = {}
    for x in lines:
        t = tasks.setdefault((str(x["scenario"]), int(x["seed"])), [0, 0])
        t[0] += 1
        t[1] += bool(x["passed"])
    # pass^k over the tasks that have every trial (an incomplete run's partial tasks would skew it)
    full = [c for runs, c in tasks.values() if runs == trials]
    checks: dict[str, list[Any]] = {}  # name -> [runs, failed, first failing line, its detail]
    for x in lines:
        for c in x.get("checks") or ():
            name = str(c.get("name"))
            a = checks.setdefault(name, [0, 0, None, None])
            a[0] += 1
            if not c.get("passed"):
                a[1] += 1
                if a[2] is None:
                    a[2], a[3] = episode_ref(x), str(c.get("detail", ""))
    by_check = [{"name": name, "runs": r, "failed": f, "fail_rate": _rate(f, r)} for name, (r, f, _, _) in
                checks.items()]
    modes = sorted(((name, a) for name, a in checks.items() if a[1]), key=lambda kv: (-kv[1][1], kv[0]))
    return {
        "format": FORMAT,
        "run": {
            "path": str(run.path),
            "status": meta.get("status", "unknown") if run.meta is not None else "unknown",
            "complete": run.note is None,
            "note": run.note,
            "agent": meta.get("agent") or (str(lines[0]["agent"]) if lines else None),
            "contracts": contracts_of(run),
            "suite_digest": meta.get("suite_digest"),
            "seeds": meta.get("seeds"),
            "split": meta.get("split"),
            "trials": int(meta.get("trials", trials)),
            "episodes_planned": meta.get("episodes_planned"),
            "bad_lines": list(run.bad_lines),
        },
        "overall": {"episodes": n, "passed": passed, "failed": n - passed, "harness_errors": harness,
                    "pass_rate": _rate(passed, n),
                    "mean_total": round(sum(float(x["total"]) for x in lines) / n, 4) if n else 0.0},
        "pass_hat_k": pass_hat_k(full, trials) if trials > 1 and full else {},
        "by_category": sorted(_group(lines, lambda x: category_of(x, categories)),
                              key=lambda g: g["name"]),
        "by_scenario": _group(lines, lambda x: str(x["scenario"])),
        "by_check": by_check,
        "failure_modes": [{"check": name, "failed": a[1], "runs": a[0], "example": a[2], "detail": a[3]}
                          for name, a in modes],
    }


def grid_mismatch(run: Run, baseline: Run) -> str | None:
    """Why two runs do not cover the same grid (suite, scenarios, seeds, split), or None when they do."""
    if run.meta is not None and baseline.meta is not None:
        for field in GRID_FIELDS:
            if run.meta.get(field) != baseline.meta.get(field):
                return (f"their {field} differ ({_short(baseline.meta.get(field))} in {baseline.path}, "
                        f"{_short(run.meta.get(field))} in {run.path})")
        return None
    # no run.json on one side (serve's output): the episodes themselves say what was run
    mine = {(k[0], k[1]) for k in map(line_key, run.lines)}
    theirs = {(k[0], k[1]) for k in map(line_key, baseline.lines)}
    if mine != theirs:
        return f"they hold different (scenario, seed) pairs ({len(mine ^ theirs)} not in both)"
    return None


def contracts_of(run: Run) -> list[str | None]:
    """The conversation contracts a run's result lines were written under, sorted (None, first: a line written
    before the rules were stated, which has no ``contract``)."""
    return sorted({line.get("contract") for line in run.lines}, key=lambda v: (v is not None, v or ""))


def contract_change(run: Run, baseline: Run) -> str | None:
    """How the conversation's rules differ between two runs (see :mod:`simworld._episode.contract`), or None.

    The agent of each run was told the rules of its contract, so a change of contract changes what the scores
    mean; the comparison is still made (the episodes are the same), and says so.
    """
    mine, theirs = contracts_of(run), contracts_of(baseline)
    if mine == theirs:
        return None
    return f"baseline {_contracts(theirs)}, this run {_contracts(mine)}"


def _contracts(values: Sequence[str | None]) -> str:
    return " and ".join(v if v is not None else "none (written before the rules were stated)" for v in values) \
        or "no episode"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compare_runs(run: Run, baseline: Run, *, allow_different: bool = False) -> dict[str, Any]:
    """The flips from ``baseline`` to ``run`` over the episodes both hold, regressions first.

    For each (scenario, seed, trial) in both: whether it flipped (pass -> fail is a
    regression, fail -> pass a fix), the score delta, and the checks whose result changed.

    Raises:
        RunDirError: the runs cover different suites or seeds and ``allow_different`` is false.
    """
    why = grid_mismatch(run, baseline)
    if why is not None and not allow_different:
        raise RunDirError(f"report --compare: {run.path} and {baseline.path} are runs over different suites or seeds: "
                          f"{why}; add --allow-different to compare the episodes they have in common.")
    before: dict[Key, dict[str, Any]] = {}
    for line in baseline.lines:
        before.setdefault(line_key(line), line)
    seen: set[Key] = set()
    changes = []
    for line in run.lines:
        key = line_key(line)
        old = before.get(key)
        if old is None or key in seen:
            continue
        seen.add(key)
        was, now = bool(old["passed"]), bool(line["passed"])
        delta = round(float(line["total"]) - float(old["total"]), 4)
        a, b = _checks_of(old), _checks_of(line)
        changed = [{"check": name, "before": _state(a.get(name)), "after": _state(b.get(name))}
                   for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]
        if was == now and not delta and not changed:
            continue
        kind = "regression" if was and not now else "fix" if now and not was else "score" if delta else "checks"
        changes.append({**episode_ref(line), "change": kind, "before": {"passed": was, "total": old["total"]},
                        "after": {"passed": now, "total": line["total"]}, "delta": delta, "checks": changed})
    order = {"regression": 0, "fix": 1, "score": 2, "checks": 3}
    changes.sort(key=lambda c: (order[c["change"]], c["delta"], c["scenario"], c["seed"], c["trial"]))
    common = [k for k in (line_key(x) for x in run.lines) if k in before]
    common_set = set(common)
    mean = {}
    for name, lines in (("before", [before[k] for k in common]),
                        ("after", [x for x in run.lines if line_key(x) in common_set])):
        mean[name] = round(sum(float(x["total"]) for x in lines) / len(lines), 4) if lines else 0.0
    count = {kind: sum(c["change"] == kind for c in changes) for kind in order}
    return {
        "baseline": str(baseline.path),
        "run": str(run.path),
        "different_grids": why,
        "different_contracts": contract_change(run, baseline),
        "baseline_complete": baseline.note is None,
        "baseline_note": baseline.note,
        "common": len(common_set),
        "only_in_run": sum(1 for x in {line_key(x) for x in run.lines} if x not in before),
        "only_in_baseline": sum(1 for k in before if k not in common_set),
        "regressions": count["regression"],
        "fixes": count["fix"],
        "score_changes": count["score"],
        "check_changes": count["checks"],
        "passed_before": sum(bool(before[k]["passed"]) for k in common_set),
        "passed_after": sum(bool(x["passed"]) for x in run.lines if line_key(x) in common_set),
        "mean_total_before": mean["before"],
        "mean_total_after": mean["after"],
        "changes": changes,
    }


def _state(passed: bool | None) -> str:
    return "absent" if passed is None else "pass" if passed else "fail"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    out = []
    for row in (head, *rows):
        cells = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in
                 enumerate(zip(row, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
    return out


def _pct(rate: float) -> str:
    return f"{100 * rate:.1f}%"


#: At most this many rows of a breakdown, flip list or failure-mode list in the text report (JSON has all).
TEXT_ROWS = 40


def render_text(doc: Mapping[str, Any], by: Sequence[str] = ("category", "scenario")) -> str:
    """The report as plain text for a terminal: the summary, the breakdowns ``by`` asks for, the failure modes."""
    run, overall = doc["run"], doc["overall"]
    out = []
    seeds = run.get("seeds")
    from simworld._world.splits import format_seeds

    where = (f"seeds {format_seeds(list(seeds))}" if seeds else "seeds ?") + (
        f", split {run['split']}" if run.get("split") else "") + (f", trials {run['trials']}" if run["trials"] > 1
                                                                  else "")
    contracts = ", ".join(v or "none" for v in run.get("contracts") or ())
    out.append(f"run {run['path']}: agent {run['agent']}; {where}; status {run['status']}"
               + (f"; contract {contracts}" if contracts else ""))
    if run["note"]:
        out.append(f"INCOMPLETE: {run['note']}")
    if run["bad_lines"]:
        out.append(f"skipped {len(run['bad_lines'])} result line(s) that are not JSON: lines "
                   + ", ".join(map(str, run["bad_lines"][:10])) + (" ..." if len(run["bad_lines"]) > 10 else ""))
    errors = f", {overall['harness_errors']} HARNESS ERROR(S)" if overall["harness_errors"] else ""
    out.append(f"overall: {overall['passed']}/{overall['episodes']} passed ({_pct(overall['pass_rate'])}), "
               f"mean score {overall['mean_total']:.3f}{errors}")
    if doc["pass_hat_k"]:
        out.append("pass^k: " + "  ".join(f"{k} {v:.3f}" for k, v in doc["pass_hat_k"].items()))
    for kind in by:
        out.append("")
        if kind == "check":
            rows = doc["by_check"]
            out.append(f"by check ({len(rows)})")
            out += _table(("check", "runs", "failed", "fail rate"),
                          [(r["name"], str(r["runs"]), str(r["failed"]), _pct(r["fail_rate"]))
                           for r in sorted(rows, key=lambda r: (-r["failed"], r["name"]))[:TEXT_ROWS]], (1, 2, 3))
        else:
            rows = doc[f"by_{kind}"]
            out.append(f"by {kind} ({len(rows)})")
            out += _table((kind, "episodes", "passed", "pass rate", "mean score"),
                          [(r["name"], str(r["episodes"]), str(r["passed"]), _pct(r["pass_rate"]),
                            f"{r['mean_total']:.3f}") for r in rows[:TEXT_ROWS]], (1, 2, 3, 4))
        if len(rows) > TEXT_ROWS:
            out.append(f"... {len(rows) - TEXT_ROWS} more (--json lists all)")
    modes = doc["failure_modes"]
    out.append("")
    if not modes:
        out.append("failure modes: none (every check passed)")
    else:
        out.append(f"failure modes ({len(modes)} check(s) failed; most first)")
        out += _table(("check", "failed", "example"),
                      [(m["check"], f"{m['failed']}/{m['runs']}", f"{_describe(m['example'])}: {_clip(m['detail'])}")
                       for m in modes[:TEXT_ROWS]], (1,))
        if len(modes) > TEXT_ROWS:
            out.append(f"... {len(modes) - TEXT_ROWS} more (--json lists all)")
        if not doc.get("episodes"):
            out.append(f"(simworld report {run['path']} --episode {_spec(modes[0]['example'])} shows an episode's "
                       "transcript)")
    if "compare" in doc:
        out.append("")
        out += _compare_text(doc["compare"])
    from simworld._edges.transcript import render_text as transcript_text

    for episode in doc.get("episodes") or ():
        out += ["", *transcript_text(episode)]
    return "\n".join(out)


def _spec(ref: Mapping[str, Any]) -> str:
    """An episode as ``--episode`` names it."""
    return f"{ref['scenario']}:{ref['seed']}" + (f":{ref['trial']}" if ref.get("trial") else "")


def _clip(text: str | None, width: int = 90) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _compare_text(c: Mapping[str, Any]) -> list[str]:
    out = [f"compared with {c['baseline']} over {c['common']} common episode(s): {c['regressions']} regression(s) "
           f"(pass -> fail), {c['fixes']} fix(es) (fail -> pass); passed {c['passed_before']} -> {c['passed_after']}, "
           f"mean score {c['mean_total_before']:.3f} -> {c['mean_total_after']:.3f}"]
    if c["different_grids"]:
        out.append(f"note: the runs differ ({c['different_grids']}); only common episodes are compared "
                   f"({c['only_in_run']} only in this run, {c['only_in_baseline']} only in the baseline)")
    if c["different_contracts"]:
        out.append(f"note: the conversation's rules differ ({c['different_contracts']}): the agents were told "
                   "different rules, so the scores may not mean the same")
    if c["baseline_note"]:
        out.append(f"note: baseline: {c['baseline_note']}")
    changes = c["changes"]
    if not changes:
        out.append("no episode changed")
        return out
    rows = []
    for ch in changes[:TEXT_ROWS]:
        flip = ("PASS" if ch["before"]["passed"] else "FAIL") + " -> " + ("PASS" if ch["after"]["passed"] else "FAIL")
        checks = ", ".join(f"{x['check']} {x['before']}->{x['after']}" for x in ch["checks"][:3])
        more = f" (+{len(ch['checks']) - 3})" if len(ch["checks"]) > 3 else ""
        rows.append((ch["change"], _describe(ch), flip, f"{ch['delta']:+.3f}", _clip(checks + more, 70)))
    out += _table(("change", "episode", "passed", "score", "checks that changed"), rows, (3,))
    if len(changes) > TEXT_ROWS:
        out.append(f"... {len(changes) - TEXT_ROWS} more (--json lists all)")
    return out
