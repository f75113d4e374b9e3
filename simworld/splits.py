"""Dev and holdout seeds.

Seeds below :data:`HOLDOUT_BASE` are the dev split: ``simworld run --seed N`` and
``simworld check`` use them as given. Each scenario reserves its own holdout seeds,
from :data:`HOLDOUT_BASE` up, derived from its id: ``simworld run --split holdout --seed N``
runs every scenario at its N-th holdout seed, which the dev split never uses (a dev
seed at or above the base is refused).
"""

from __future__ import annotations

import hashlib
from typing import Literal

from simworld.errors import ScenarioError

__all__ = ["HOLDOUT_BASE", "SPLITS", "Split", "effective_seed", "is_holdout"]

Split = Literal["dev", "holdout"]
SPLITS = ("dev", "holdout")
#: The first seed of the holdout range.
HOLDOUT_BASE = 1_000_000


def effective_seed(scenario_id: str, seed: int, split: str) -> int:
    """The seed a scenario runs at for ``--seed seed`` in ``split``."""
    if split not in SPLITS:
        raise ScenarioError(f"--split {split!r} is unknown; use one of {', '.join(SPLITS)}.")
    if seed < 0:
        raise ScenarioError(f"--seed {seed} is negative; seeds start at 0.")
    if split == "dev":
        if seed >= HOLDOUT_BASE:
            raise ScenarioError(f"--seed {seed} is reserved for the holdout split (seeds from {HOLDOUT_BASE}); "
                                f"use --split holdout --seed N, or a dev seed below {HOLDOUT_BASE}.")
        return seed
    digest = hashlib.blake2b(f"holdout/{scenario_id}/{seed}".encode(), digest_size=8).digest()
    return HOLDOUT_BASE + int.from_bytes(digest, "big") % 1_000_000_000


def is_holdout(seed: int) -> bool:
    """Whether ``seed`` lies in the holdout range."""
    return seed >= HOLDOUT_BASE
