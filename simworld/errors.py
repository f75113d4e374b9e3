"""The one exception root and its subclasses.

Every exception also inherits the builtin it resembles, so callers that catch
``ValueError`` or ``LookupError`` keep working. Messages name the file or the
argument, show the bad value with ``!r``, say what was expected and, where there
is one, the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal


class SimworldError(Exception):
    """Root of every error simworld raises on purpose."""


class MissingDependency(SimworldError, ImportError):
    """An optional dependency a command or an integration needs is not installed; the message says how to
    install it (``pip install 'simworld[EXTRA]'``)."""


class MoneyError(SimworldError, ValueError):
    """An amount or a currency that cannot be represented exactly."""


class DateError(SimworldError, ValueError):
    """A date, an anchor day or a roll convention that is out of range."""


class ScenarioError(SimworldError, ValueError):
    """A scenario directory, task.json, prompt or solution that cannot load."""


class BrokenSolutionError(ScenarioError):
    """Solution files of a scenario that do not play at a seed: the ground truth is wrong.

    ``problems`` holds ``(file name, why)`` for every solution that does not play, so a
    caller can report each file on its own.
    """

    def __init__(self, path: Path, seed: int, problems: tuple[tuple[str, str], ...]) -> None:
        self.path, self.seed, self.problems = path, seed, problems
        super().__init__("; ".join(f"{path / name}: this solution does not play at seed {seed}: {why}"
                                   for name, why in problems)
                         + "; fix the solution file (or drop it) so that every solution plays to a terminal tool.")

    def __reduce__(self) -> tuple[type, tuple[Path, int, tuple[tuple[str, str], ...]]]:
        return type(self), (self.path, self.seed, self.problems)


class SnapshotError(SimworldError, ValueError):
    """A snapshot file that cannot load."""


class AgentSpecError(SimworldError, ValueError):
    """An ``--agent`` value that names no agent simworld can build."""


class ReplayError(SimworldError, ValueError):
    """An event log that does not rebuild the world it claims to."""


class AgentTimeout(SimworldError, TimeoutError):
    """The agent gave no action within its episode's ``timeout_s`` (the episode ends as ``timeout``)."""


class RunDirError(SimworldError, ValueError):
    """A run directory that cannot be written, resumed or merged as asked."""


class ToolError(SimworldError):
    """Base of the two errors a tool raises for the agent to read.

    These never escape the episode loop: they become the call's result.
    """

    status: Literal["error", "denied"] = "error"


class ToolArgumentError(ToolError, ValueError):
    """The agent passed a bad argument; the call had no effect."""


class PolicyDenied(ToolError, PermissionError):
    """The call breaks a rule the system enforces; the call had no effect."""

    status = "denied"


def describe_exception(exc: BaseException, *, frames: bool = False) -> str:
    """``Type: message (at file.py:line)``; with ``frames``, every frame of the traceback.

    File names are reduced to their base name so that a result line holds no machine path
    and reads the same on every machine.
    """
    import traceback  # here, not at the top: only a failure needs it, and every start would pay for it

    head = f"{type(exc).__name__}: {exception_text(exc)}"
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb or not getattr(exc, "located", True):  # an error that says all itself (an agent process's)
        return head
    if not frames:
        return f"{head} (at {Path(tb[-1].filename).name}:{tb[-1].lineno})"
    lines = [head, "Traceback (most recent call last):"]
    lines += [f"  {Path(f.filename).name}:{f.lineno} in {f.name}" for f in tb]
    return "\n".join(lines)


#: The longest exception message a result line keeps (an agent's exception may say anything, at any length).
MAX_MESSAGE_CHARS = 4000


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, at most MAX_MESSAGE_CHARS; a placeholder when the exception cannot be printed (an agent's
    exception is untrusted code: its ``__str__`` may raise anything)."""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - whatever an untrusted __str__ raises, the episode is still recorded
        return "(its message could not be read)"
    if not isinstance(text, str):
        return "(its message could not be read)"
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "…"


class CacheSettingError(SimworldError, ValueError):
    """An environment variable that sets the disk cache holds a value it cannot take; the message says which."""


class FamilyError(SimworldError, ValueError):
    """A task family's manifest, phrasings or solver is wrong, or its parameter space cannot give what was asked."""
