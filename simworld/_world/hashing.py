"""BLAKE2b, the one hash simworld uses (state fingerprints, event and end-state files, holdout seeds, perturbation
draws), without loading OpenSSL.

``hashlib.blake2b`` is never OpenSSL's: CPython always serves it from its own ``_blake2`` module, built from the
BLAKE2 sources it bundles. But ``import hashlib`` also loads OpenSSL's ``_hashlib`` for the algorithms simworld
does not use, about 3 ms at every start. Importing the same type from ``_blake2`` skips that; an interpreter that
lacks the private module (another implementation, or a build without it) gets ``hashlib``'s, whose digests are
the same bytes.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # not CPython, or built without its bundled BLAKE2
    from hashlib import blake2b

__all__ = ["blake2b"]
