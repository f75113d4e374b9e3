"""simworld's forked workers end at SIGTERM whatever handler the program that started them installed, and a worker
that dies stops nothing.

A fork inherits its parent's signal handlers. verifiers' Environment, for one, installs a SIGTERM handler that
tears the environment down and raises SystemExit; multiprocessing stops a pool's workers with SIGTERM while it
holds the task queue's lock, and a worker that did not end there was waited for forever. Each test runs a
program with such a handler in a process of its own, so a hang is a failed test and not a stuck suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Generous: each program below takes a few seconds; one that hangs never ends.
DEADLINE_S = 180

HANDLER = """
import signal, sys
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))  # what a well-behaved program installs
"""

#: A run of 12 episodes in ``run``, and its export on one process (``one``), many slices of one line each.
EXPORTED_IN_ONE_PROCESS = """
import io
from pathlib import Path
from simworld._agents.kinds import build_agent_factory
from simworld._edges import export
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite

suite = load_suite()[:6]
run_suite(suite, [0, 1], "random", build_agent_factory("random"), Path("run"))
export._CHUNK_LINES = 1
one = io.BytesIO()
export.export_run(Path("run"), "openai", one)
"""


def _program(code: str, cwd: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``prelude`` then ``code`` (dedented) under HANDLER in a process of its own, in ``cwd``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *sys.path])}
    try:
        return subprocess.run([sys.executable, "-c", HANDLER + prelude + textwrap.dedent(code)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=DEADLINE_S, check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the program did not end in {DEADLINE_S} s; it printed:\n{e.stdout!r}\n{e.stderr!r}")


def test_export_on_workers_ends_under_a_programs_sigterm_handler(tmp_path: Path) -> None:
    """Exports on three workers, many slices each, under a handler that exits: every one ends and writes the
    bytes one process writes. (Without the workers' own SIGTERM action, one of the first ten hung.)"""
    done = _program(prelude=EXPORTED_IN_ONE_PROCESS, code="""
        for i in range(25):
            many = io.BytesIO()
            export.export_run(Path("run"), "openai", many, workers=3)
            assert many.getvalue() == one.getvalue(), i
        print("exported", len(one.getvalue()))
        """, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("exported ") and int(done.stdout.split()[1]) > 0


def test_a_run_whose_worker_dies_ends_under_a_programs_sigterm_handler(tmp_path: Path) -> None:
    """A worker killed by its episode breaks the pool, which stops the others with SIGTERM: under a handler that
    exits, the run still ends, with the killed episode recorded and every other one kept."""
    (tmp_path / "killer.py").write_text(textwrap.dedent("""
        import os, signal

        class Killer:
            def act(self, observation):
                if "three" in observation.request:
                    os.kill(os.getpid(), signal.SIGKILL)
                return None
        """))
    done = _program("""
        from pathlib import Path
        from simworld._agents.kinds import build_agent_factory
        from simworld._running.runner import run_suite
        from simworld._scenario.scenario import load_suite

        suite = load_suite()[:8]
        for i in range(4):
            r = run_suite(suite, [0, 1, 2], "python:killer:Killer", build_agent_factory("python:killer:Killer"),
                          Path(f"run{i}"), workers=2)
            assert len(r.results) == len(suite) * 3, len(r.results)
        print("lost", sum(x["harness_error"] is not None for x in r.results))
        """, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("lost ")


def test_an_export_whose_worker_dies_writes_every_line(tmp_path: Path) -> None:
    """A worker killed mid-export (as the OOM killer would) loses no slice and hangs nothing: the export writes
    the bytes one process writes. (multiprocessing's Pool waited forever for the dead worker's slice.)"""
    done = _program(prelude=EXPORTED_IN_ONE_PROCESS, code="""
        import os, signal

        parent, chunk, marker = os.getpid(), export._export_chunk, Path("died")

        def dying(o, lines):
            if os.getpid() != parent and lines[0][0] == 5 and not marker.exists():
                marker.write_text("")
                os.kill(os.getpid(), signal.SIGKILL)
            return chunk(o, lines)

        export._export_chunk = dying
        many = io.BytesIO()
        report = export.export_run(Path("run"), "openai", many, workers=2)
        assert marker.exists(), "precondition: a worker died"
        assert many.getvalue() == one.getvalue() and report.written == 12, report
        print("exported", report.written)
        """, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "exported 12\n"
