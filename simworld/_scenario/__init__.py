"""A scenario: one task directory loaded and checked, before anything runs.

Owns the ``task.json`` schema check, the expectations (which graders, with which
arguments and weights, which outcomes are allowed, which hooks run after an episode),
the scenario's solutions and scripts as steps, and loading a suite. A malformed
scenario fails here, at load, naming the file and the field.

May import: ``simworld.errors``, ``_world``, ``_grading`` and ``graders``.
"""
