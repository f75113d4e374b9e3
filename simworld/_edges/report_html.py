"""The HTML report: one self-contained file (inline CSS and JS, no network) that opens from disk.

The page embeds the report document once, the episode table as column arrays (a few
dozen bytes per episode, parsed at load) and every episode's details (the request, the
timeline from its event file, the result line with its checks and state diff) as JSON
lines, gzip-compressed in chunks of :data:`CHUNK` episodes and base64-encoded. The
browser decompresses a chunk (``DecompressionStream``) only when an episode of it is
opened, so a run of 10,000+ episodes loads as fast as its table; the details compress
well, since episodes of one scenario repeat most of their text.

The output is deterministic: the same run (and comparison) writes the same bytes.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from simworld._edges.report import Run, category_of
from simworld._running.rundir import EVENTS, line_key
from simworld._world.events import read_events
from simworld.errors import ReplayError

__all__ = ["CHUNK", "write_html"]

#: Episodes per compressed chunk of details: small enough that opening one decompresses little.
CHUNK = 200
_PAGE = Path(__file__).parent / "report_page"


def _script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``</`` can close it early."""
    return orjson.dumps(value).decode().replace("</", "<\\/").replace("<!--", "<\\!--")


def _details(run: Run, line: Mapping[str, Any]) -> dict[str, Any]:
    """An episode's details: the request and timeline from its event file, and its result line."""
    from simworld._running.job import event_file_name

    scenario, seed, trial = line_key(line)
    path = run.path / EVENTS / event_file_name(scenario, seed, trial)
    request: str | None = None
    events: list[dict[str, Any]] | None = None
    crash = None
    if path.is_file():
        try:
            log = read_events(path)
        except ReplayError as exc:
            request = f"(the event file could not be read: {exc})"
        else:
            request = str(log.header.get("request", ""))
            events = [{k: v for k, v in e.to_json().items() if k != "record"} for e in log.events]
            if log.crash is not None:
                crash = {k: (v.to_json() if hasattr(v, "to_json") else v) for k, v in log.crash.items()}
    return {"request": request, "events": events, "crash": crash, "line": line}


def _rows(run: Run, categories: Mapping[str, str]) -> dict[str, Any]:
    scenarios: dict[str, int] = {}
    category: dict[str, str] = {}
    checks: dict[str, int] = {}
    outcomes: dict[str | None, int] = {}
    cols: dict[str, list[Any]] = {k: [] for k in ("scenario", "seed", "trial", "outcome", "passed", "total", "error",
                                                  "steps", "failed")}
    for line in run.lines:
        sid, seed, trial = line_key(line)
        cols["scenario"].append(scenarios.setdefault(sid, len(scenarios)))
        category.setdefault(sid, category_of(line, categories))
        cols["seed"].append(seed)
        cols["trial"].append(trial)
        cols["outcome"].append(outcomes.setdefault(line.get("outcome"), len(outcomes)))
        cols["passed"].append(int(bool(line["passed"])))
        cols["total"].append(line["total"])
        cols["error"].append(int(line.get("harness_error") is not None))
        cols["steps"].append((line.get("counters") or {}).get("steps", 0))
        cols["failed"].append(sorted({checks.setdefault(str(c.get("name")), len(checks))
                                      for c in line.get("checks") or () if not c.get("passed")}))
    return {"scenarios": list(scenarios), "categories": [category[s] for s in scenarios],
            "checks": list(checks), "outcomes": list(outcomes), "rows": cols}


def _chunks(run: Run) -> list[str]:
    out = []
    for start in range(0, len(run.lines), CHUNK):
        text = b"\n".join(orjson.dumps(_details(run, line)) for line in run.lines[start:start + CHUNK])
        packed = base64.b64encode(gzip.compress(text, compresslevel=6, mtime=0)).decode("ascii")
        out.append(f'<script type="text/plain" id="chunk-{start // CHUNK}">{packed}</script>')
    return out


def write_html(doc: Mapping[str, Any], run: Run, categories: Mapping[str, str], out: IO[bytes]) -> None:
    """Write the self-contained HTML report of ``run`` (``doc`` is its :func:`simworld._edges.report.summarize`)."""
    data = {"doc": doc, "chunk": CHUNK, **_rows(run, categories)}
    page = (_PAGE / "page.html").read_text(encoding="utf-8")
    title = f"simworld report: {run.path.name or run.path}"
    # one pass of replacements, each placeholder once, so embedded data can never be re-substituted
    parts = {"__TITLE__": _escape(title), "__CSS__": (_PAGE / "report.css").read_text(encoding="utf-8"),
             "__JS__": (_PAGE / "report.js").read_text(encoding="utf-8"), "__DATA__": _script_json(data),
             "__CHUNKS__": "\n".join(_chunks(run))}
    pieces = []
    rest = page
    for key in ("__TITLE__", "__CSS__", "__DATA__", "__CHUNKS__", "__JS__"):
        before, _, rest = rest.partition(key)
        pieces += [before, parts[key]]
    pieces.append(rest)
    out.write("".join(pieces).encode("utf-8"))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
