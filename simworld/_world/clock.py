"""The simulated clock, the freezegun guard for foreign code, and the real clock.

simworld's own code reads time only from :class:`SimClock`. Foreign code (a
user's agent, tool or grader) that calls ``datetime.now()`` sees simulated time
through :class:`TimeGuard`, which starts freezegun once and then only moves it:
entering ``freeze_time`` scans every loaded module (about 1.7 ms) while moving a
started freezer costs microseconds. freezegun also patches ``time.monotonic`` and
``time.perf_counter``, so the harness's own timeouts and progress use
:func:`wall_monotonic`, which keeps a reference freezegun's module scan cannot
reach.
"""

from __future__ import annotations

import functools
import time
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import attrs

from simworld.errors import SimworldError

__all__ = ["SimClock", "TimeGuard", "format_instant", "parse_instant", "wall_monotonic", "wall_time"]

# The real datetime class, held in a tuple: freezegun swaps module attributes that are it for its fake.
_REAL_DATETIME = (datetime,)

# Held inside a dict, not as module attributes: freezegun replaces module
# attributes that are the real time functions, but never looks inside containers.
_REAL = {"monotonic": time.monotonic, "time": time.time}


def wall_monotonic() -> float:
    """Real monotonic seconds, unaffected by freezegun; for timeouts and progress."""
    return _REAL["monotonic"]()


def wall_time() -> float:
    """Real epoch seconds, unaffected by freezegun; for run metadata only."""
    return _REAL["time"]()


def parse_instant(value: str) -> datetime:
    """Parse an ISO instant ending in ``Z`` (or an offset) into an aware UTC datetime."""
    if not isinstance(value, str):
        raise SimworldError(f"Expected an ISO instant such as '2026-03-01T09:00:00Z' but got {value!r}.")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise SimworldError(f"Expected an ISO instant such as '2026-03-01T09:00:00Z' but got {value!r}.") from None
    if parsed.tzinfo is None:
        raise SimworldError(f"Instant {value!r} has no time zone; write it in UTC with a trailing 'Z'.")
    return parsed.astimezone(UTC)


def format_instant(value: datetime) -> str:
    """Format an aware datetime as UTC ISO with millisecond precision and ``Z``."""
    if value.tzinfo is UTC:  # the simulated clock's instants: each formatted once per process
        return _format_utc(value)
    return _format(value)


@functools.lru_cache(maxsize=1 << 14)  # a run's instants repeat: its solutions make the agent's calls again
def _format_utc(value: datetime) -> str:
    return _format(value)


def _format(value: datetime) -> str:
    utc = value.astimezone(UTC)
    if utc.year < 1000:  # strftime's %Y does not pad such a year on every platform: keep its text
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    # Written out, not strftime: under a TimeGuard strftime is freezegun's, which inspects the call stack.
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}."
            f"{utc.microsecond // 1000:03d}Z")


#: The timedelta of each latency a clock has advanced by (tools have a few fixed ones).
_STEPS: dict[float, timedelta] = {}


@attrs.define
class SimClock:
    """The world's clock: set at reset, advanced only by tools' fixed latencies.

    It never goes back. When a :class:`TimeGuard` is attached, every move is
    mirrored into freezegun so foreign code sees the same instant.
    """

    now: datetime
    guard: TimeGuard | None = None
    # The last instant iso() formatted, and its text: an event, the observation after it and the next event
    # all read the same instant.
    _iso_of: datetime | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _iso: str = attrs.field(default="", init=False, eq=False, repr=False)

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` (>= 0) and return the new instant."""
        if seconds < 0:
            raise SimworldError(f"The simulated clock never goes back; got seconds={seconds!r}.")
        step = _STEPS.get(seconds)
        if step is None:
            step = timedelta(seconds=seconds)
            if len(_STEPS) < 256:
                _STEPS[seconds] = step
        self.now = self.now + step
        if self.guard is not None:
            self.guard.move_to(self.now)
        return self.now

    def set(self, instant: datetime) -> None:
        """Set the clock to ``instant`` (used by reset and replay); never backwards once running."""
        self.now = instant
        if self.guard is not None:
            self.guard.move_to(instant)

    def iso(self) -> str:
        """The current instant as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (formatted once per instant)."""
        now = self.now
        if now is not self._iso_of:
            self._iso = format_instant(now)
            self._iso_of = now
        return self._iso


class TimeGuard:
    """Start freezegun once; move it as simulated time moves.

    Use one guard per run (or per worker): ``with TimeGuard() as guard:`` and
    attach it to each episode's clock. Nested guards are refused, because two
    freezers would fight over the same patched functions.
    """

    _active: TimeGuard | None = None

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2000, 1, 1, tzinfo=UTC)
        self._freezer: Any = None
        self._factory: Any = None

    def __enter__(self) -> TimeGuard:
        from freezegun import freeze_time

        if TimeGuard._active is not None:
            raise SimworldError("A TimeGuard is already active; attach its clock instead of starting another.")
        self._freezer = freeze_time(self._start)
        self._factory = self._freezer.start()
        TimeGuard._active = self
        return self

    def move_to(self, instant: datetime) -> None:
        """Move the started freezer to ``instant``.

        What freezegun's own ``move_to`` does, without its parsing and dispatch (a call costs
        the episode two of these): the frozen instant is naive UTC, moved by the difference.
        """
        factory = self._factory
        if factory is None:
            return
        offset = instant.utcoffset() if isinstance(instant, _REAL_DATETIME) else None
        if offset is None:
            factory.move_to(instant)  # anything else: freezegun's own reading of it
            return
        target = (instant - offset).replace(tzinfo=None)
        frozen = factory.time_to_freeze
        factory.time_to_freeze = frozen + (target - frozen)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._freezer is not None:
            self._freezer.stop()
        self._freezer = self._factory = None
        TimeGuard._active = None
