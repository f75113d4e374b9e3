"""An episode as it went, for the report: the transcript of what the agent was shown, said and did.

:func:`transcript` builds it from the episode's event file and result line as one JSON-able
document: the system message the model was shown (the conversation's rules, then the policy,
as :func:`simworld._agents.chat.system_for` makes it under the contract the file was written
with), the customer's request, then every turn in order (each text the agent wrote, each
call with its arguments, status and result, an action that was not a call, the crash of a
recovery scenario), each with the failed checks whose detail names it, and the end: outcome,
stop reason, pass and score, and the failed checks that name no turn.

Built from the events rather than from :func:`~simworld._agents.chat.conversation`: a chat
drops what the report needs (simulated time, status, rejected actions, the crash); the turns
come in the same order as its messages.

A check names a turn the way the built-in graders write it, ``TOOL (seq N)``, with
``say (seq N)`` for the agent's text; a text that shares its seq with another text is told
apart by the phrase the detail quotes from it. :func:`render_text` is the terminal's
rendering; the HTML page renders the same document (:mod:`simworld._edges.report_html`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simworld._agents.chat import json_text, system_for
from simworld._running.job import event_file_name
from simworld._running.rundir import EVENTS, Key, line_key
from simworld._world.events import Event, read_events
from simworld.errors import ReplayError, RunDirError

__all__ = ["find_episode", "parse_episode", "render_text", "transcript"]

#: ``TOOL (seq N`` in a check's detail: the turn it is about.
_MENTION = re.compile(r"([\w.-]+) \(seq (\d+)\b")
#: A phrase a detail quotes (with Python's repr quotes) from the text it judges.
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)+)'|\"((?:[^\"\\]|\\.)+)\"")
#: Control characters a terminal would act on (a model's text is untrusted): shown as escapes instead.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def parse_episode(spec: str) -> Key:
    """``SCENARIO:SEED[:TRIAL]`` as a grid key.

    Raises:
        RunDirError: ``spec`` is not of that form.
    """
    head, _, last = spec.rpartition(":")
    if head and last.isdigit():
        scenario, _, middle = head.rpartition(":")
        if scenario and middle.isdigit():
            return scenario, int(middle), int(last)
        return head, int(last), 0
    raise RunDirError(f"--episode {spec!r}: expected SCENARIO:SEED or SCENARIO:SEED:TRIAL, e.g. waive-small-fee:0.")


def find_episode(lines: Sequence[Mapping[str, Any]], spec: str) -> Mapping[str, Any]:
    """The result line of the episode ``spec`` (``SCENARIO:SEED[:TRIAL]``) names.

    Raises:
        RunDirError: ``spec`` is malformed or names no episode of ``lines``.
    """
    key = parse_episode(spec)
    for line in lines:
        if line_key(line) == key:
            return line
    scenarios = sorted({str(x["scenario"]) for x in lines})
    raise RunDirError(f"--episode {spec!r}: the run has no episode {key[0]} seed {key[1]} trial {key[2]}; its "
                      f"scenarios are {', '.join(scenarios[:8])}{' ...' if len(scenarios) > 8 else ''}.")


def transcript(run_path: Path, line: Mapping[str, Any]) -> dict[str, Any]:
    """The transcript of the episode of ``line`` in the run at ``run_path`` (see the module docstring).

    An episode with no readable event file (a harness error before it started, a file removed)
    has a transcript with ``system``, ``request`` and ``turns`` None and a ``problem`` saying why.
    """
    scenario, seed, trial = line_key(line)
    failed = [{"name": str(c.get("name")), "detail": str(c.get("detail", ""))}
              for c in line.get("checks") or () if not c.get("passed")]
    doc: dict[str, Any] = {
        "episode": {"scenario": scenario, "seed": seed, "trial": trial},
        "agent": line.get("agent"), "contract": line.get("contract"),
        "system": None, "request": None, "turns": None, "problem": None,
        "end": {"outcome": line.get("outcome"), "stop_reason": line.get("stop_reason"),
                "passed": bool(line.get("passed")), "total": line.get("total"), "error": line.get("error"),
                "harness_error": line.get("harness_error"), "failed": failed},
    }
    path = run_path / EVENTS / event_file_name(scenario, seed, trial)
    if not path.is_file():
        doc["problem"] = f"no event file ({EVENTS}/{path.name})"
        return doc
    try:
        log = read_events(path)
    except ReplayError as exc:
        doc["problem"] = f"the event file could not be read: {exc}"
        return doc
    header = log.header
    doc["contract"] = header.get("contract")
    doc["system"] = system_for(str(header.get("policy", "")), header.get("contract"))
    doc["request"] = str(header.get("request", ""))
    turns: list[dict[str, Any]] = []
    for i, event in enumerate(log.events):
        if log.crash is not None and log.crash.get("position") == i:
            turns += _crash(log.crash)
        turns.append(_event(event))
    if log.crash is not None and log.crash.get("position", -1) >= len(log.events):
        turns += _crash(log.crash)
    doc["end"]["failed"] = _attach(turns, failed)
    doc["turns"] = turns
    return doc


def _event(event: Event, **extra: Any) -> dict[str, Any]:
    data = event.to_json()
    del data["record"]
    return {**data, **extra, "failed": []}


def _crash(crash: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Where the agent died: the call whose effect landed but which the session log lost (graders judge it, so it
    is shown, marked ``lost``), then the crash."""
    lost = crash.get("lost")
    turns = [_event(lost, lost=True)] if isinstance(lost, Event) else []
    return [*turns, {"kind": "crash", "at_call": crash.get("at_call"),
                     "after_side_effect": crash.get("after_side_effect"), "failed": []}]


def _attach(turns: list[dict[str, Any]], failed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Put each failed check beside the turns its detail names; return the checks that name none."""
    rest = []
    for check in failed:
        detail = check["detail"]
        mentions = list(_MENTION.finditer(detail))
        hit = False
        for k, m in enumerate(mentions):
            said = detail[m.end():mentions[k + 1].start() if k + 1 < len(mentions) else len(detail)]
            for turn in _named(turns, m.group(1), int(m.group(2)), said):
                if check not in turn["failed"]:
                    turn["failed"].append(check)
                hit = True
        if not hit:
            rest.append(check)
    return rest


def _named(turns: list[dict[str, Any]], name: str, seq: int, said: str) -> list[dict[str, Any]]:
    """The turns ``NAME (seq N)`` names: texts for ``say``, else the call of that tool (or, for a step or rule id,
    any call) at that seq; among several texts, those holding the phrase the detail quotes."""
    if name == "say":
        texts = [t for t in turns if t["kind"] == "say" and t["seq"] == seq]
        if len(texts) > 1:
            quoted = [a or b for a, b in _QUOTED.findall(said)]
            holding = [t for t in texts if any(q in t["args"]["text"] for q in quoted)]
            return holding or texts
        return texts
    calls = [t for t in turns if t["kind"] not in ("say", "crash") and t.get("seq") == seq]
    return [t for t in calls if t["tool"] == name] or calls


def _clean(text: str) -> str:
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + x for x in _clean(text).splitlines() or [""]]


#: Arguments and results longer than this are cut in the text transcript (the event file and --json have them whole).
WIDTH = 240


def render_text(doc: Mapping[str, Any]) -> list[str]:
    """The transcript as lines for a terminal: the system message abbreviated, the request, each turn with the
    checks that failed on it, the end. The agent's texts are shown whole, control characters escaped."""
    ep, end = doc["episode"], doc["end"]
    name = f"{ep['scenario']} seed {ep['seed']}" + (f" trial {ep['trial']}" if ep["trial"] else "")
    result = "HARNESS ERROR" if end["harness_error"] else "PASS" if end["passed"] else "FAIL"
    out = [f"transcript of {name}: {result}, score {float(end['total'] or 0):.3f}; agent {doc['agent']}; "
           f"contract {doc['contract'] or 'none'}"]
    if doc["turns"] is None:
        out.append(f"  ({doc['problem']})")
    else:
        system = doc["system"]
        first = system.splitlines()[0] if system else ""
        out.append(f"system ({len(system):,} characters: the conversation's rules, then the policy): "
                   f"{_clip(_clean(first), 100)}")
        out.append("user:")
        out += _indent(doc["request"], "  ")
        for turn in doc["turns"]:
            out += _turn(turn)
    out.append(f"end: outcome {end['outcome']}, stop reason {end['stop_reason']}")
    for key in ("error", "harness_error"):
        if end[key]:
            out.append(f"  {key.replace('_', ' ')}: {_clip(_clean(json_text(end[key])), WIDTH)}")
    out += [f"  FAILED {c['name']}: {_clip(_clean(c['detail']), WIDTH)}" for c in end["failed"]]
    return out


def _turn(turn: Mapping[str, Any]) -> list[str]:
    kind = turn["kind"]
    if kind == "crash":
        out = [f"-- the agent crashed at its call {turn['at_call']}; a fresh agent took over from the session log"]
    elif kind == "say":
        out = [f"[seq {turn['seq']}] assistant:"] + _indent(turn["args"]["text"], "  ")
    else:
        what = "action (not a tool call)" if kind == "invalid" else f"call {turn['tool']}"
        if turn.get("lost"):
            what += " (the session log lost it)"
        out = [f"[seq {turn['seq']}] {what} {_clip(_clean(json_text(turn['args'])), WIDTH)}",
               f"  -> {turn['status']} {_clip(_clean(json_text(turn['result'])), WIDTH)}"]
    return out + [f"  FAILED {c['name']}: {_clip(_clean(c['detail']), WIDTH)}" for c in turn["failed"]]
