"""The episodes of `simworld serve`, apart from any transport (serve_sessions): how they are written and started."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest

from simworld._edges.serve import EpisodeSessions
from simworld._running.job import event_file_content
from simworld._scenario.scenario import load_suite
from simworld._world.events import read_events

SCENARIO = "split-balance-three-ways"
SEED = 3
(SPLIT,) = load_suite(None, [SCENARIO])


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())  # the one-line grade summaries


def _decline(sessions: EpisodeSessions, key: str) -> None:
    session = sessions.open(key)
    session.call("decline", {"reason": "Testing."})
    session.record()


class TestEpisodeFiles:
    def test_each_episode_fills_the_event_file_its_trial_claimed(self, tmp_path: Path) -> None:
        """Episodes get trials 0, 1, 2 in the order they end; each event file holds exactly the bytes simworld run
        would write for it, and each result line names its trial, in order."""
        out = tmp_path / "out"
        sessions = EpisodeSessions(SPLIT, SEED, out)
        ended = []
        for key in "abc":
            _decline(sessions, key)
            session = sessions.get(key)
            assert session is not None and session.result is not None
            ended.append(session)
        lines = [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]
        assert [line["trial"] for line in lines] == [0, 1, 2]
        for trial, (session, line) in enumerate(zip(ended, lines, strict=True)):
            name = f"{SCENARIO}__seed-{SEED}.jsonl" if trial == 0 else f"{SCENARIO}__seed-{SEED}__trial-{trial}.jsonl"
            written = (out / "events" / name).read_bytes()
            assert read_events(out / "events" / name).footer["events_hash"] == line["events_hash"]
            assert written == event_file_content(SPLIT, session.env.episode(), trial, None)
        sessions.close_all("done")

    def test_events_removed_while_serving_are_made_again(self, tmp_path: Path) -> None:
        """An events/ directory removed between two episodes is made again, and the next episode is written."""
        out = tmp_path / "out"
        sessions = EpisodeSessions(SPLIT, SEED, out)
        _decline(sessions, "a")
        shutil.rmtree(out / "events")
        _decline(sessions, "b")
        assert [p.name for p in (out / "events").iterdir()] == [f"{SCENARIO}__seed-{SEED}__trial-1.jsonl"]
        assert len((out / "results.jsonl").read_bytes().splitlines()) == 2
        sessions.close_all("done")


class TestSessionStart:
    def test_a_session_left_before_any_call_is_recorded_with_no_calls(self, tmp_path: Path) -> None:
        """A session whose world was never reset (no call) still ends as agent_stopped, graded and written, with the
        seed's initial state, like one left after its reset."""
        out = tmp_path / "out"
        sessions = EpisodeSessions(SPLIT, SEED, out)
        sessions.open("idle")
        sessions.close("idle", "the client left")
        (line,) = [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]
        assert (line["stop_reason"], line["error"], line["counters"]["tool_calls"]) == (
            "agent_stopped", "the client left", 0)
        sessions.close_all("done")
