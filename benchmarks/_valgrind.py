"""How the benchmarks count a process's instructions: valgrind's cachegrind, read off what it prints."""

from __future__ import annotations

import re

#: The command prefix that counts a process's instructions (valgrind's cachegrind, no cache simulation).
VALGRIND = ("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")


def instruction_count(valgrind_output: str) -> int | None:
    """The instructions a process ran under :data:`VALGRIND`, read off what valgrind printed, or None."""
    found = re.search(r"I\s+refs:\s+([\d,]+)", valgrind_output)
    return None if found is None else int(found.group(1).replace(",", ""))
