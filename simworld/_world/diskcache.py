"""Where simworld keeps what it can make again on disk, and whether it does: the solutions' end states
(:mod:`simworld._episode.endstates`) and the text graders' compiled patterns (:mod:`graders._patterns`).

Both are caches in the strict sense: deleting them, or turning them off, changes no result, only how much is
computed again.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "disk_cache_enabled", "set_disk_cache"]

_disk_enabled: bool | None = None  # None: the environment decides


def set_disk_cache(enabled: bool | None) -> None:
    """Turn the disk cache on or off for this process (``None``: back to ``SIMWORLD_NO_CACHE``)."""
    global _disk_enabled
    _disk_enabled = enabled


def disk_cache_enabled() -> bool:
    """Whether end states (and compiled patterns) are read from and written to disk."""
    if _disk_enabled is not None:
        return _disk_enabled
    return os.environ.get("SIMWORLD_NO_CACHE", "") in ("", "0")


def cache_dir() -> Path:
    """Where the end-state files live (the compiled patterns in its ``patterns/``)."""
    env = os.environ
    key = (env.get("SIMWORLD_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))
    held = _dirs.get(key)
    if held is None:
        explicit, xdg, _ = key
        held = Path(explicit) if explicit else Path(xdg or str(Path.home() / ".cache")) / "simworld" / "end-states"
        if len(_dirs) >= 64:
            _dirs.clear()
        _dirs[key] = held
    return held


#: The folder :func:`cache_dir` names, per the environment variables it reads (asked for at every (scenario, seed)).
_dirs: dict[tuple[str | None, str | None, str | None], Path] = {}
