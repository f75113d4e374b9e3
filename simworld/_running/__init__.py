"""Many episodes: a run over a grid of scenarios, seeds and trials, and what it writes.

Owns one job of a run (an episode played, graded, hooked and stored: ``job``), the
runner (grid, shards, resume, the run directory's identity), the executors (threads,
processes, Ray), the run directory's files (``rundir``: results, run.json, merge), the
grader check (every grader proven load-bearing by mutants), and the probe with its
hypothesis strategies.

May import: every stage before it: ``simworld.errors``, ``_world``, ``_grading``, ``graders``,
``_scenario``, ``_episode`` and ``_agents``.
"""
