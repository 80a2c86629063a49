"""Tags a model writes in its reply: ``<NAME type="ID">body</NAME>``, found in linear time.

A reply is input from outside: whatever it holds (thousands of unclosed openings, tags
inside tags, a megabyte of whitespace), `scan_tags` reads it once, left to right, and keeps
at most ``limit`` tags; the rest are only counted. Mod actions (``<mod-action>``) use it,
and any other tag kind of the same shape can (``<mod-widget>``).

Why not one regular expression: ``<tag ...>(.*?)</tag>`` rescans the rest of the reply from
every opening that is never closed, which is quadratic (8,000 unclosed openings took 10 s).
Here every search starts where the previous one ended, or reuses its answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Final, Generic, TypeVar

import attrs

from modular_sdk import SerializationError
from modular_sdk._json import parse_json_text
from modular_sdk._rules import show

__all__ = ["MAX_TAGS", "ReplyTag", "ScannedReply", "TagObject", "read_tag_objects", "scan_tags"]

_D = TypeVar("_D")

MAX_TAGS: Final = 100
"""How many tags of one kind a reply may hold; the rest are reported, never acted on."""


@attrs.frozen(kw_only=True)
class ReplyTag:
    """One well-formed tag: its ``type`` attribute and its body (stripped). Immutable."""

    type: str
    body: str


@attrs.frozen(kw_only=True)
class ScannedReply:
    """What `scan_tags` found in a reply. Immutable.

    ``tags``: the first ``limit`` well-formed tags, in reply order; ``beyond_limit``: how many
    well-formed tags came after those; ``malformed``: openings that start no well-formed tag
    (no ``type="..."``, never closed, or another opening before the closing tag).
    """

    name: str
    limit: int
    tags: tuple[ReplyTag, ...]
    beyond_limit: int
    malformed: int

    def problems(self) -> list[str]:
        """One line for the malformed tags and one for those over the limit (each says "ignored")."""
        lines: list[str] = []
        if self.malformed:
            lines.append(
                f"{self.malformed} <{self.name}> tag{'s are' if self.malformed != 1 else ' is'} malformed (write "
                f'<{self.name} type="...">{{json}}</{self.name}>); ignored'
            )
        if self.beyond_limit:
            lines.append(
                f"{self.beyond_limit} more <{self.name}> tag{'s' if self.beyond_limit != 1 else ''} after the first "
                f"{self.limit} of this reply {'were' if self.beyond_limit != 1 else 'was'} ignored: a reply holds at "
                f"most {self.limit}; ask the model for fewer at a time"
            )
        return lines


_PATTERNS: dict[str, tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]] = {}


def _patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(opening, header, closing) for tag ``name``. No part of the header or the closing can
    match a ``<`` past its first character, so a match never runs into the next tag."""
    found = _PATTERNS.get(name)
    if found is None:
        tag = re.escape(name)
        found = (
            re.compile(rf"<{tag}(?![\w-])"),
            re.compile(rf"<{tag}\s+type\s*=\s*\"([^\"<>]*)\"\s*>"),
            re.compile(rf"</{tag}\s*>"),
        )
        _PATTERNS[name] = found
    return found


def scan_tags(reply: str, name: str, *, limit: int = MAX_TAGS) -> ScannedReply:
    """The ``<name type="...">body</name>`` tags of ``reply``, in time linear in its length.

    A tag ends at the first closing tag after its opening; an opening met before that
    closing tag makes the earlier opening malformed (tags do not nest). Never raises.
    """
    opening, header, closing = _patterns(name)
    starts = [m.start() for m in opening.finditer(reply)]
    tags: list[ReplyTag] = []
    beyond = malformed = 0
    close: re.Match[str] | None = None  # the first closing tag at or after the last search
    searched_to = -1  # where that search started; None found there means none after it
    for index, start in enumerate(starts):
        head = header.match(reply, start)
        if head is None:
            malformed += 1
            continue
        body_start = head.end()
        if close is None and searched_to >= 0:  # no closing tag after an earlier point: none here
            malformed += len(starts) - index
            break
        if close is None or close.start() < body_start:
            close = closing.search(reply, body_start)
            searched_to = body_start
            if close is None:
                malformed += len(starts) - index
                break
        following = starts[index + 1] if index + 1 < len(starts) else len(reply)
        if following < close.start():  # another opening before this one's closing tag
            malformed += 1
            continue
        if len(tags) < limit:
            tags.append(ReplyTag(type=head.group(1), body=reply[body_start : close.start()].strip()))
        else:
            beyond += 1
    return ScannedReply(name=name, limit=limit, tags=tuple(tags), beyond_limit=beyond, malformed=malformed)


@attrs.frozen(kw_only=True)
class TagObject(Generic[_D]):
    """A well-formed tag of a reply that names a declared ``entry`` and holds a JSON object
    (``data``, not yet structured); ``index`` is its place among the well-formed tags."""

    index: int
    type: str
    entry: _D
    data: dict[str, object]


def read_tag_objects(
    reply: str,
    name: str,
    declared: Mapping[str, _D],
    take: Callable[[TagObject[_D]], str | None],
    *,
    what: str,
    listed: str,
    none: str,
    noun: str,
) -> list[str]:
    """Hand ``take`` each ``<name>`` tag of ``reply`` that names one of ``declared`` and holds
    a JSON object, in reply order, and return what was wrong with every tag: each other tag,
    and each ``take`` refused (the line it returned), then the malformed and those over the
    limit (each line says the tag was ignored). The steps `<mod-action>` and `<mod-widget>`
    share before each structures its ``data``. ``what`` names the declared kind in messages
    ("declared action") and ``listed`` the list of them ("declared"; ``none`` when empty),
    ``noun`` what a tag holds ("payload", "data").

    Linear in the reply, at most `MAX_TAGS` tags, never raises: a number JSON readers cannot
    all hold (`modular_sdk._json.parse_json_text`) is bad JSON like any other.
    """
    errors: list[str] = []
    scanned = scan_tags(reply, name, limit=MAX_TAGS)
    for index, tag in enumerate(scanned.tags):
        where = f"<{name} type={show(tag.type)}>"
        entry = declared.get(tag.type)
        if entry is None:
            known = ", ".join(repr(k) for k in declared) or none
            errors.append(f"{where} names no {what} ({listed}: {known}); it was ignored")
            continue
        try:
            data = parse_json_text(tag.body)
        except (json.JSONDecodeError, RecursionError, SerializationError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) if isinstance(exc, SerializationError) else "nested too deeply"
            errors.append(f"{where} holds no JSON {noun} ({why}): {show(tag.body)}; it was ignored")
            continue
        if not isinstance(data, dict):
            errors.append(f"{where} holds {show(tag.body)}; its {noun} is a JSON object; it was ignored")
            continue
        refused = take(TagObject(index=index, type=tag.type, entry=entry, data=data))
        if refused is not None:
            errors.append(refused)
    return errors + scanned.problems()
