"""simworld's built-in graders. Each is ``grade(episode, **args) -> Verdict``."""
