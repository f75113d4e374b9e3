"""The grader contract: how an episode is judged, without any particular judgement.

Owns Check and Verdict (what a grader returns), loading and calling graders and
combining their parts into a score (``contract``), the projections of records that
graders compare, the invariants every world state must keep, and the rewards a trainer
reads from a result line (``rewards``). The built-in graders
(``graders/`` beside this package) are written against it.

May import: ``simworld.errors`` and ``_world``.
"""
