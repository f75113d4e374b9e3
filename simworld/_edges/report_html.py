"""The HTML report: one self-contained file (inline CSS and JS, no network) that opens from disk.

The page embeds the report document once, the episode table as column arrays (a few
dozen bytes per episode, parsed at load) and every episode's details (its transcript from
:mod:`simworld._edges.transcript`, the result line with its checks and state diff) as JSON
lines, gzip-compressed in chunks of :data:`CHUNK` episodes and base64-encoded (a chunk's first
line lists the system messages its transcripts share, each held once). The
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
from simworld._edges.transcript import transcript
from simworld._running.rundir import line_key

__all__ = ["CHUNK", "write_html"]

#: Episodes per compressed chunk of details: small enough that opening one decompresses little.
CHUNK = 200
_PAGE = Path(__file__).parent / "report_page"


def _script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``</`` can close it early."""
    return orjson.dumps(value).decode().replace("</", "<\\/").replace("<!--", "<\\!--")


def _details(run: Run, line: Mapping[str, Any], systems: dict[str, int]) -> dict[str, Any]:
    """An episode's details: its transcript (from its event file, with the failed checks beside the turns they name)
    and its result line. The system message, long and shared by many episodes, is replaced by its index in
    ``systems`` (the chunk's distinct ones, added to as met)."""
    doc = transcript(run.path, line)
    if doc["system"] is not None:
        doc["system"] = systems.setdefault(doc["system"], len(systems))
    return {"transcript": doc, "line": line}


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
        systems: dict[str, int] = {}
        details = [orjson.dumps(_details(run, line, systems)) for line in run.lines[start:start + CHUNK]]
        text = b"\n".join([orjson.dumps(list(systems)), *details])
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
