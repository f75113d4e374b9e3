"""Cutting an endpoint's credentials out of everything a model agent hands to simworld.

A model agent knows two secrets: the API key it sends as ``Authorization: Bearer KEY``, and
the credentials of its base URL (``http://user:password@host/v1``), which httpx sends instead
as ``Authorization: Basic base64(user:password)``. A hostile or careless endpoint can echo
either, in a tool call's name or arguments, in the model's text or in an error body; whatever
the agent passes on would then reach the event log, results.jsonl, every export, the report and
stderr. :class:`Redactor` replaces every form of those secrets with :data:`MARKER` in a string
or, recursively, in the lists and dicts (keys too) of a JSON value, so the agent can scrub at
the source and everything downstream is clean by construction.

The forms, for a key ``K`` and URL credentials ``U:P`` (each as written in the URL, percent
decoded, and percent encoded again): ``K``, ``P``, ``U:P`` (or ``U`` alone when there is no
password: it is then the credential), their JSON-escaped text, and base64 of ``K`` and of
``U:P``, in the standard and URL-safe alphabets, with and without padding.

A form shorter than :data:`MIN_BARE` characters is cut only where it follows ``Bearer `` or
``Basic `` and ends a token, never as bare text: local servers are commonly given dummy keys
(``EMPTY``, ``none``, ``dummy``, ``ollama``) and a trivially short password (``p``) would
otherwise be cut out of every customer name, amount and sentence an agent writes, silently
changing its actions and so its grade. Such values are not secrets worth more than that; the
header values an endpoint echoes are still cut whatever their length. Numbers, booleans and
None are left as they are.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

__all__ = ["MARKER", "MIN_BARE", "Redactor", "secret_forms"]

#: What every secret is replaced with.
MARKER = "[redacted]"
#: Shortest form cut out of plain text; a shorter one is cut only after ``Bearer `` or ``Basic ``.
#: 8 is the least length password rules allow (NIST SP 800-63B), and longer than the dummy keys
#: local servers are given.
MIN_BARE = 8


def _encodings(value: str) -> list[str]:
    """base64 of ``value`` (UTF-8) in both alphabets, with and without padding."""
    raw = value.encode()
    forms = []
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        forms += [encoded, encoded.rstrip("=")]
    return forms


def _spellings(value: str) -> list[str]:
    """``value`` and the ways it is written in a URL or a JSON text."""
    decoded = unquote(value)
    spellings = [value, decoded, quote(decoded, safe=""), quote(decoded, safe=":")]
    for text in list(spellings):
        spellings += [json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]
    return spellings


def secret_forms(key: str | None = None, url: str | None = None) -> tuple[str, ...]:
    """Every form of ``key`` and of ``url``'s credentials that :class:`Redactor` cuts (longest first).

    Args:
        key: the API key sent as ``Authorization: Bearer KEY``; None or empty for none.
        url: the endpoint, whose ``user:password@`` (if any) httpx sends as a Basic header.
    """
    plain: list[str] = []
    encoded: list[str] = []
    if key:
        plain += _spellings(key)
        encoded += _encodings(key)
    netloc = urlsplit(url).netloc if url else ""
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        user, has_password, password = userinfo.partition(":")
        if password:
            plain += _spellings(password) + _spellings(userinfo)
        elif user:  # a user and no password (http://TOKEN@host): the user is the credential
            plain += _spellings(user)
        # What httpx sends (decoded user and password), and the undecoded text in case a client sends that.
        for pair in {f"{unquote(user)}:{unquote(password)}", userinfo if has_password else f"{user}:"}:
            if pair != ":":
                encoded += _encodings(pair)
    return tuple(sorted({f for f in plain + encoded if f}, key=lambda f: (-len(f), f)))


@functools.lru_cache(maxsize=32)
def _pattern(forms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex cutting every form: long ones anywhere, short ones only as a header's value."""
    bare = [re.escape(f) for f in forms if len(f) >= MIN_BARE]
    short = [re.escape(f) for f in forms if len(f) < MIN_BARE]
    alternatives = []
    if bare:
        alternatives.append("|".join(bare))
    if short:
        # A header value is a token68 (RFC 7235): it ends where those characters end.
        alternatives.append(r"(?:(?<=[Bb]earer )|(?<=[Bb]asic ))(?:" + "|".join(short) + r")(?![\w+/=.~-])")
    return re.compile("|".join(alternatives)) if alternatives else None


class Redactor:
    """Replaces an API key and URL credentials, in every form they travel in, with :data:`MARKER`.

    Built once per agent; without a secret, calling it returns its argument untouched, at no cost.

    Args:
        key: the API key (None for none).
        url: the endpoint URL, possibly with ``user:password@``.
    """

    __slots__ = ("_pattern",)

    def __init__(self, key: str | None = None, url: str | None = None) -> None:
        self._pattern = _pattern(secret_forms(key, url))

    def __bool__(self) -> bool:
        """Whether there is any secret to cut."""
        return self._pattern is not None

    def __repr__(self) -> str:
        return f"Redactor(secrets={bool(self)})"

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by :data:`MARKER`."""
        return text if self._pattern is None else self._pattern.sub(MARKER, text)

    def __call__(self, value: Any) -> Any:
        """``value`` scrubbed: a string, or a JSON value whose strings and dict keys are scrubbed at any depth.

        Lists and tuples come back as new lists, dicts as new dicts in the same order (two keys that
        scrub to the same text keep one value); other values are returned as they are. The walk is
        iterative, so no nesting depth makes it raise.
        """
        if self._pattern is None or not isinstance(value, (str, list, tuple, dict)):
            return value
        if isinstance(value, str):
            return self._pattern.sub(MARKER, value)
        sub = self._pattern.sub
        root: list[Any] = [None]
        todo: list[tuple[Any, Any, Any]] = [(root, 0, value)]
        while todo:
            holder, slot, item = todo.pop()
            if isinstance(item, str):
                holder[slot] = sub(MARKER, item)
            elif isinstance(item, dict):
                new: dict[Any, Any] = {}
                holder[slot] = new
                for k, v in item.items():
                    k = sub(MARKER, k) if isinstance(k, str) else k
                    new[k] = None  # its place in the order now, its value when popped
                    todo.append((new, k, v))
            elif isinstance(item, (list, tuple)):
                items: list[Any] = [None] * len(item)
                holder[slot] = items
                todo.extend((items, i, v) for i, v in enumerate(item))
            else:
                holder[slot] = item
        return root[0]
