"""The ``simworld`` command line: run, list, replay.

Errors in arguments or files print one line naming what was wrong and how to fix
it, and exit with status 2; a run whose episodes fail exits with status 1.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from simworld._world.vocab import DRIFTS
from simworld.errors import SimworldError

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"auto_envvar_prefix": "SIMWORLD"},
                  help="A deterministic simulated billing world for evaluating and training agents.\n\n"
                       "Every option can also be set by an environment variable, SIMWORLD_COMMAND_OPTION "
                       "(e.g. SIMWORLD_RUN_SEEDS=0..9); each command's --help names them. NO_COLOR is honoured.")


class Executor(StrEnum):
    """Where a run's episodes are played."""

    local = "local"
    ray = "ray"


class Split(StrEnum):
    """Which seeds a command runs: the dev seeds as given, or each scenario's reserved holdout seeds."""

    dev = "dev"
    holdout = "holdout"


class ExportFormat(StrEnum):
    """``simworld export --format``."""

    native = "native"
    openai = "openai"
    trl = "trl"


class Transport(StrEnum):
    """``simworld serve --transport``."""

    stdio = "stdio"
    http = "http"


#: Every agent kind ``--agent`` takes, for help texts.
AGENTS_HELP = (f'reference, noop, random, drift:KIND ({", ".join(DRIFTS)}), scripted:PATH, cmd:"COMMAND", '
               'openai:MODEL (OPENAI_API_KEY, OPENAI_BASE_URL) or python:MODULE:ATTR.')


def _version(value: bool) -> None:
    if value:
        from simworld._running.runner import simworld_version

        typer.echo(f"simworld {simworld_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, expose_value=True,
                                          help="Print simworld's version and exit.")] = False,
) -> None:
    """A deterministic simulated billing world for evaluating and training agents."""
    from simworld._world.diskcache import cache_setting_problem

    problem = cache_setting_problem()  # before any work, whichever command reads the cache
    if problem is not None:
        raise _fail(problem)


# click's UsageError (bad option, bad value, unknown command), found through the one subclass typer
# exports publicly, so this works whether typer vendors click or depends on it.
_UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"simworld: error: {message}", err=True)
    return typer.Exit(2)


def _no_cache(no_cache: bool) -> None:
    """``--no-cache``: end states are played again, never read from or written to disk."""
    if no_cache:
        from simworld._episode.endstates import set_disk_cache

        set_disk_cache(False)


#: ``simworld run``'s exit statuses, shown in its --help and the documentation (Long runs).
EXIT_CODES = ("0 every episode passed; 1 some episode failed (or the mean score is under --fail-under); "
              "2 bad arguments or files; 3 a harness error in some episode (its line says which).")


@app.command(help="Run an agent over the suite for one or more seeds; write results, event logs and run.json as it "
                  "goes.\n\nExit status: " + EXIT_CODES)
def run(
    seed: Annotated[int | None, typer.Option(help="One seed that perturbs every scenario (amounts, dates, "
                                                  "currencies). Default 0.")] = None,
    seeds: Annotated[str | None, typer.Option(help="Several seeds: A..B (inclusive), 3,7,11, or a mix (0..4,9).")]
    = None,
    world: Annotated[Path | None, typer.Option(help="A world file ({\"scenario\": ID, \"world\": {...}}, as "
                                                    "simworld probe writes it): run its scenario at exactly those "
                                                    "parameters instead of a seed.")] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Scenario id; repeat for several. "
                                                                          "Default: the whole suite.")] = None,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    agent: Annotated[str, typer.Option(help=AGENTS_HELP)] = "reference",
    out: Annotated[Path, typer.Option(help="Directory for results.jsonl, events/ and run.json.")]
    = Path("simworld-out"),
    split: Annotated[Split, typer.Option(help="dev (the seeds as given) or holdout (each scenario's reserved "
                                              "N-th holdout seed for each seed N).")] = Split.dev,
    snapshot: Annotated[str | None, typer.Option(help="Run every scenario on this snapshot (e.g. large) "
                                                      "instead of its own.")] = None,
    trials: Annotated[int, typer.Option(help="Run each scenario and seed K times; report pass^k.")] = 1,
    concurrency: Annotated[int, typer.Option(help="Episodes at once on threads, for agents that wait on the "
                                                  "network.")] = 1,
    workers: Annotated[int, typer.Option(help="Episodes at once on this many processes, for agents that use the "
                                              "CPU (every core: --workers $(nproc)).")] = 1,
    isolate: Annotated[bool, typer.Option(help="Play every episode in a worker process, even with one worker, so "
                                               "that an agent that ends its process (os._exit) loses only its "
                                               "episode.")] = False,
    executor: Annotated[Executor, typer.Option(help="local (this machine) or ray (Ray tasks on a cluster; needs "
                                                    "simworld[ray]).")] = Executor.local,
    ray_address: Annotated[str | None, typer.Option(help="With --executor ray: the cluster's address "
                                                         "(ray://HOST:10001 or HOST:6379); a local Ray instance "
                                                         "when not given.")] = None,
    shard: Annotated[str | None, typer.Option(help="Run only slice I of N of the (scenario, seed, trial) grid, "
                                                   "e.g. 2/4; join the shards with simworld merge.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out: run only the episodes it "
                                                          "lacks (the arguments must match its run.json).")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the run already in --out.")] = False,
    fail_under: Annotated[float | None, typer.Option(help="Exit 1 when the mean score is below this.")] = None,
    base_url: Annotated[str | None, typer.Option(help="For --agent openai:MODEL: an OpenAI-compatible endpoint. "
                                                      "Default: $OPENAI_BASE_URL, else OpenAI's.")]
    = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Play every solution again instead of reading the "
                                                          "cached end states (see SIMWORLD_CACHE_DIR).")] = False,
    max_retries: Annotated[int, typer.Option(help="For --agent openai:MODEL: retries of a request that failed "
                                                  "with 408, 409, 429, 5xx or a connection error (exponential "
                                                  "backoff with jitter; Retry-After honoured).")] = 5,
    request_timeout: Annotated[float, typer.Option(help="For --agent openai:MODEL: seconds one request may wait "
                                                        "for the server (the episode's timeout still applies).")]
    = 60.0,
    temperature: Annotated[float, typer.Option(help="For --agent openai:MODEL: the sampling temperature.")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", envvar="SIMWORLD_RUN_JSON",
                                          help="Print the summary as one JSON document on stdout "
                                                         "instead of the table (progress stays on stderr).")]
    = False,
) -> None:
    from simworld._edges.run_command import run_command

    code = run_command(seed=seed, seeds=seeds, world=world, scenario=scenario, suite=suite, agent=agent, out=out,
                       split=split.value, snapshot=snapshot, trials=trials, concurrency=concurrency, workers=workers,
                       isolate=isolate, executor=executor.value, ray_address=ray_address, shard=shard, resume=resume,
                       overwrite=overwrite, fail_under=fail_under, base_url=base_url, no_cache=no_cache,
                       max_retries=max_retries, request_timeout=request_timeout, temperature=temperature,
                       as_json=as_json)
    if code:
        raise typer.Exit(code)


@app.command()
def merge(
    out: Annotated[Path, typer.Argument(help="Directory for the merged run.")],
    runs: Annotated[list[Path], typer.Argument(help="The shard directories (simworld run --shard I/N), all N.")],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a run already in OUT.")] = False,
) -> None:
    """Join the shards of one sweep into one run, as if the whole grid had run at once."""
    from simworld._running.rundir import merge_runs

    try:
        report = merge_runs(out, runs, overwrite=overwrite)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"merged {len(runs)} shard(s) into {out}/: {report['episodes']} of {report['episodes_planned']} "
               f"episode(s), {report['passed']} passed; status {report['status']}")


@app.command("list")
def list_(suite: Annotated[Path | None, typer.Option(help="Directory of scenarios.")] = None) -> None:
    """List the scenarios: id, category, allowed outcomes, description (a holdout instance's are not shown)."""
    from simworld._scenario.scenario import load_suite

    try:
        scenarios = load_suite(suite)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    for s in scenarios:
        if s.split == "holdout":  # its outcomes and description would tell what the instance tests
            typer.echo(f"{s.id:<34} {s.category:<15} {'(holdout)':<28} a holdout instance: run it with --split "
                       "holdout")
            continue
        typer.echo(f"{s.id:<34} {s.category:<15} {','.join(s.allowed_outcomes):<28} {s.description}")


@app.command()
def replay(
    events: Annotated[Path, typer.Argument(help="An events/*.jsonl file written by simworld run.")],
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Rebuild the world from the seed's snapshot by re-applying the recorded writes; confirm the state hash."""
    from simworld._episode.replay import replay as do_replay
    from simworld._scenario.scenario import load_suite

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
    seed: Annotated[int, typer.Option(help="Dev seed to render the scenario at.")] = 0,
    split: Annotated[Split, typer.Option(help="dev only: show never prints a holdout world (that would leak it).")]
    = Split.dev,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Show what the agent would see (request, policy, tools) and a summary of the world it acts on (dev seeds only)."""
    from simworld._edges.show import check_showable, render_scenario
    from simworld._scenario.scenario import load_suite

    try:
        check_showable(seed, split.value)
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
    from simworld._running.rundir import check_output_file
    from simworld._scenario.scenario import bundled_root
    from simworld._world.generate import generate as make
    from simworld._world.snapshot import SnapshotLoader

    if customers < 0:
        raise _fail(f"--customers {customers} is negative; give a count >= 0.")
    try:
        check_output_file(out, "generate --out")
        data = make(SnapshotLoader().load(bundled_root() / "snapshots" / f"{base}.json"), customers, seed)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"wrote {out}: {len(data):,} bytes, {customers} generated customers on top of {base!r}")


@app.command()
def probe(
    scenario: Annotated[str, typer.Option("--scenario", help="Scenario id to probe.")],
    agent: Annotated[str, typer.Option(help=AGENTS_HELP)] = "reference",
    examples: Annotated[int, typer.Option(help="At most this many perturbed worlds.")] = 200,
    seed: Annotated[int | None, typer.Option(help="Seed hypothesis's own search, for a reproducible probe "
                                                  "(as in hypothesis, a seeded search leaves the database alone).")]
    = None,
    deadline: Annotated[float, typer.Option(help="Stop generating new examples after this many seconds.")] = 120.0,
    db: Annotated[Path, typer.Option(help="Hypothesis example database: failures found are tried first next time. "
                                          "The shrunk world is written under DB/worlds/.")]
    = Path(".simworld-probe"),
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Play every solution again instead of reading the "
                                                          "cached end states (see SIMWORLD_CACHE_DIR).")] = False,
) -> None:
    """Hypothesis draws a scenario's world parameters until the agent drifts; print the simplest failing world
    (written to a file) and the command that replays it."""
    _no_cache(no_cache)
    from simworld._agents.kinds import build_agent_factory
    from simworld._running.probe import probe as run_probe
    from simworld._scenario.scenario import load_suite

    if examples < 1:
        raise _fail(f"--examples {examples}: give at least 1.")
    try:
        build_agent_factory(agent)
        (loaded,) = load_suite(suite, [scenario])
        report = run_probe(loaded, agent, examples=examples, seed=seed, deadline_s=deadline, db=db,
                           suite_arg=str(suite) if suite else None)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    rate = f"{report.examples} example(s) in {report.seconds:.2f} s ({report.rate:.1f} examples/s)"
    if report.failure is None:
        note = "; stopped at the deadline" if report.stopped_by_deadline else \
            "; that is every world the scenario has" if report.exhausted else ""
        typer.echo(f"no drift found: {agent} on {scenario}, {rate}{note}")
        return
    f = report.failure
    typer.echo(f"DRIFT: {agent} fails {scenario}; first at example {report.first_failure_at}, shrunk to this world "
               f"({rate}):")
    flat = [(k, v) for k, v in f.world.items() if k != "params"]
    flat += [(f"params.{k}", v) for k, v in f.world.get("params", {}).items()]
    width = max((len(k) for k, _ in flat), default=0)
    for key, value in flat:
        typer.echo(f"  world: {key.ljust(width)}  {value}")
    typer.echo("  which gives: " + ", ".join(f"{k}={v}" for k, v in f.variables.items()))
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
    format: Annotated[ExportFormat, typer.Option("--format", help="native (the whole episode and its grade), "
                                                                  "openai (chat fine-tuning) or trl (Hugging "
                                                                  "Face conversational).")]
    = ExportFormat.native,
    passed_only: Annotated[bool, typer.Option("--passed-only", help="Only episodes that passed.")] = False,
    min_score: Annotated[float | None, typer.Option(help="Only episodes whose total is at least this.")] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this scenario; repeat for several.")]
    = None,
    out: Annotated[Path | None, typer.Option(help="Output file. Default: standard output.")] = None,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip (and count) result lines that "
                                                                          "are not JSON instead of stopping.")]
    = False,
    workers: Annotated[int, typer.Option(help="Lines built on this many processes (the bytes written do not "
                                              "depend on it).")] = 1,
) -> None:
    """Export a run's episodes as JSON lines for training: native, OpenAI chat fine-tuning or TRL."""
    from simworld._edges.export import export_run
    from simworld._running.rundir import atomic_output, refuse_own_input

    try:
        if out is None:
            report = export_run(run_dir, format.value, sys.stdout.buffer, passed_only=passed_only, min_score=min_score,
                                scenarios=scenario or (), skip_bad_lines=skip_bad_lines, workers=workers)
        else:
            refuse_own_input(out, run_dir, "export --out")
            with atomic_output(out) as f:
                report = export_run(run_dir, format.value, f, passed_only=passed_only, min_score=min_score,
                                    scenarios=scenario or (), skip_bad_lines=skip_bad_lines, workers=workers)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    if report.bad_lines:
        typer.echo(f"simworld: note: skipped {report.bad_lines} result line(s) that are not JSON", err=True)
    errors = f", {report.harness_errors} with a harness error left out" if report.harness_errors else ""
    typer.echo(f"exported {report.written} episode(s) as {format}; {report.filtered} filtered out, "
               f"{report.holdout_skipped} holdout episode(s) never exported{errors}", err=True)
    _note_incomplete(run_dir, report.written + report.filtered + report.holdout_skipped + report.harness_errors)


def _note_incomplete(run_dir: Path, episodes: int) -> None:
    """Say on stderr, in one line, that a run directory holds an incomplete run (read as far as it got)."""
    from simworld._running.rundir import describe_status, read_meta

    try:
        note = describe_status(run_dir, read_meta(run_dir), episodes)
    except SimworldError as exc:
        note = str(exc)
    if note:
        typer.echo(f"simworld: note: {note}", err=True)


class By(StrEnum):
    """What ``simworld report --by`` breaks a run down by."""

    category = "category"
    scenario = "scenario"
    check = "check"


@app.command(help="Report on a run: pass rate and mean score overall, by category and by scenario, pass^k, and the "
                  "failure modes ranked; --compare adds the flips from a baseline run; --episode adds an "
                  "episode's transcript; --html writes a self-contained page (every episode's transcript on a "
                  "click).\n\nExit status: 0 reported; 1 with --compare, some episode regressed "
                  "(pass -> fail); 2 bad arguments or files (or runs over different suites or seeds without "
                  "--allow-different).")
def report(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN", help="A directory written by simworld run (or merge).")],
    compare: Annotated[Path | None, typer.Option(metavar="BASELINE", help="A baseline run to compare with: flips "
                                                                         "(pass -> fail, fail -> pass), score "
                                                                         "deltas and the checks that changed, "
                                                                         "from BASELINE to RUN.")] = None,
    allow_different: Annotated[bool, typer.Option("--allow-different", help="Compare runs over different suites or "
                                                                            "seeds (their common episodes).")]
    = False,
    by: Annotated[list[By] | None, typer.Option("--by", help="Breakdowns in the text report; repeat for several. "
                                                             "Default: category and scenario.")] = None,
    as_json: Annotated[bool, typer.Option("--json", envvar="SIMWORLD_REPORT_JSON",
                                          help="Print the report as one JSON document.")] = False,
    episode: Annotated[list[str] | None, typer.Option("--episode", metavar="SCENARIO:SEED[:TRIAL]",
                                                      help="Add this episode's transcript: what the agent was "
                                                           "shown, said and called, in order, with the checks that "
                                                           "failed beside each turn; repeat for several.")] = None,
    html: Annotated[Path | None, typer.Option(metavar="FILE", help="Also write a self-contained HTML report "
                                                                   "(no network; opens from disk).")] = None,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios, for their categories. Default: the "
                                                    "bundled suite.")] = None,
    skip_bad_lines: Annotated[bool, typer.Option("--skip-bad-lines", help="Skip (and count) result lines that "
                                                                          "are not JSON instead of stopping.")]
    = False,
) -> None:
    from simworld._edges.report import compare_runs, load_run, render_text, summarize
    from simworld._edges.report_html import write_html
    from simworld._running.rundir import atomic_output, refuse_own_input
    from simworld._scenario.scenario import load_suite

    try:
        run_ = load_run(run_dir, skip_bad_lines=skip_bad_lines)
        baseline = load_run(compare, skip_bad_lines=skip_bad_lines) if compare is not None else None
        categories = {s.id: s.category for s in load_suite(suite)}
        doc = summarize(run_, categories)
        if baseline is not None:
            doc["compare"] = compare_runs(run_, baseline, allow_different=allow_different)
        if episode:
            from simworld._edges.transcript import find_episode, transcript

            doc["episodes"] = [transcript(run_.path, find_episode(run_.lines, spec)) for spec in episode]
        if html is not None:
            refuse_own_input(html, run_dir, "report --html")
            with atomic_output(html) as f:
                write_html(doc, run_, categories, f)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        typer.echo(render_text(doc, [b.value for b in by] if by else ("category", "scenario")))
    if html is not None:
        typer.echo(f"simworld: wrote {html} ({html.stat().st_size:,} bytes)", err=True)
    if run_.note:
        typer.echo(f"simworld: note: {run_.note}", err=True)
    if baseline is not None and doc["compare"]["regressions"]:
        raise typer.Exit(1)


@app.command()
def serve(
    scenario: Annotated[str, typer.Option(help="Scenario id.")],
    seed: Annotated[int, typer.Option(help="Seed that perturbs the scenario (with --split holdout: the N-th "
                                           "reserved holdout seed).")] = 0,
    split: Annotated[Split, typer.Option(help="dev (the seed as given) or holdout (the scenario's N-th reserved "
                                            "holdout seed).")] = Split.dev,
    transport: Annotated[Transport, typer.Option(help="stdio, or http (streamable HTTP at "
                                                      "http://HOST:PORT/mcp).")]
    = Transport.stdio,
    out: Annotated[Path | None, typer.Option(help="Directory for results.jsonl and events/: one line and one "
                                                  "event file per episode, as it ends.")] = None,
    host: Annotated[str, typer.Option(help="Address to bind with --transport http (loopback unless "
                                           "--allow-remote).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind with --transport http.")] = 8000,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Allow a --host that is not loopback; "
                                                                      "needs a bearer token.")] = False,
    token: Annotated[str | None, typer.Option(envvar="SIMWORLD_TOKEN", show_default=False,
                                              help="Bearer token every HTTP request must carry (prefer the "
                                                   "environment variable: a command line is visible to other "
                                                   "users).")] = None,
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
) -> None:
    """Serve a scenario's tools over MCP for MCP clients' models to play: each MCP session is its own episode at
    the seed, graded and written when it ends (a session left before a terminal call is written as stopped)."""
    from simworld._edges.serve import serve as do_serve
    from simworld._scenario.scenario import load_suite

    try:
        (loaded,) = load_suite(suite, [scenario])
        do_serve(loaded, seed, split=split.value, transport=transport.value, out=out, host=host, port=port,
                 allow_remote=allow_remote, token=token)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@app.command("grade")
def grade_(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by simworld run (with events/).")],
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    out: Annotated[Path | None, typer.Option(help="Where to write the result lines. "
                                                  "Default: RUN_DIR/regraded.jsonl.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Play every solution again instead of reading the "
                                                          "cached end states (see SIMWORLD_CACHE_DIR).")] = False,
) -> None:
    """Grade a run's recorded event logs again with the current graders, without running the agent."""
    _no_cache(no_cache)
    from simworld._running.rundir import refuse_own_input
    from simworld._running.runner import regrade
    from simworld._scenario.scenario import load_suite

    target = out or run_dir / "regraded.jsonl"
    try:
        refuse_own_input(target, run_dir, "grade --out")
        results = regrade(run_dir, load_suite(suite), target)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"grade --out {str(target)!r}: cannot write it ({exc.strerror or exc}); give a writable path.") \
            from None
    passed = sum(1 for r in results if r["passed"])
    typer.echo(f"regraded {len(results)} episode(s): {passed} passed; written to {target}")
    _note_incomplete(run_dir, len(results))


@app.command()
def check(
    suite: Annotated[Path | None, typer.Option(help="Directory of scenarios. Default: the bundled suite.")] = None,
    seeds: Annotated[str, typer.Option(help="Seeds to check, A..B inclusive.")] = "0..9",
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Scenario id; repeat for several.")]
    = None,
    split: Annotated[Split, typer.Option(help="dev (the seeds as given) or holdout (each scenario's reserved "
                                              "N-th holdout seed for each seed N).")] = Split.dev,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Play every solution again instead of reading the "
                                                          "cached end states (see SIMWORLD_CACHE_DIR).")] = False,
) -> None:
    """Prove every scenario's graders load-bearing: solutions pass, noop fails, mutants of the solution fail.

    A solution file that does not play is reported on its own (BROKEN SOLUTION) and the
    other scenarios are still checked; either kind of failure exits 1.
    """
    _no_cache(no_cache)
    from collections import Counter

    from simworld._running.check import BrokenSolution, check_scenario, parse_seeds, summary_score
    from simworld._scenario.scenario import check_split, load_suite
    from simworld._world.clock import TimeGuard
    from simworld._world.splits import check_seed

    try:
        seed_list = parse_seeds(seeds)
        for n in seed_list:
            check_seed(n, split.value, "--seeds")
        scenarios = load_suite(suite, scenario)
        check_split(scenarios, split.value)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    from simworld._edges.run_command import Progress

    progress = Progress("scenarios")
    reports = []
    with TimeGuard() as guard:
        for i, sc in enumerate(scenarios):
            reports.append(check_scenario(sc, seed_list, guard, functools.partial(progress, i, len(scenarios)),
                                          split=split.value))
    progress(len(scenarios), len(scenarios), "done")
    head = ("scenario", "seeds", "solutions", "noop", "mutants", "killed", "equivalent", "survived", "score", "check")
    rows = [(r.scenario, str(r.seeds),
             f"{len({b.file for b in r.broken_solutions})} BROKEN" if r.broken_solutions
             else "pass" if not r.solution_failures else f"{len(r.solution_failures)} FAIL",
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
               f"mutants killed; {equivalent} equivalent; "
               + (f"split holdout, holdout seed #{seeds}" if split == "holdout" else f"seeds {seeds}"))
    for title, status in (("equivalent mutants (valid answers, not misses)", "equivalent"),
                          ("SURVIVING mutants (the graders do not tell them from a right answer)", "survived")):
        groups = Counter((r.scenario, o.mutant.operator, o.mutant.description, o.reason)
                         for r in reports for o in r.outcomes if o.status == status)
        if groups:
            typer.echo(f"\n{title}:")
            for (sid, op, desc, reason), n in sorted(groups.items()):
                typer.echo(f"  {sid}: {op}: {desc} [{n} seed(s)]: {reason}")
    for r in reports:
        first: dict[str, BrokenSolution] = {}  # one line per broken file: its first seed's reason, then a count
        for broken_at in r.broken_solutions:
            first.setdefault(broken_at.file, broken_at)
        for file, b in first.items():
            more = sum(1 for x in r.broken_solutions if x.file == file) - 1
            typer.echo(f"\nBROKEN SOLUTION {r.scenario}: {file}: does not play at seed {b.seed}: {b.why}"
                       + (f" (and at {more} more seed(s))" if more else ""))
        for failure in r.solution_failures:
            typer.echo(f"\nSOLUTION FAILS {r.scenario}: {failure}")
        if r.noop_passes:
            typer.echo(f"\nNOOP PASSES {r.scenario} at seeds {r.noop_passes}")
    broken = [r.scenario for r in reports if r.broken_solutions]
    if broken:
        typer.echo(f"\n{len(broken)} scenario(s) with a broken solution (fix the ground truth): {', '.join(broken)}")
    bad = [r.scenario for r in reports if not r.discriminates]
    if bad:
        typer.echo(f"\n{len(bad)} scenario(s) whose graders do not discriminate: {', '.join(bad)}")
    if broken or bad:
        raise typer.Exit(1)


families_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                           help="Task families: list them, generate scenario directories from them.")
app.add_typer(families_app, name="families")


@families_app.command("list")
def families_list(root: Annotated[Path | None, typer.Option(help="Directory of families. Default: the bundled "
                                                                  "ones.")] = None) -> None:
    """Name the families, one per line, then a description (category and intents)."""
    from simworld._families import load_families

    try:
        families = load_families(root)
    except SimworldError as exc:
        raise _fail(str(exc)) from None
    for f in families:
        intents = "+".join(i.name for i, _ in f.intents)
        typer.echo(f"{f.name:<30} {f.category:<15} {intents:<18} {f.description}")


@families_app.command("generate")
def families_generate(
    family: Annotated[list[str], typer.Argument(help="Families to draw from ('all' for every one).")],
    out: Annotated[Path, typer.Option(help="Where to write the scenario directories (and index.jsonl).")],
    count: Annotated[int, typer.Option(help="Instances per family.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the draw; the same seed writes the same bytes.")] = 0,
    split: Annotated[Split, typer.Option(help="dev, or holdout: the family's reserved part of its parameter "
                                              "space.")] = Split.dev,
    root: Annotated[Path | None, typer.Option(help="Directory of families. Default: the bundled ones.")] = None,
    workers: Annotated[int, typer.Option(help="Families drawn at once on this many processes (the bytes written "
                                              "do not depend on it).")] = 1,
) -> None:
    """Generate COUNT distinct instances of each FAMILY as ordinary scenario directories under OUT."""
    from simworld._families import generate as make
    from simworld._families import load_families

    if count < 1:
        raise _fail(f"--count {count}: expected a count >= 1.")
    if workers < 1:
        raise _fail(f"--workers {workers}: expected a count >= 1.")
    try:
        results = make(load_families(root, family), count, seed, out, split.value, workers=workers)
    except (SimworldError, OSError) as exc:
        raise _fail(str(exc)) from None
    total = 0
    for name, done in results.items():
        total += len(done.instances)
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(done.skipped.items())) or "none"
        typer.echo(f"{name:<30} {len(done.instances)} written; skipped {skipped}")
        for line in done.disagreements:
            typer.echo(f"  SOLVER DISAGREES WITH THE WORLD {line}", err=True)
    held = " --split holdout" if split == "holdout" else ""  # holdout instances run only in the holdout split
    typer.echo(f"wrote {total} scenario(s) to {out} ({split.value} split, seed {seed}); check them with: "
               f"simworld check --suite {out}{held}")
    if any(d.disagreements for d in results.values()):
        raise typer.Exit(1)


def _polish(command: Any) -> Any:
    """Tidy the click command typer builds from ``app``, before it parses anything.

    A repeatable option's placeholder names one value (``<str>``, as ``--scenario ID`` is
    given once per id), not the Python list type typer would print (``<list[str]>``). The
    top-level options (``--version``, completion) take no ``SIMWORLD_*`` variable: only the
    commands' options do (``SIMWORLD_RUN_SEEDS``...).
    """
    import re

    def one_value(shown: Callable[[Any], str]) -> Callable[[Any], str]:
        return lambda ctx: re.sub(r"^<list\[(.*)\]>$", r"<\1>", shown(ctx))

    for param in command.params:
        repeated = getattr(param, "multiple", False) or getattr(param, "nargs", 1) != 1
        if repeated and hasattr(param, "display_type_rich"):
            param.display_type_rich = one_value(param.display_type_rich)
    for param in command.params if hasattr(command, "commands") else ():
        param.allow_from_autoenv = False
        param.show_envvar = False
    for sub in getattr(command, "commands", {}).values():
        _polish(sub)
    return command


#: The documentation site (mkdocs.yml's site_url) and the guide page each command's --help points to.
DOCS_URL = "https://simworld.readthedocs.io/"
DOCS_PAGES = {"": "", "run": "long-runs/", "merge": "long-runs/", "list": "scenarios/", "replay": "world/",
              "show": "scenarios/", "generate": "world/", "probe": "probing/", "export": "export/",
              "report": "getting-started/", "serve": "agents/", "grade": "grading/", "check": "grading/",
              "families": "families/"}


def _link_docs(command: Any, name: str = "") -> Any:
    """End ``command``'s --help (and each subcommand's) with a link to its page of the documentation."""
    page = DOCS_PAGES.get(name, DOCS_PAGES.get(name.split(" ")[0], ""))
    source = f"docs/{page.rstrip('/') or 'index'}.md"
    command.epilog = f"Documentation: {DOCS_URL}{page} (in a clone of the repository: {source})"
    for sub_name, sub in getattr(command, "commands", {}).items():
        _link_docs(sub, f"{name} {sub_name}".strip())
    return command


def main() -> None:
    """Console-script entry point: usage errors are one line on stderr and exit status 2.

    simworld writes no colour codes, so ``NO_COLOR`` (https://no-color.org) always holds.
    """
    try:
        code = _link_docs(_polish(typer.main.get_command(app)))(standalone_mode=False)
    except _UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `simworld`: the help, not an error
            typer.echo(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(0)
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "simworld"
        message = exc.format_message().replace("Value error, ", "")  # type: ignore[attr-defined]
        typer.echo(f"simworld: error: {message} (see '{where} --help')", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("simworld: aborted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
