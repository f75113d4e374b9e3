"""Task families: many distinct, verified scenarios from one description.

A family (a directory under ``families/``) declares intents and their parameter ranges,
the fixtures it draws targets from, the world space, and phrasings of the request.
:func:`generate` draws instances, computes each one's ground truth with the solver
(:mod:`simworld._families._solve`: the world's own tools and the authority grader's rule
code, never a restatement of the rules) and writes ordinary scenario directories, so
``simworld run``, ``check``, ``export`` and ``report`` take them unchanged.

May import: every stage before it (``_running`` for the check each instance passes before it
is written); only ``_edges`` imports it.
"""

from simworld._families._generate import Generated, Instance, draw, generate, in_holdout, task_json
from simworld._families._intents import INTENTS, Intent
from simworld._families._manifest import STYLES, Family, families_root, load_families, load_family
from simworld._families._solve import Solved, Unclear, classify, solve

__all__ = ["INTENTS", "STYLES", "Family", "Generated", "Instance", "Intent", "Solved", "Unclear", "classify", "draw",
           "families_root", "generate", "in_holdout", "load_families", "load_family", "solve", "task_json"]
