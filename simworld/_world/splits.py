"""Dev and holdout seeds.

Seeds below :data:`HOLDOUT_BASE` are the dev split: ``simworld run``, ``serve``, ``show`` and
``check`` use them as given. Each scenario reserves its own holdout seeds, from
:data:`HOLDOUT_BASE` up, derived from its id: ``simworld run --split holdout --seed N`` (and
``serve``, ``check``) runs every scenario at its N-th holdout seed, which the dev split never
uses (a dev seed at or above the base is refused, and so is a negative seed, by
:func:`check_seed`). ``show`` prints dev worlds only: printing a holdout world would leak it.
"""

from __future__ import annotations

from typing import Literal

from simworld._world.hashing import blake2b
from simworld.errors import ScenarioError

__all__ = ["HOLDOUT_BASE", "MAX_SEEDS", "SPLITS", "Split", "check_seed", "effective_seed", "format_seeds",
           "is_holdout", "parse_seeds"]

Split = Literal["dev", "holdout"]
SPLITS = ("dev", "holdout")
#: The first seed of the holdout range.
HOLDOUT_BASE = 1_000_000
#: The most seeds one ``--seeds`` may name (a typo such as ``0..10000000000`` fails at once).
MAX_SEEDS = 1_000_000


def check_seed(seed: int, split: str, option: str = "--seed") -> None:
    """Refuse what ``split`` cannot take as ``option``: an unknown split, a negative seed, or a dev seed in the
    holdout range (a dev command given one would run, show or check a holdout world).

    Every command that takes a seed calls this before it touches a world, so the holdout range is reachable
    only through ``--split holdout``, where the seed is an index into the scenario's reserved seeds. An
    ``option`` without the leading ``--`` is a Python keyword (``make(seed=...)``), and the fix is said in Python.
    """
    keyword = not option.startswith("--")
    if split not in SPLITS:
        name = "split" if keyword else "--split"
        raise ScenarioError(f"{name} {split!r} is unknown; use one of {', '.join(SPLITS)}.")
    if seed < 0:
        raise ScenarioError(f"{option} {seed} is negative; seeds start at 0.")
    if split == "dev" and seed >= HOLDOUT_BASE:
        form = "N" if option in ("--seed", "seed") else "A..B"
        fix = f"split='holdout' with {option}={form}" if keyword else f"--split holdout {option} {form}"
        raise ScenarioError(f"{option} {seed} is reserved for the holdout split (seeds from {HOLDOUT_BASE}); "
                            f"use {fix}, or a dev seed below {HOLDOUT_BASE}.")


def effective_seed(scenario_id: str, seed: int, split: str) -> int:
    """The seed a scenario runs at for ``--seed seed`` in ``split`` (refused as :func:`check_seed` says)."""
    check_seed(seed, split)
    if split == "dev":
        return seed
    digest = blake2b(f"holdout/{scenario_id}/{seed}".encode(), digest_size=8).digest()
    return HOLDOUT_BASE + int.from_bytes(digest, "big") % 1_000_000_000


def is_holdout(seed: int) -> bool:
    """Whether ``seed`` lies in the holdout range."""
    return seed >= HOLDOUT_BASE


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """Parse a seed list: ``A..B`` (inclusive), ``N``, or a comma list of either (``3,7,11``, ``0..4,9``).

    Seeds keep the order given; a seed named twice runs once.
    """
    seeds: dict[int, None] = {}
    parts = [p.strip() for p in str(text).split(",")]
    for part in parts:
        try:
            if ".." in part:
                lo_text, hi_text = part.split("..", 1)
                lo, hi = int(lo_text), int(hi_text)
            else:
                lo = hi = int(part)
        except ValueError:
            raise ScenarioError(f"{option} {text!r}: expected A..B (inclusive, e.g. 0..49), a seed, or a comma "
                                "list of these (e.g. 3,7,11).") from None
        if lo < 0 or hi < lo:
            raise ScenarioError(f"{option} {text!r}: {part!r} needs 0 <= A <= B.")
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise ScenarioError(f"{option} {text!r} names more than {MAX_SEEDS:,} seeds; split the sweep.")
        seeds.update(dict.fromkeys(range(lo, hi + 1)))
    return list(seeds)


def format_seeds(seeds: list[int]) -> str:
    """The shortest spelling of ``seeds`` that :func:`parse_seeds` reads back: ``0..49``, ``3,7,11``, ``0..4,9``."""
    out: list[str] = []
    i = 0
    while i < len(seeds):
        j = i
        while j + 1 < len(seeds) and seeds[j + 1] == seeds[j] + 1:
            j += 1
        out.append(str(seeds[i]) if j == i else f"{seeds[i]}..{seeds[j]}" if j > i + 1 else f"{seeds[i]},{seeds[j]}")
        i = j + 1
    return ",".join(out)
