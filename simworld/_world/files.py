"""Reading an input file with a bound: a scenario's task.json, prompt and solutions, a snapshot, a family's files.

These directories are input simworld does not control. A file in one may be a symlink
to ``/dev/zero`` (endless), a FIFO nobody writes to (a read blocks forever) or a file of
gigabytes. :func:`read_bounded` reads a file only when it is a regular file, after
following symlinks, and only up to a size limit, so a bad one fails at once with one
line naming it instead of hanging or exhausting memory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from simworld.errors import SimworldError

__all__ = ["MAX_SCENARIO_FILE_BYTES", "MAX_SNAPSHOT_BYTES", "as_path", "read_bounded", "size_text"]

#: A task.json, family.json, phrasings.md or world file: a few kilobytes in practice.
MAX_SCENARIO_FILE_BYTES = 4 * 1024 * 1024
#: A snapshot (a whole world): the bundled large one is about 2 MB.
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def as_path(value: str | os.PathLike[str], name: str) -> Path:
    """``value`` (a str or an os.PathLike) as a Path, for a public function's path argument ``name``.

    Raises:
        TypeError: naming the argument, its value and its type, when it is neither.
    """
    if isinstance(value, Path):
        return value
    if isinstance(value, str) or (isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)):
        return Path(value)
    raise TypeError(f"Expected {name} as a str or os.PathLike but got {name}={value!r} "
                    f"(type={type(value).__name__}).")


def size_text(n: int) -> str:
    """``n`` bytes as the limit a message states: ``65,536 bytes (64 KiB)``."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n:,} bytes ({n // size} {unit})"
    return f"{n:,} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bounded(path: Path, limit: int, error: type[SimworldError], what: str = "a file here",
                 fix: str = "") -> bytes:
    """The bytes of ``path``, a regular file (symlinks followed) of at most ``limit`` bytes.

    The file is opened non-blocking and checked again once open, so a FIFO swapped in
    between the check and the open cannot block; the read stops one byte past the limit,
    so a file that grows (or a device that never ends) cannot exhaust memory.

    Raises:
        OSError: when the file cannot be found or opened (each caller says what it expected there).
        SimworldError: an ``error`` naming the file, when it is not a regular file or is over ``limit``
            (``what`` names the kind of file in the message, and ``fix``, a sentence, ends it).
    """
    tail = f" {fix}" if fix else ""

    def refuse(mode: int) -> SimworldError:
        return error(f"{path}: is {_kind(mode)}, not a regular file; replace it with a plain file (a symlink "
                     f"must point at one).{tail}")

    def too_big(size: str) -> SimworldError:
        return error(f"{path}: {size}; {what} may hold at most {size_text(limit)}.{tail}")

    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise refuse(st.st_mode)
    if st.st_size > limit:
        raise too_big(f"{st.st_size:,} bytes")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(st.st_mode)
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1024 * 1024, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > limit:
        raise too_big(f"more than {limit:,} bytes")
    return b"".join(chunks)
