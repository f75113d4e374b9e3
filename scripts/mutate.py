"""Mutation testing for simworld: does the test suite notice when the code is wrong?

Each mutant is one single-point change to the AST of one module:

- arithmetic: ``+`` <-> ``-``, ``*`` -> ``/``, ``/`` -> ``*``, ``//`` -> ``/``, ``%`` -> ``//``
  (in expressions and augmented assignments);
- comparisons: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``,
  ``in`` <-> ``not in``;
- constants: every integer ``n`` -> ``n + 1`` and ``n - 1``; ``True`` <-> ``False``;
- boolean operators: ``and`` <-> ``or``; ``not x`` -> ``x``;
- returns: ``return X`` -> ``return None``.

Each mutant runs against a private copy of the tree (a temporary directory put first
on ``PYTHONPATH``, so the installed copy is never imported), with a fixed hypothesis
seed, no pytest cache, no hypothesis example database, and a per-mutant timeout; the
tests stop at the first failure (``-x``). A mutant is *killed* when the tests fail or
time out, and *survives* when they pass. The script refuses to start when the
unmutated tests fail. It writes a JSON report (every mutant) and a Markdown report
(the survivors, with their source line) under ``--out``.

Usage::

    python scripts/mutate.py graders/steps.py --tests tests/test_steps.py
    python scripts/mutate.py simworld/money.py simworld/dates.py --tests tests/test_money.py tests/test_dates.py \\
        --timeout 60 --out benchmarks/results/mutation

Why not mutmut: mutmut rewrites every function into a trampoline that dispatches to
the mutated copy, and the project's hypothesis tests then trip hypothesis's executor
health check (issue 19 reports it; not re-measured here); it also mutates strings and
docstrings, mostly equivalent noise for this code, and needs a dependency. This script
has none, runs each mutant as a plain ``pytest`` process over a copy of the tree, is
deterministic (mutants in ``ast.walk`` order, fixed seeds) and reports survivors by line
so they can be argued equivalent or killed.

A survivor can be marked as argued-equivalent in ``--equivalent FILE``: a JSON object
mapping a mutant id (``path:line:col:op``, as in the report) to the one-line argument.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a copy of the tree needs (the tests read scenarios and snapshots from the repository root).
COPY = ("simworld", "graders", "scenarios", "snapshots", "tests", "examples", "pyproject.toml", "README.md")

_BINOPS: dict[type, list[type]] = {
    ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult],
    ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv],
}
_CMPOPS: dict[type, list[type]] = {
    ast.Lt: [ast.LtE], ast.LtE: [ast.Lt], ast.Gt: [ast.GtE], ast.GtE: [ast.Gt],
    ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
    ast.In: [ast.NotIn], ast.NotIn: [ast.In],
}
_SYMBOL: dict[type, str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or"}


@dataclass(frozen=True)
class Mutant:
    """One single-point mutation: where (module, node index in ast.walk order, line, col) and what."""

    path: str
    node: int
    line: int
    col: int
    op: str  # e.g. "< -> <=", "3 -> 4", "and -> or", "drop not", "return None"
    slot: int = 0  # which operator of a chained comparison

    @property
    def id(self) -> str:
        """A stable id for reports and the equivalence file."""
        return f"{self.path}:{self.line}:{self.col}:{self.op}" + (f"#{self.slot}" if self.slot else "")


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _skipped(tree: ast.AST) -> set[int]:
    """Nodes not worth mutating: annotations, ``__all__``, ``if TYPE_CHECKING``, docstrings."""
    skip = _docstring_nodes(tree)
    for node in ast.walk(tree):
        annotations: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations = [a.annotation for a in (*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs)]
            annotations += [node.returns, getattr(node.args.vararg, "annotation", None),
                            getattr(node.args.kwarg, "annotation", None)]
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            annotations = [node]
        for a in annotations:
            if a is not None:
                skip.update(id(n) for n in ast.walk(a))
    return skip


def mutants_of(path: str, source: str) -> list[Mutant]:
    """Every single-point mutant of ``source``, in a stable order."""
    tree = ast.parse(source)
    skip = _skipped(tree)
    out: list[Mutant] = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        where = (path, index, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if isinstance(node, (ast.BinOp, ast.AugAssign)):
            for new in _BINOPS.get(type(node.op), []):
                out.append(Mutant(*where, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[new]}"))
        elif isinstance(node, ast.Compare):
            for slot, op in enumerate(node.ops):
                for new in _CMPOPS.get(type(op), []):
                    out.append(Mutant(*where, f"{_SYMBOL[type(op)]} -> {_SYMBOL[new]}", slot))
        elif isinstance(node, ast.BoolOp):
            other = "or" if isinstance(node.op, ast.And) else "and"
            out.append(Mutant(*where, f"{_SYMBOL[type(node.op)]} -> {other}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append(Mutant(*where, "drop not"))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            out.append(Mutant(*where, f"{node.value} -> {not node.value}"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            out += [Mutant(*where, f"{node.value} -> {node.value + k}") for k in (1, -1)]
        elif isinstance(node, ast.Return) and node.value is not None and \
                not (isinstance(node.value, ast.Constant) and node.value.value is None):
            out.append(Mutant(*where, "return None"))
    return out


def apply(source: str, mutant: Mutant) -> str:
    """The source of ``mutant`` (unparsed from the mutated tree)."""
    tree = ast.parse(source)
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == mutant.node)
    op = mutant.op
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        node.op = next(new() for new in _BINOPS[type(node.op)] if op.endswith(" " + _SYMBOL[new]))
    elif isinstance(node, ast.Compare):
        old = node.ops[mutant.slot]
        node.ops[mutant.slot] = next(new() for new in _CMPOPS[type(old)] if op.endswith("> " + _SYMBOL[new]))
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        _replace(tree, node, node.operand)
    elif isinstance(node, ast.Constant):
        node.value = (not node.value) if type(node.value) is bool else int(op.split(" -> ")[1])
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(None)
    else:  # pragma: no cover - mutants_of never makes one
        raise ValueError(f"cannot apply {mutant.id}")
    return ast.unparse(ast.fix_missing_locations(tree))


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return
    raise ValueError("node not found")


def _copy_tree(dest: Path) -> None:
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
        elif src.exists():
            shutil.copy2(src, dest / name)


def _run_tests(tree: Path, tests: list[str], timeout: float) -> tuple[str, float, str]:
    """('passed' | 'failed' | 'timeout', seconds, last lines of output) for the tests over ``tree``."""
    shutil.rmtree(tree / ".hypothesis", ignore_errors=True)  # no examples carried from one mutant to the next
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "--hypothesis-seed=0", "--no-header", "-W", "ignore", *tests]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", time.monotonic() - start, ""
    status = "passed" if proc.returncode == 0 else "failed"
    return status, time.monotonic() - start, "\n".join(out.strip().splitlines()[-3:])


def _source_line(source: str, line: int) -> str:
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="module files to mutate, relative to the repository root "
                                                   "(with --merge: JSON reports to merge)")
    parser.add_argument("--tests", nargs="+", help="pytest arguments selecting the tests to run")
    parser.add_argument("--merge", action="store_true", help="merge the JSON reports given as modules into one "
                                                            "report at --out, applying --equivalent; run nothing")
    parser.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 5 x baseline + 10)")
    parser.add_argument("--out", default="benchmarks/results/mutation", help="report path prefix (.json and .md)")
    parser.add_argument("--equivalent", help="JSON file: mutant id -> why it is equivalent")
    parser.add_argument("--line", type=int, action="append", help="only mutants on these lines (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--rerun", help="a previous JSON report: run only its survivors again and keep its kills, "
                                        "for when tests only grew (refused if a module changed since)")
    args = parser.parse_args(argv)

    equivalent: dict[str, str] = json.loads(Path(args.equivalent).read_text()) if args.equivalent else {}
    if args.merge:
        return _merge([Path(m) for m in args.modules], Path(args.out), equivalent)
    if not args.tests and not args.list:
        parser.error("--tests is required")
    sources = {}
    for module in args.modules:
        path = (ROOT / module).resolve()
        if not path.is_file():
            parser.error(f"no such module: {module!r}")
        sources[path.relative_to(ROOT).as_posix()] = path.read_text()
    mutants = [m for rel, src in sources.items() for m in mutants_of(rel, src)
               if not args.line or m.line in args.line]
    kept: list[dict] = []
    if args.rerun:
        previous = json.loads(Path(args.rerun).read_text())
        for rel, digest in previous.get("sources", {}).items():
            if rel in sources and _digest(sources[rel]) != digest:
                parser.error(f"{rel} changed since {args.rerun}; run every mutant again")
        again = {r["id"] for r in previous["mutants"] if r["result"] != "killed"}
        kept = [r for r in previous["mutants"] if r["result"] == "killed" and r["path"] in sources]
        mutants = [m for m in mutants if m.id in again]
    if args.list:
        for m in mutants:
            print(f"{m.id}\t{_source_line(sources[m.path], m.line)}")
        print(f"{len(mutants)} mutants", file=sys.stderr)
        return 0

    with tempfile.TemporaryDirectory(prefix="simworld-mutate-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        status, baseline, tail = _run_tests(tree, args.tests, timeout=3600)
        if status != "passed":
            print(f"refusing to start: the unmutated tests {status} ({args.tests}):\n{tail}", file=sys.stderr)
            return 2
        timeout = args.timeout or 5 * baseline + 10
        print(f"baseline passed in {baseline:.1f}s; {len(mutants)} mutants, timeout {timeout:.0f}s each",
              file=sys.stderr)
        results = []
        for n, m in enumerate(mutants, 1):
            original = sources[m.path]
            mutated = apply(original, m)
            if mutated == ast.unparse(ast.parse(original)):  # pragma: no cover - defensive
                continue
            (tree / m.path).write_text(mutated)
            try:
                status, seconds, tail = _run_tests(tree, args.tests, timeout)
            finally:
                (tree / m.path).write_text(original)
            verdict = {"passed": "survived", "failed": "killed", "timeout": "killed"}[status]
            if verdict == "survived" and m.id in equivalent:
                verdict = "equivalent"
            results.append({**asdict(m), "id": m.id, "result": verdict, "how": status, "seconds": round(seconds, 2),
                            "source": _source_line(original, m.line), "why": equivalent.get(m.id, "")})
            print(f"[{n}/{len(mutants)}] {verdict:10s} {m.id}", file=sys.stderr, flush=True)
    order = {m.id: i for i, m in enumerate(x for rel, src in sources.items() for x in mutants_of(rel, src))}
    results = sorted(kept + results, key=lambda r: order.get(r["id"], len(order)))
    _write_reports(Path(args.out), results, [f"`{' '.join(args.tests)}`"],
                   {rel: _digest(src) for rel, src in sources.items()}, selection=args.tests)
    survivors = [r for r in results if r["result"] == "survived"]
    return 1 if survivors else 0


def _merge(reports: list[Path], out: Path, equivalent: dict[str, str]) -> int:
    """One report from several (each module's own run and tests), with the equivalence arguments applied."""
    results, tests, sources = [], [], {}
    for path in reports:
        data = json.loads(path.read_text())
        tests.append(f"{', '.join(sorted({r['path'] for r in data['mutants']}))}: `{' '.join(data['tests'])}`")
        sources.update(data.get("sources", {}))
        for r in data["mutants"]:
            if r["result"] != "killed":
                r = {**r, "result": "equivalent" if r["id"] in equivalent else "survived",
                     "why": equivalent.get(r["id"], "")}
            results.append(r)
    _write_reports(out, results, tests, sources)
    return 1 if any(r["result"] == "survived" for r in results) else 0


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _write_reports(out: Path, results: list[dict], tests: list[str], sources: dict[str, str],
                   selection: list[str] | None = None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"tests": selection if selection is not None else tests, "sources": sources, "mutants": results}
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    lines = ["# Mutation report", "", "Produced by `scripts/mutate.py`. Tests run per mutant:", "",
             *[f"- {t}" for t in tests], "",
             "| file | mutants | killed | equivalent | survived | kill rate (non-equivalent) |",
             "|---|---|---|---|---|---|"]
    by_file: dict[str, list[dict]] = {}
    for r in results:
        by_file.setdefault(r["path"], []).append(r)
    for path, rs in by_file.items():
        killed = sum(r["result"] == "killed" for r in rs)
        eq = sum(r["result"] == "equivalent" for r in rs)
        alive = sum(r["result"] == "survived" for r in rs)
        rate = killed / (killed + alive) if killed + alive else 1.0
        lines.append(f"| {path} | {len(rs)} | {killed} | {eq} | {alive} | {rate:.1%} |")
    for title, kind in (("Survivors", "survived"), ("Equivalent mutants", "equivalent")):
        rows = [r for r in results if r["result"] == kind]
        if rows:
            lines += ["", f"## {title}", ""]
            lines += [f"- `{r['id']}` — `{r['source']}`" + (f" — {r['why']}" if r["why"] else "") for r in rows]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
