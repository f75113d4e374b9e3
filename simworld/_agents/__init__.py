"""Every agent kind ``--agent`` can name, and how a spec builds one.

Owns the noop, random, reference and scripted agents and ``python:`` agents
(``kinds``), the drifting reference agents the probe must catch (``drift``), agent
processes speaking JSON lines (``process``), and model agents over an OpenAI-compatible
endpoint (``llm``, with the chat messages they share in ``chat`` and the scrubbing of the
endpoint's credentials out of all they hand on in ``redact``).

May import: ``simworld.errors``, ``_world``, ``_grading``, ``graders``, ``_scenario`` and ``_episode``.
"""
