"""The ``simworld`` command's entry point: the plain forms of ``simworld run`` are read here, without typer.

The typer app (:mod:`simworld._edges.cli`) builds the whole command line from every command's
signature and checks each value through pydantic: about 60 ms of CPU before the first scenario
loads, a fifth of a one-seed run. So :func:`main` reads ``simworld run`` itself when every argument
is plain: a known option given once (``--scenario`` as often as wanted) as ``--name value`` or
``--name=value``, a value of the simplest shape its type takes (digits for a count, a decimal for a
fraction, one of the choices for a choice, a value that does not start with ``-``), and no
``SIMWORLD_RUN_*`` variable or shell completion in the environment. Then it calls
:func:`simworld._edges.run_command.run_command` with exactly the values the typer app would pass.
Anything else (``--help``, another command, a value of any other shape, a mistake) goes to the typer
app, so the help and every error text have one source; ``tests/test_launch.py`` holds the two
readings of ``run``'s options (names, kinds and defaults) equal.
"""

from __future__ import annotations

import errno
import gc
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["FLAGS", "OPTIONS", "main", "read_run"]

#: Each value option of ``simworld run``: its parameter, the kind of its value, its default.
OPTIONS: dict[str, tuple[str, str, Any]] = {
    "--seed": ("seed", "int", None),
    "--seeds": ("seeds", "str", None),
    "--world": ("world", "path", None),
    "--scenario": ("scenario", "list", ()),
    "--suite": ("suite", "path", None),
    "--agent": ("agent", "str", "reference"),
    "--out": ("out", "path", Path("simworld-out")),
    "--split": ("split", "dev|holdout", "dev"),
    "--snapshot": ("snapshot", "str", None),
    "--trials": ("trials", "int", 1),
    "--concurrency": ("concurrency", "int", 1),
    "--workers": ("workers", "int", 1),
    "--executor": ("executor", "local|ray", "local"),
    "--ray-address": ("ray_address", "str", None),
    "--shard": ("shard", "str", None),
    "--fail-under": ("fail_under", "float", None),
    "--base-url": ("base_url", "str", None),
    "--max-retries": ("max_retries", "int", 5),
    "--request-timeout": ("request_timeout", "float", 60.0),
    "--temperature": ("temperature", "float", 0.0),
}
#: Each flag of ``simworld run``: its parameter and the value it sets (every flag's parameter defaults to False).
FLAGS: dict[str, tuple[str, bool]] = {
    "--isolate": ("isolate", True),
    "--no-isolate": ("isolate", False),
    "--resume": ("resume", True),
    "--overwrite": ("overwrite", True),
    "--no-cache": ("no_cache", True),
    "--json": ("as_json", True),
}
#: ``SIMWORLD_RUN_*`` variables that set no option: the token a run marks its processes with
#: (:data:`simworld._episode.fate.FATE_VARIABLE`), which a run started inside another run inherits.
NOT_OPTIONS = frozenset({"SIMWORLD_RUN_TOKEN"})
_COUNT = re.compile(r"0|[1-9][0-9]*")
_DECIMAL = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")


def _value(kind: str, text: str) -> Any:
    """``text`` as the typer app reads a value of ``kind``; None when it is not of the plain shape."""
    if not text or text.startswith("-"):
        return None
    if kind == "int":
        return int(text) if _COUNT.fullmatch(text) else None
    if kind == "float":
        return float(text) if _DECIMAL.fullmatch(text) else None
    if kind == "path":
        return Path(text)
    if "|" in kind:
        return text if text in kind.split("|") else None
    return text


def read_run(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """``simworld run``'s options from ``args`` (``sys.argv[1:]``), as keyword arguments of ``run_command``;
    None when the arguments or the environment are not all plain (see the module's docstring)."""
    if list(args[:1]) != ["run"] or any((k.startswith("SIMWORLD_RUN_") and k not in NOT_OPTIONS) or (
            k.startswith("_") and k.endswith("_COMPLETE")) for k in environ):
        return None
    given: dict[str, Any] = {}
    rest = list(args[1:])
    while rest:
        token = rest.pop(0)
        name, eq, inline = token.partition("=")
        value: Any
        if name in FLAGS and not eq:
            param, value = FLAGS[name]
        elif name in OPTIONS:
            param, kind, _ = OPTIONS[name]
            if not eq:
                if not rest:
                    return None
                inline = rest.pop(0)
            value = _value("str" if kind == "list" else kind, inline)
            if value is None:
                return None
            if kind == "list":
                value = [*given.get(param, ()), value]
        else:
            return None
        if param in given and not (name in OPTIONS and OPTIONS[name][1] == "list"):
            return None  # given twice: the typer app says which wins
        given[param] = value
    options: dict[str, Any] = {param: default for param, _, default in OPTIONS.values()}
    options.update({param: False for param, _ in FLAGS.values()})
    options.update(given)
    return options


def main() -> None:
    """Console-script entry point (``simworld``, ``python -m simworld``): see the module's docstring."""
    # On Windows typer expands wildcards in the arguments first: leave those command lines to it.
    options = read_run(sys.argv[1:], os.environ) if os.name != "nt" else None
    if options is None:
        from simworld._edges.cli import main as typer_main

        typer_main()
        return
    from simworld._edges.run_command import echo, run_command

    # What the typer app does with these, as its command line would.
    try:
        code = run_command(**options)
    except KeyboardInterrupt:
        code = 130
    except EOFError:
        echo("", err=True)
        echo("simworld: aborted", err=True)
        code = 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # The reader went away: nothing more can reach it, and flushing at exit must not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.dup2(devnull, sys.stderr.fileno())
        code = 1
    # The process ends here, and with it every object it made: the collector's passes over them as the interpreter
    # shuts down would free nothing that exiting does not. Frozen, they are passed over (15–30 ms of CPU, measured
    # on a one-seed run of about 230 ms).
    gc.freeze()
    sys.exit(code)
