"""What a process holds of the last few (scenario, seed)s: their perturbed starts, their solutions' end states.

Both are made once per (scenario, seed) and read by every episode of it (its trials, the solutions the grading
plays), so each is kept under a bound, the least recently used let go first. A run that knows how many episodes it
has in flight sets the bound to that (see :func:`simworld._running.runner.run_suite`), so that what an episode
already graded made is let go while its records are still in the processor's caches.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["Held"]

V = TypeVar("V")


class Held(Generic[V]):
    """At most :attr:`size` (at least one) values by key, the least recently used let go first; shared by threads.

    Args:
        size: The bound to start with.
    """

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Hashable]:
        """The keys held, the least recently used first."""
        return iter(list(self._values))

    def get(self, key: Hashable, valid: Callable[[V], bool]) -> V | None:
        """The value held under ``key`` when ``valid`` says it still stands (it is then the most recently used), or
        None."""
        with self._lock:
            value = self._values.get(key)
            if value is None or not valid(value):
                return None
            self._values.move_to_end(key)
            return value

    def keep(self, key: Hashable, value: V, valid: Callable[[V], bool]) -> V:
        """Hold ``value`` under ``key``, unless a valid one is held there already (another thread made it first): the
        value held. The oldest are let go beyond the bound."""
        with self._lock:
            held = self._values.get(key)
            if held is not None and valid(held):
                return held
            self._values[key] = value
            self._trim()
        return value

    def bound(self, n: int) -> int:
        """Hold at most ``n`` (at least one) from now on, the oldest let go at once; the bound it replaces."""
        with self._lock:
            before, self.size = self.size, max(1, n)
            self._trim()
        return before

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def _trim(self) -> None:
        while len(self._values) > self.size:
            self._values.popitem(last=False)
