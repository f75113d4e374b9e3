"""One episode: a scenario at a seed, stepped, played by an agent, sealed, replayed and graded.

Owns the Stepper (reset, step, seal) and the sealed Episode with its Observation; the
agent loop (``play``: what an agent is, driven under a deadline); scripted steps (a
solution or a script played as an agent); the end states of a scenario's solutions and
their caches; grading an episode against them into its result line (``judge``); the
Environment users drive, which is a Stepper that can grade; and replaying an event file.

May import: ``simworld.errors``, ``_world``, ``_grading``, ``graders`` and ``_scenario``.
"""
