"""The episodes of ``simworld serve``: one per MCP session, stepped call by call, then graded and written.

:class:`EpisodeSessions` holds a served scenario's open sessions, each an :class:`EpisodeSession` (its own
:class:`~simworld._episode.environment.Environment` at the seed), and what they share: the instructions and tool
schemas every client is given, and :class:`EpisodeFiles`, where their episodes are written. The transports
(:mod:`simworld._edges.serve` for stdio, :mod:`simworld._edges.serve_http` for HTTP) only translate MCP to
these calls; nothing here imports the SDK or does network I/O.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

import attrs

from simworld._episode.environment import Environment
from simworld._episode.episode import Episode
from simworld._episode.judge import graded_line
from simworld._running.job import event_file_content, event_file_name, harness_line, run_post_hooks
from simworld._running.rundir import EVENTS, RESULTS, ResultsFile
from simworld._scenario.scenario import Scenario
from simworld._world.clock import wall_monotonic
from simworld._world.events import write_all
from simworld._world.state import canonical_bytes
from simworld._world.tools import TOOLS, Kind
from simworld.errors import describe_exception

__all__ = ["EpisodeFiles", "EpisodeSession", "EpisodeSessions", "Reply", "log_line"]

_WHY_OVER = {"terminal": "a terminal tool ended it", "max_steps": "the step budget is spent",
             "timeout": "the time budget is spent", "agent_stopped": "the client left before a terminal call"}


@attrs.frozen
class Reply:
    """The answer to one tool call, independent of MCP: text blocks, structured content, and whether it failed."""

    texts: tuple[str, ...]
    structured: dict[str, Any] | None
    is_error: bool


def _json(value: Any) -> str:
    return canonical_bytes(value).decode()


def log_line(message: str) -> None:
    """One line on stderr (stdout is the stdio transport's wire)."""
    sys.stderr.write(f"simworld serve: {message}\n")
    sys.stderr.flush()


def _instructions(scenario: Scenario, env: Environment) -> str:
    """What the client is told: the tools that end the conversation, the policy text and the request."""
    terminal = [n for n in scenario.tools if TOOLS[n].kind is Kind.TERMINAL]
    return ("You are handling a customer's request at a billing desk with this server's tools. "
            f"The conversation ends when you call one of: {', '.join(terminal)}.\n\n"
            f"{env.policy_text}\n\n"
            f"The customer's request:\n\n{env.request}")


class EpisodeFiles:
    """Where one server's episodes go in ``--out``: an event file each, under a claimed trial number, and a line
    each in ``results.jsonl``.

    A trial number is claimed by creating its event file (``O_EXCL``), so numbers are distinct for every episode,
    even across ``serve`` processes sharing one ``--out``; the episode's event log is then written into that file,
    once graded. (``simworld run`` writes through a temporary file and a rename instead; here the claimed file is
    already the episode's own, and a temporary file renamed over it would cost a second file made and the first
    one deleted for every episode. A server killed between the claim and the write leaves that event file empty
    or short, and no result line names it.) The search starts past the last number this server claimed, so the
    thousandth episode costs one ``open`` like the first.

    ``results.jsonl`` is opened at the first line and kept open until the server stops, as a run keeps it (a
    trailing partial line is cut off when it is opened); each line goes down in one ``write``, so servers sharing
    one ``--out`` never interleave within a line.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self._events = os.path.join(out, EVENTS)
        self._next = 0
        self._results: ResultsFile | None = None

    def claim(self, scenario_id: str, seed: int) -> tuple[int, int]:
        """The first unclaimed trial number from the last one claimed here on, now claimed, and its event file's
        descriptor, open for writing (the caller closes it)."""
        trial = self._next
        # Mode 0o666, as write_atomic makes its files: the umask decides, as it does for simworld run's.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        while True:
            path = os.path.join(self._events, event_file_name(scenario_id, seed, trial))
            try:
                fd = os.open(path, flags, 0o666)
            except FileExistsError:
                trial += 1
                continue
            except FileNotFoundError:  # the first episode, or events/ removed since: made (again), then tried again
                os.makedirs(self._events, exist_ok=True)
                continue
            self._next = trial + 1
            return trial, fd

    def append(self, line: bytes) -> None:
        """Append one whole result line (ending with a newline) to ``results.jsonl``."""
        if self._results is None:
            self._results = ResultsFile(self.out / RESULTS)
        self._results.append(line)

    def close(self) -> None:
        """Close ``results.jsonl`` (a later line opens it again)."""
        if self._results is not None:
            self._results.close()
            self._results = None


class EpisodeSession:
    """One episode driven call by call by a remote agent: steps, seals, grades and writes it.

    The MCP layer only translates; everything simworld-specific is here. A call that ends the episode seals it
    (the reply says why it ended) but leaves the grading and writing to :meth:`record`, which the transport calls
    once the reply is on its way: the agent never sees the grade, so it need not wait for it, and neither need the
    other sessions' calls queued behind it for longer than the grading itself.

    The environment is reset at the session's first call (the scenario's ``timeout_s`` counts from there), or
    when the session ends before any: a session costs nothing of its world until it is used.
    """

    def __init__(self, scenario: Scenario, seed: int, out: Path | None = None, *, number: int = 0,
                 files: EpisodeFiles | None = None) -> None:
        self.scenario = scenario
        self.seed = seed
        self.out = out
        self._files = files if files is not None or out is None else EpisodeFiles(out)
        #: The session's number in its server, from 0 (for the operator's log lines).
        self.number = number
        self.env = Environment(scenario, seed, agent_name="mcp")
        self.env.results_lent = True  # what a call shows is only written out to the client (as JSON), never changed
        self._started = False
        #: The result line once the episode has ended (a harness failure is its ``harness_error``).
        self.result: dict[str, Any] | None = None
        self.seal_error: str | None = None
        #: Why the episode ended, once it has.
        self.stop_reason: str | None = None
        #: The sealed episode, from its end until :meth:`record` grades and writes it.
        self._ended: Episode | None = None
        #: The real time of the session's last HTTP request (for the idle sweep).
        self.last_active = wall_monotonic()

    def _start(self) -> None:
        if not self._started:
            self.env.reset()
            self._started = True

    @property
    def instructions(self) -> str:
        """What the client is told (the same for every session: :attr:`EpisodeSessions.instructions`)."""
        self._start()
        return _instructions(self.scenario, self.env)

    @property
    def tool_schemas(self) -> tuple[dict[str, Any], ...]:
        """The scenario's tool schemas (``name``, ``description``, ``parameters``), in simworld's order."""
        self._start()
        return self.env.tool_schemas

    def call(self, name: str, arguments: dict[str, Any] | None) -> Reply:
        """Apply one tool call to the episode and say what the agent gets back. A call that ends the episode seals
        it; :meth:`record` then grades and writes it."""
        env = self.env
        if not self._started:
            # The scenario's wall-clock budget counts from the agent's first call, not from server start.
            self._start()
        elif env.done:
            return Reply((f"The episode is over ({self._why_over()}); no further calls are accepted.",),
                         {"status": "error", "error": "episode over"}, True)
        observation, done = env.step({"tool": name, "args": {} if arguments is None else arguments})
        if observation.resumed:
            history = list(observation.history)
            texts: tuple[str, ...] = (
                "The session was interrupted during this call: it may or may not have taken effect. Check the "
                "records before you retry. The session log so far: " + _json(history),)
            structured: dict[str, Any] | None = {"status": "error", "error": "session interrupted",
                                                 "history": history}
            is_error = True
        elif observation.last_status == "ok":
            result = observation.last_result
            texts, structured, is_error = (_json(result),), result if isinstance(result, dict) else None, False
        else:
            message = observation.last_result.get("error", "") if isinstance(observation.last_result, dict) else ""
            message = str(message or observation.last_result)
            texts, structured, is_error = (message,), {"status": observation.last_status, "error": message}, True
        if done:
            self._seal()
            texts = (*texts, f"The episode is over ({self._why_over()}); no further calls are accepted.")
        return Reply(texts, structured, is_error)

    def leave(self, why: str) -> None:
        """End the episode because its client left before a terminal call: ``stop_reason: "agent_stopped"``
        with ``why`` as its ``error``, graded and written like any other episode. An episode that has ended is
        only recorded, if it is not yet."""
        self._start()
        if not self.env.done:
            self.env.step(None)
            self._seal(why)
        self.record()

    def expire(self) -> bool:
        """End the episode as ``timeout`` if its time budget, counted from its first call, is spent with no
        terminal call (as ``simworld run`` abandons an agent that stalls); whether it did."""
        if not self._started or self.env.done or self.env.remaining_s >= 0:
            return False
        self.env.time_out(f"no terminal call within the scenario's timeout_s ({self.scenario.timeout_s:g} s) "
                          "of the first call")
        self._seal()
        self.record()
        return True

    def _why_over(self) -> str:
        return _WHY_OVER.get(self.stop_reason or "", str(self.stop_reason))

    def _seal(self, error: str | None = None) -> None:
        """Seal the ended episode (with ``error`` as its error, if given) for :meth:`record`; a failure is logged,
        never sent to the client."""
        try:
            episode: Episode = self.env.episode()
        except Exception as exc:  # nothing to grade: the operator's to see
            self._log_failure("could not seal the episode", exc)
            return
        if error is not None:
            episode = attrs.evolve(episode, error=error)
        self.stop_reason = episode.stop_reason
        self._ended = episode

    def record(self) -> None:
        """Grade the sealed episode and (with ``out``) write it as ``simworld run`` does: its trial claimed, its event
        file, then its result line appended whole. Nothing if no episode awaits it. A harness failure becomes the
        line's ``harness_error`` and is logged, never sent to the client."""
        episode, self._ended = self._ended, None
        if episode is None:
            return
        scenario, seed, out, files = self.scenario, self.seed, self.out, self._files
        trial, fd = 0, -1
        if files is not None:
            try:
                trial, fd = files.claim(scenario.id, seed)
            except Exception as exc:  # nowhere to write: the operator's to see
                self._log_failure("could not record the episode", exc)
                return
        try:
            try:
                line = graded_line(scenario, episode, trial=trial)
            except Exception as exc:  # a harness bug, or ground truth that does not play at this seed
                line = harness_line(scenario.id, seed, trial, episode.agent, episode,
                                    "while grading: " + describe_exception(exc, frames=True),
                                    category=scenario.category)
            # What simworld run's finish_episode does, the event log going into the claimed file.
            line["hook_errors"] = run_post_hooks(scenario, episode, line, out)
            if fd >= 0:
                try:
                    write_all(fd, event_file_content(scenario, episode, trial, line["harness_error"]))
                except Exception as exc:
                    if line["harness_error"] is None:
                        line["harness_error"] = "while writing the event file: " + describe_exception(exc, frames=True)
                        line["passed"] = False
        finally:
            if fd >= 0:
                os.close(fd)
        if files is not None:
            try:
                files.append(canonical_bytes(line) + b"\n")
            except OSError as exc:
                self.seal_error = f"{type(exc).__name__}: {exc}"
                log_line(f"session {self.number}: could not append the result line to {files.out / RESULTS}: {exc}")
        self.result = line
        where = f"; written to {out}/ as trial {trial}" if out is not None and self.seal_error is None else ""
        why = f" ({line['error']})" if line.get("error") else ""
        log_line(f"session {self.number}: {scenario.id} seed {seed}: outcome {line['outcome']}, stop "
             f"{line['stop_reason']}{why}, {'PASS' if line['passed'] else 'FAIL'}, score {line['total']:.2f}{where}")

    def _log_failure(self, what: str, exc: Exception) -> None:
        self.seal_error = f"{type(exc).__name__}: {exc}"
        log_line(f"session {self.number}: {what}: {self.seal_error}\n{traceback.format_exc()}")


class EpisodeSessions:
    """The episodes of one served scenario and seed, one per MCP session, keyed by session.

    Each is its own :class:`EpisodeSession` (its own Environment at the seed): sessions share the world's
    starting state and nothing else. The instructions and tool list are the same for every session, made once
    here; so is where their episodes are written (:class:`EpisodeFiles`).
    """

    def __init__(self, scenario: Scenario, seed: int, out: Path | None = None,
                 idle_timeout_s: float | None = None) -> None:
        self.scenario = scenario
        self.seed = seed
        self.out = out
        self.idle_timeout_s = idle_timeout_s
        #: How many sessions have been opened.
        self.opened = 0
        self._open: dict[str, EpisodeSession] = {}
        self._files = EpisodeFiles(out) if out is not None else None
        env = Environment(scenario, seed, agent_name="mcp")
        env.reset()
        self.instructions = _instructions(scenario, env)
        #: The scenario's tool schemas (``name``, ``description``, ``parameters``), in simworld's order.
        self.tool_schemas = env.tool_schemas

    def open(self, key: str) -> EpisodeSession:
        """Start the episode of a new session."""
        session = EpisodeSession(self.scenario, self.seed, self.out, number=self.opened, files=self._files)
        self.opened += 1
        self._open[key] = session
        return session

    def __len__(self) -> int:
        """How many sessions are open."""
        return len(self._open)

    def get(self, key: str | None) -> EpisodeSession | None:
        """The episode of session ``key``, if it is open."""
        return None if key is None else self._open.get(key)

    def close(self, key: str, why: str) -> None:
        """Forget session ``key``; an episode it left before a terminal call is recorded with ``why``."""
        session = self._open.pop(key, None)
        if session is not None:
            session.leave(why)

    def close_all(self, why: str) -> None:
        """Close every open session (the server is stopping), and ``results.jsonl`` once their lines are in."""
        for key in list(self._open):
            self.close(key, why)
        if self._files is not None:
            self._files.close()

    def sweep(self, now: float) -> None:
        """End what has run out of real time: an episode past its time budget (as ``timeout``), and, with
        ``idle_timeout_s``, a session that has sent nothing for that long (as left)."""
        idle = self.idle_timeout_s
        for key, session in list(self._open.items()):
            session.expire()
            if idle is not None and now - session.last_active > idle:
                self.close(key, f"the client left: no request for {idle:g} s")
