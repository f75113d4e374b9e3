"""Where simworld keeps what it can make again on disk, and whether it does: the solutions' end states
(:mod:`simworld._episode.endstates`) and the text graders' compiled patterns (:mod:`graders._patterns`).

Both are caches in the strict sense: deleting them, or turning them off, changes no result, only how much is
computed again. The end-state files are bounded on disk (:func:`cache_budget`, :func:`trim_folder`): a sweep of
fresh seeds writes one per (scenario, seed), and a million episodes would otherwise leave a million files behind.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import time
from pathlib import Path

from simworld.errors import CacheSettingError

__all__ = ["DEFAULT_MAX_MB", "FOLDERS", "cache_budget", "cache_dir", "cache_setting_problem", "disk_cache_enabled",
           "set_disk_cache", "trim_folder", "used", "wrote"]

#: How many megabytes the end-state files may take on disk unless ``SIMWORLD_CACHE_MAX_MB`` says otherwise: about
#: 65,000 (scenario, seed)s of 8 KB, the suite's 28 scenarios at 2,300 seeds.
DEFAULT_MAX_MB = 512

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


def cache_setting_problem() -> str | None:
    """What is wrong with the disk cache's settings (``SIMWORLD_CACHE_MAX_MB``), said for a command's error line,
    or None: a command checks before any work, so that no episode is the first to find out."""
    try:
        cache_budget()
    except CacheSettingError as exc:
        return str(exc)
    return None


def cache_budget() -> int:
    """How many bytes of the disk the end-state files may take: ``SIMWORLD_CACHE_MAX_MB`` megabytes (a number above
    0), else :data:`DEFAULT_MAX_MB`.

    Raises:
        CacheSettingError: ``SIMWORLD_CACHE_MAX_MB`` is set to anything but a number of megabytes above 0.
    """
    raw = os.environ.get("SIMWORLD_CACHE_MAX_MB", "").strip()
    if not raw:
        return DEFAULT_MAX_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not (0 < mb < math.inf):
        raise CacheSettingError(
            f"SIMWORLD_CACHE_MAX_MB={raw!r} is not a size: set it to a number of megabytes above 0 (the default is "
            f"{DEFAULT_MAX_MB}), or unset it; to keep no end states on disk, use --no-cache or SIMWORLD_NO_CACHE=1.")
    return max(1, int(mb * (1 << 20)))


#: The folders the end-state files are spread over: the first two hex digits of a file's name.
FOLDERS = 256
#: What an end-state file takes of the disk, about (a few KB of JSON, in 4 KB blocks): how often to trim is worked out
#: from it (see :func:`wrote`); what a trim removes is worked out from each file's own size.
_TYPICAL_FILE = 8 << 10
_written = os.getpid()  # where this process starts counting: processes of a few writes each trim, together, as often


def wrote(folder: str) -> None:
    """Count a file just written into ``folder`` (one of the cache's :data:`FOLDERS`) and, every so often, trim it
    to its share of :func:`cache_budget` (:func:`trim_folder`).

    A process trims the folder it has just written to once every ``k`` files it writes, ``k`` an eighth of a
    folder's share in typical files (at least 1: a share of under 16 of them is trimmed at every write). A name's
    hash picks its folder evenly, so a folder is trimmed once in ``k`` of the files written to it, on average:
    between two trims it gains ``k`` files, an eighth of its share, and the whole cache stays within about 1.125
    times the budget.
    """
    global _written
    budget = cache_budget() // FOLDERS
    _written += 1
    if _written % max(1, budget // (8 * _TYPICAL_FILE)) == 0:
        trim_folder(folder, budget)


def used(fd: int) -> None:
    """Mark the cache file open as ``fd`` as just used: its access time now (its write time kept), so that a trim
    removes it after the files used less recently. Where a file's times cannot be set, nothing happens."""
    with contextlib.suppress(OSError, NotImplementedError, TypeError):
        os.utime(fd, ns=(time.time_ns(), os.fstat(fd).st_mtime_ns))


def trim_folder(folder: str, budget: int) -> int:
    """When the files in ``folder`` take more than ``budget`` bytes of the disk, remove the least recently used
    (read or written, see :func:`used`) until they take three quarters of it (a trim makes room for many writes,
    not one); the number removed.

    A file another process removes or replaces meanwhile is skipped; a folder that cannot be read is left alone.
    """
    found: list[tuple[int, str, int]] = []
    total = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                size = getattr(st, "st_blocks", 0) * 512 or st.st_size  # what it takes of the disk, where known
                total += size
                found.append((max(st.st_atime_ns, st.st_mtime_ns), entry.name, size))
    except OSError:
        return 0
    if total <= budget:
        return 0
    found.sort()
    removed = 0
    for _, name, size in found:
        if total <= budget * 3 // 4:
            break
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))
            removed += 1
        total -= size
    return removed
