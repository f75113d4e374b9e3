"""The ``simworld`` command line: run, list, replay.

Errors in arguments or files print one line naming what was wrong and how to fix
it, and exit with status 2; a run whose episodes fail exits with status 1.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated

import typer

from simworld.errors import SimworldError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="A deterministic simulated billing world for evaluating and training agents.")


# click's UsageError (bad option, bad value, unknown command), found through the one subclass typer
# exports publicly, so this works whether typer vendors click or depends on it.
_UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"simworld: error: {message}", err=True)
    return typer.Exit(2)


class _Progress:
    """A one-line progress bar on stderr, drawn only on a terminal; timed by the real clock."""

    def __init__(self) -> None:
        self.live = sys.stderr.isatty()

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.live:
            return
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(f"\r[{bar}] {done}/{total} {label[:40]:<40}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


@app.command()
def run(
    seed: Annotated[int, typer.Option(help="Seed that perturbs every scenario (amounts, dates, currencies).")] = 0,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Scenario id; repeat for several. "
                                                                          "Default: the whole suite.")] = None,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    agent: Annotated[str, typer.Option(help="reference, noop, random, scripted:PATH or python:MODULE:ATTR.")]
    = "reference",
    out: Annotated[Path, typer.Option(help="Directory for results.jsonl, events/ and run.json.")]
    = Path("simworld-out"),
    split: Annotated[str, typer.Option(help="dev (the seed as given) or holdout (each scenario's reserved "
                                            "N-th holdout seed).")] = "dev",
    snapshot: Annotated[str | None, typer.Option(help="Run every scenario on this snapshot (e.g. large) "
                                                      "instead of its own.")] = None,
    trials: Annotated[int, typer.Option(help="Run each scenario and seed K times; report pass^k.")] = 1,
    concurrency: Annotated[int, typer.Option(help="Episodes at once, for agents that wait on the network.")] = 1,
    base_url: Annotated[str | None, typer.Option(help="For --agent openai:MODEL: an OpenAI-compatible endpoint.")]
    = None,
) -> None:
    """Run an agent over the suite at one seed; write results, event logs and run metadata."""
    from simworld.agents import build_agent_factory
    from simworld.runner import run_suite
    from simworld.scenario import load_suite

    try:
        factory = build_agent_factory(agent, base_url=base_url)
        scenarios = load_suite(suite, scenario, snapshot)
        result = run_suite(scenarios, [seed], agent, factory, out, argv=sys.argv[1:], split=split, trials=trials,
                           concurrency=concurrency, progress=_Progress())
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    rows = [(r["scenario"], str(r["seed"]), *((str(r["trial"]),) if trials > 1 else ()), str(r["outcome"]),
             "PASS" if r["passed"] else "FAIL", f"{r['total']:.2f}") for r in result.results]
    head = ("scenario", "seed", *(("trial",) if trials > 1 else ()), "outcome", "passed", "score")
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    passed = sum(1 for r in result.results if r["passed"])
    if trials > 1:
        typer.echo("\nper task: " + ", ".join(f"{t['scenario']}@{t['seed']} {t['successes']}/{t['trials']}"
                                              for t in result.summary["tasks"]))
        typer.echo("  ".join(f"{k} {v:.3f}" for k, v in result.summary["pass_hat_k"].items()))
    typer.echo(f"{passed}/{len(rows)} passed; agent {agent}; seed {seed}; "
               f"{len(rows) / max(result.wall_seconds, 1e-9):.1f} episodes/s; written to {out}/")
    if passed != len(rows):
        raise typer.Exit(1)


@app.command("list")
def list_(suite: Annotated[Path | None, typer.Option(help="Directory of scenarios.")] = None) -> None:
    """List the scenarios: id, category, allowed outcomes, description."""
    from simworld.scenario import load_suite

    try:
        scenarios = load_suite(suite)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    for s in scenarios:
        typer.echo(f"{s.id:<34} {s.category:<15} {','.join(s.allowed_outcomes):<28} {s.description}")


@app.command()
def replay(
    events: Annotated[Path, typer.Argument(help="An events/*.jsonl file written by simworld run.")],
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Rebuild the world from the seed's snapshot by re-applying the recorded writes; confirm the state hash."""
    from simworld.replay import replay as do_replay
    from simworld.scenario import load_suite

    try:
        scenarios = {s.id: s for s in load_suite(suite)}
        report = do_replay(events, scenarios)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"replayed {report.scenario} seed {report.seed}: {report.applied} write(s) re-applied; "
               f"final state hash {report.final_state_hash} confirmed")


@app.command()
def show(
    scenario: Annotated[str, typer.Argument(help="Scenario id.")],
    seed: Annotated[int, typer.Option(help="Seed to render the scenario at.")] = 0,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Show what the agent would see (request, policy, tools) and a summary of the world it acts on."""
    from simworld.scenario import load_suite
    from simworld.show import render_scenario

    try:
        (loaded,) = load_suite(suite, [scenario])
        typer.echo(render_scenario(loaded, seed))
    except SimworldError as exc:
        raise _fail(str(exc)) from None


@app.command()
def generate(
    out: Annotated[Path, typer.Option(help="Where to write the snapshot, e.g. snapshots/large.json.")],
    customers: Annotated[int, typer.Option(help="How many customers to generate.")] = 500,
    seed: Annotated[int, typer.Option(help="Seed of the generator; the same seed writes the same bytes.")] = 1,
    base: Annotated[str, typer.Option(help="Snapshot whose records are kept (so scenarios' targets exist).")]
    = "small",
) -> None:
    """Generate a large world from a seed: the base snapshot's records plus generated customers."""
    from simworld.generate import generate as make
    from simworld.scenario import bundled_root
    from simworld.snapshot import SnapshotLoader

    if customers < 0:
        raise _fail(f"--customers {customers} is negative; give a count >= 0.")
    try:
        data = make(SnapshotLoader().load(bundled_root() / "snapshots" / f"{base}.json"), customers, seed)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"wrote {out}: {len(data):,} bytes, {customers} generated customers on top of {base!r}")


@app.command()
def probe(
    scenario: Annotated[str, typer.Option("--scenario", help="Scenario id to probe.")],
    agent: Annotated[str, typer.Option(help="The agent: reference, drift:KIND, python:MODULE:ATTR, ...")]
    = "reference",
    examples: Annotated[int, typer.Option(help="At most this many perturbed seeds.")] = 200,
    seed: Annotated[int | None, typer.Option(help="Seed hypothesis's own search, for a reproducible probe "
                                                  "(as in hypothesis, a seeded search leaves the database alone).")]
    = None,
    deadline: Annotated[float, typer.Option(help="Stop generating new examples after this many seconds.")] = 120.0,
    db: Annotated[Path, typer.Option(help="Hypothesis example database: failures found are tried first next time.")]
    = Path(".simworld-probe"),
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Hypothesis draws perturbed seeds until the agent drifts; print the shrunk seed and how to replay it."""
    from simworld.agents import build_agent_factory
    from simworld.probe import probe as run_probe
    from simworld.scenario import load_suite

    if examples < 1:
        raise _fail(f"--examples {examples}: give at least 1.")
    try:
        build_agent_factory(agent)
        (loaded,) = load_suite(suite, [scenario])
        report = run_probe(loaded, agent, examples=examples, seed=seed, deadline_s=deadline, db=db,
                           suite_arg=str(suite) if suite else None)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    rate = f"{report.examples} example(s) in {report.seconds:.2f} s ({report.rate:.1f} examples/s)"
    if report.failure is None:
        note = "; stopped at the deadline" if report.stopped_by_deadline else ""
        typer.echo(f"no drift found: {agent} on {scenario}, {rate}{note}")
        return
    f = report.failure
    typer.echo(f"DRIFT: {agent} fails {scenario}; shrunk to seed {f.seed} ({rate})")
    typer.echo("  parameters: " + ", ".join(f"{k}={v}" for k, v in f.variables.items()))
    for line in f.failed_checks:
        typer.echo(f"  failed check: {line}")
    for line in f.violations:
        typer.echo(f"  invariant: {line}")
    for d in f.state_diff[:8]:
        typer.echo(f"  state diff: {d['path']}: expected {d['expected']!r}, got {d['actual']!r}")
    if len(f.state_diff) > 8:
        typer.echo(f"  state diff: ... {len(f.state_diff) - 8} more")
    typer.echo(f"  replay: {f.command}")
    raise typer.Exit(1)


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by simworld run.")],
    format: Annotated[str, typer.Option("--format", help="native, openai or trl.")] = "native",
    passed_only: Annotated[bool, typer.Option("--passed-only", help="Only episodes that passed.")] = False,
    min_score: Annotated[float | None, typer.Option(help="Only episodes whose total is at least this.")] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this scenario; repeat for several.")]
    = None,
    out: Annotated[Path | None, typer.Option(help="Output file. Default: standard output.")] = None,
) -> None:
    """Export a run's episodes as JSON lines for training: native, OpenAI chat fine-tuning or TRL."""
    from simworld.export import export_run

    try:
        if out is None:
            report = export_run(run_dir, format, sys.stdout.buffer, passed_only=passed_only, min_score=min_score,
                                scenarios=scenario or ())
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("wb") as f:
                report = export_run(run_dir, format, f, passed_only=passed_only, min_score=min_score,
                                    scenarios=scenario or ())
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"exported {report.written} episode(s) as {format}; {report.filtered} filtered out, "
               f"{report.holdout_skipped} holdout episode(s) never exported", err=True)


@app.command()
def serve(
    scenario: Annotated[str, typer.Option(help="Scenario id.")],
    seed: Annotated[int, typer.Option(help="Seed that perturbs the scenario.")] = 0,
    transport: Annotated[str, typer.Option(help="stdio, or http (streamable HTTP at http://HOST:PORT/mcp).")]
    = "stdio",
    out: Annotated[Path | None, typer.Option(help="Directory for results.jsonl and events/ when the episode ends.")]
    = None,
    host: Annotated[str, typer.Option(help="Address to bind with --transport http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind with --transport http.")] = 8000,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Serve one episode's tools over MCP for an MCP client's model to play; grade and write it when it ends."""
    from simworld.mcp_server import serve as do_serve
    from simworld.scenario import load_suite

    try:
        (loaded,) = load_suite(suite, [scenario])
        do_serve(loaded, seed, transport=transport, out=out, host=host, port=port)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None


@app.command("grade")
def grade_(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by simworld run (with events/).")],
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    out: Annotated[Path | None, typer.Option(help="Where to write the result lines. "
                                                  "Default: RUN_DIR/regraded.jsonl.")] = None,
) -> None:
    """Grade a run's recorded event logs again with the current graders, without running the agent."""
    from simworld.runner import regrade
    from simworld.scenario import load_suite

    target = out or run_dir / "regraded.jsonl"
    try:
        results = regrade(run_dir, load_suite(suite), target)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    passed = sum(1 for r in results if r["passed"])
    typer.echo(f"regraded {len(results)} episode(s): {passed} passed; written to {target}")


@app.command()
def check(
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    seeds: Annotated[str, typer.Option(help="Seeds to check, A..B inclusive.")] = "0..9",
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Scenario id; repeat for several.")]
    = None,
) -> None:
    """Prove every scenario's graders load-bearing: solutions pass, noop fails, mutants of the solution fail."""
    from collections import Counter

    from simworld.check import check_scenario, parse_seeds, summary_score
    from simworld.clock import TimeGuard
    from simworld.scenario import load_suite

    try:
        seed_list = parse_seeds(seeds)
        scenarios = load_suite(suite, scenario)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    progress = _Progress()
    reports = []
    with TimeGuard() as guard:
        for i, sc in enumerate(scenarios):
            reports.append(check_scenario(sc, seed_list, guard, functools.partial(progress, i, len(scenarios))))
    progress(len(scenarios), len(scenarios), "done")
    head = ("scenario", "seeds", "solutions", "noop", "mutants", "killed", "equivalent", "survived", "score", "check")
    rows = [(r.scenario, str(r.seeds), "pass" if not r.solution_failures else f"{len(r.solution_failures)} FAIL",
             "fails" if not r.noop_passes else f"PASSES x{len(r.noop_passes)}", str(len(r.outcomes)),
             str(r.count("killed")), str(r.count("equivalent")), str(r.count("survived")), f"{r.score:.3f}",
             "PASS" if r.ok else "FAIL") for r in reports]
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    killed = sum(r.count("killed") for r in reports)
    survived = sum(r.count("survived") for r in reports)
    equivalent = sum(r.count("equivalent") for r in reports)
    typer.echo(f"\nmutation score {summary_score(reports):.3f}: {killed} of {killed + survived} non-equivalent "
               f"mutants killed; {equivalent} equivalent; seeds {seeds}")
    for title, status in (("equivalent mutants (valid answers, not misses)", "equivalent"),
                          ("SURVIVING mutants (the graders do not tell them from a right answer)", "survived")):
        groups = Counter((r.scenario, o.mutant.operator, o.mutant.description, o.reason)
                         for r in reports for o in r.outcomes if o.status == status)
        if groups:
            typer.echo(f"\n{title}:")
            for (sid, op, desc, reason), n in sorted(groups.items()):
                typer.echo(f"  {sid}: {op}: {desc} [{n} seed(s)]: {reason}")
    for r in reports:
        for failure in r.solution_failures:
            typer.echo(f"\nSOLUTION FAILS {r.scenario}: {failure}")
        if r.noop_passes:
            typer.echo(f"\nNOOP PASSES {r.scenario} at seeds {r.noop_passes}")
    bad = [r.scenario for r in reports if not r.ok]
    if bad:
        typer.echo(f"\n{len(bad)} scenario(s) whose graders do not discriminate: {', '.join(bad)}")
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point: usage errors are one line on stderr and exit status 2."""
    try:
        code = app(standalone_mode=False)
    except _UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `simworld`: the help, not an error
            typer.echo(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(0)
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "simworld"
        message = exc.format_message()  # type: ignore[attr-defined]
        typer.echo(f"simworld: error: {message} (see '{where} --help')", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("simworld: aborted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
