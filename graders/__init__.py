"""simworld's built-in graders. Each is ``grade(episode, **args) -> Verdict``.

| grader | module | what it checks |
|---|---|---|
| ``allowed_outcomes`` | ``graders.outcome`` | the episode ended in an allowed outcome class |
| ``expected_final_state`` | ``graders.state`` | the end state matches a valid solution's, field by field |
| ``required_steps`` | ``graders.steps`` | the required calls happened, in an order the ``after`` DAG allows |
| ``forbidden_changes`` | ``graders.forbidden`` | nothing forbidden changed, at any intermediate state |
| ``unauthorised_actions`` | ``graders.authority`` | no call broke a rule that is the agent's own responsibility |
| ``money_invariants`` | ``graders.money`` | conservation, whole units, no negatives, even splits, ordered dates |
| ``requires`` | ``graders.requires`` | counters and stop reason within the scenario's bounds |
"""
