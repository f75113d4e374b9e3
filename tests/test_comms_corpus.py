"""The labelled corpus of outgoing texts (tests/fixtures/comms_corpus.jsonl) is well-formed.

The corpus is what the communications grader is measured on (benchmarks/bench_comms_corpus.py);
these tests check its shape only, never the grader's accuracy on it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from simworld import load_scenario

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "comms_corpus.jsonl"
LABELS = ("true", "disclosure", "figure", "claim")
REQUIRED = {"id", "scenario", "seed", "text", "label", "reason"}
OPTIONAL = {"suite"}


def _entries() -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ENTRIES = _entries()


class TestCorpusShape:
    def test_every_line_is_an_object_with_the_known_keys(self) -> None:
        """Every entry has exactly the required keys (and possibly ``suite``), each of the right type."""
        for e in ENTRIES:
            assert isinstance(e, dict)
            assert REQUIRED <= set(e) <= REQUIRED | OPTIONAL, e.get("id")
            assert isinstance(e["seed"], int) and not isinstance(e["seed"], bool) and e["seed"] >= 0, e["id"]
            for key in ("id", "scenario", "text", "reason") + (("suite",) if "suite" in e else ()):
                assert isinstance(e[key], str) and e[key].strip(), (e["id"], key)

    def test_labels_are_the_four_classes(self) -> None:
        """Every label is one of true, disclosure, figure, claim."""
        assert {e["label"] for e in ENTRIES} <= set(LABELS)

    def test_size_and_balance(self) -> None:
        """At least 420 entries, at least half of them true, and at least 60 of each false class."""
        counts = Counter(e["label"] for e in ENTRIES)
        assert len(ENTRIES) >= 420
        assert 2 * counts["true"] >= len(ENTRIES)
        for label in LABELS[1:]:
            assert counts[label] >= 60, (label, counts[label])

    def test_spread_over_scenarios(self) -> None:
        """The texts come from at least 20 scenarios."""
        assert len({(e.get("suite", "scenarios"), e["scenario"]) for e in ENTRIES}) >= 20

    def test_ids_unique(self) -> None:
        """No two entries share an id."""
        ids = Counter(e["id"] for e in ENTRIES)
        assert not [i for i, n in ids.items() if n > 1]

    def test_texts_unique(self) -> None:
        """No two entries share a text (after trimming whitespace)."""
        texts = Counter(e["text"].strip() for e in ENTRIES)
        assert not [t for t, n in texts.items() if n > 1]


@pytest.mark.parametrize("suite,scenario", sorted({(e.get("suite", "scenarios"), e["scenario"]) for e in ENTRIES}))
def test_every_scenario_loads_at_its_seeds(suite: str, scenario: str) -> None:
    """Every scenario the corpus names loads, has a reference solution, and gives a world at each seed it uses."""
    loaded = load_scenario(ROOT / suite / scenario)
    assert loaded.solutions
    seeds = {e["seed"] for e in ENTRIES if e["scenario"] == scenario and e.get("suite", "scenarios") == suite}
    for seed in sorted(seeds):
        assert loaded.instance(seed).state is not None


PROBES = {"probe": ROOT / "tests" / "fixtures" / "comms_corpus_probe.jsonl",
          "held out": ROOT / "tests" / "fixtures" / "comms_corpus_heldout.jsonl",
          "held out, second round": ROOT / "tests" / "fixtures" / "comms_corpus_heldout2.jsonl",
          "held out, third round": ROOT / "tests" / "fixtures" / "comms_corpus_heldout3.jsonl",
          "held out, fourth round": ROOT / "tests" / "fixtures" / "comms_corpus_heldout4.jsonl"}


@pytest.mark.parametrize("name", list(PROBES))
def test_the_later_corpora_are_well_formed(name: str) -> None:
    """The later corpora (texts written the way chat models write, at other seeds; the held-out one written before
    the grader was changed for it) have the first's shape: the known keys, the four labels, unique ids, every
    false class present, and scenarios that load at their seeds."""
    with PROBES[name].open(encoding="utf-8") as fh:
        entries = [json.loads(line) for line in fh if line.strip()]
    assert len(entries) >= 300
    assert len({e["id"] for e in entries}) == len(entries)
    for e in entries:
        assert REQUIRED <= set(e) <= REQUIRED | OPTIONAL, e.get("id")
        assert e["label"] in LABELS and isinstance(e["seed"], int) and e["seed"] > 0, e["id"]
    counts = Counter(e["label"] for e in entries)
    assert 2 * counts["true"] >= len(entries) and all(counts[label] >= 30 for label in LABELS[1:]), counts
    for scenario in sorted({e["scenario"] for e in entries}):
        loaded = load_scenario(ROOT / "scenarios" / scenario)
        for seed in sorted({e["seed"] for e in entries if e["scenario"] == scenario}):
            assert loaded.instance(seed).state is not None
