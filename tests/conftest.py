"""Shared fixtures: a fresh World over the small snapshot for each test."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from simworld._world.clock import SimClock
from simworld._world.snapshot import Snapshot, SnapshotLoader
from simworld._world.tools import TOOLS
from simworld._world.world import World

SMALL_SNAPSHOT = Path(__file__).parent.parent / "snapshots" / "small.json"


@pytest.fixture(scope="session", autouse=True)
def _end_state_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The tests' cached end states live in a folder of their own, not in the user's cache."""
    os.environ["SIMWORLD_CACHE_DIR"] = str(tmp_path_factory.mktemp("end-states"))


@pytest.fixture(scope="session")
def small_snapshot() -> Snapshot:
    """The small snapshot, parsed once per session (it is immutable)."""
    return SnapshotLoader().load(SMALL_SNAPSHOT)


@pytest.fixture(scope="session")
def make_world(small_snapshot: Snapshot) -> Callable[[], World]:
    """A factory of fresh Worlds over the small snapshot (safe to use inside hypothesis tests)."""

    def factory() -> World:
        snap = small_snapshot
        return World(snap.state(), SimClock(snap.clock), snap.policy, dict(TOOLS))

    return factory


@pytest.fixture
def world(make_world: Callable[[], World]) -> World:
    """A fresh World over the small snapshot, clock 2026-04-20T14:00Z."""
    return make_world()
