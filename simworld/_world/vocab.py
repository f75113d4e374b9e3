"""The closed vocabularies task.json is checked against (one place, so every check names the same list)."""

from __future__ import annotations

__all__ = ["CATEGORIES", "COUNTERS", "DRIFTS", "STOP_REASONS"]

#: Scenario categories.
CATEGORIES = ("reschedule", "split", "premium-change", "fees", "cancellation", "payments", "permissioning",
              "information", "adversarial", "recovery")
#: The counters an episode keeps, which a ``requires`` block may bound.
COUNTERS = ("steps", "tool_calls", "denied_calls", "error_calls", "input_tokens", "output_tokens", "total_tokens",
            "sim_seconds")
#: Why an episode ended.
STOP_REASONS = ("terminal", "agent_stopped", "max_steps", "timeout", "agent_error", "harness_error")
#: The drifting agents (``drift:KIND``; see simworld._agents.drift).
DRIFTS = ("round-each", "float", "scale-each", "add-month", "resplit", "act365")
