"""The world: what an episode acts on, and nothing of who acts or who judges.

Owns exact money and dates, the simulated clock, the immutable records and the State
that holds them, snapshots and the policy store, the seed's perturbation of a snapshot
(and the dev/holdout split of seeds), request templates, the check of an agent's action,
the event record of each call, the tools, and the World that runs a tool call against a
state (check policy, apply, advance the clock, record the event). The closed
vocabularies (``vocab``) live here too, so ``simworld --help`` can list them cheaply.

May import: ``simworld.errors`` only.
"""
