"""simworld's version: the one place it is written (the packaging reads it from here, and a run records it)."""

__version__ = "0.1.0"
