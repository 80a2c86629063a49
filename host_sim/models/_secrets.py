"""Keeping an API key out of every text a model hands the host, however it was encoded.

A server may quote the key it was sent: plainly, JSON-escaped (``\\/``, ``\\u0073`` for any
or every character), percent-encoded (``%73``, ``%2D``), as HTML character references, in
any mix, and split across the chunks of a stream. The host stores, publishes, records and
raises what the model returns, so the model scrubs every text it returns after decoding it
(`KeyScrubber.text`, `KeyScrubber.data`), and a stream through `KeyFilter`, which holds back
a chunk's end while it could be the start of the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from modular_sdk._schema import JsonValue

__all__ = ["HIDDEN", "KeyFilter", "KeyScrubber"]

HIDDEN: Final = "<api key>"
_DECODE_ROUNDS: Final = 4  # text encoded inside text (percent inside JSON escapes ...), this deep


def _hex(value: int, width: int) -> str:
    """``[0][0][7][3]`` with letters in either case: hex digits as a server may write them."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


def _forms(char: str) -> list[str]:
    """Regular expressions for every way ``char`` may be written in JSON, URL or HTML text."""
    forms = [re.escape(char)]
    data = char.encode("utf-8", "surrogatepass")
    forms.append("".join(f"%{_hex(b, 2)}" for b in data))
    units = char.encode("utf-16-be", "surrogatepass")
    forms.append("".join(rf"\\u{_hex(int.from_bytes(units[i : i + 2], 'big'), 4)}" for i in range(0, len(units), 2)))
    short = {"/": "/", '"': '"', "\\": "\\\\", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}.get(char)
    if short is not None:
        forms.append(r"\\" + re.escape(short))
    forms.append(rf"&#0*{ord(char)};")
    forms.append(rf"&#[xX]0*{_hex(ord(char), 1)};")
    return forms


class KeyScrubber:
    """Replaces the key, in any encoding (see the module), with ``<api key>``."""

    __slots__ = ("_key", "_pattern", "_starts")

    def __init__(self, key: str) -> None:
        self._key = key
        self._pattern = re.compile("".join(f"(?:{'|'.join(_forms(c))})" for c in key))
        self._starts = re.compile(f"[{re.escape(key[0])}%\\\\&]")

    def text(self, text: str) -> str:
        """``text`` with every encoded copy of the key replaced, also inside text that is
        itself encoded (a percent-encoded key inside JSON escapes): when a decoded view of
        the text still holds the key, the scrubbed decoded view is returned instead."""
        text = self._pattern.sub(HIDDEN, text)
        view = text
        for _ in range(_DECODE_ROUNDS):
            decoded = _decode_once(view)
            if decoded == view:
                break
            scrubbed = self._pattern.sub(HIDDEN, decoded)
            if scrubbed != decoded:
                return self.text(scrubbed)  # shorter each time: a copy of the key is gone
            view = decoded
        return text

    def data(self, value: JsonValue) -> JsonValue:
        """Decoded JSON data with every string (keys too) scrubbed (iteratively, any depth)."""
        if isinstance(value, str):
            return self.text(value)
        if not isinstance(value, (list, dict)):
            return value
        out_root: list[JsonValue] = []
        pending: list[tuple[list[JsonValue] | dict[str, JsonValue], object, JsonValue]] = [(out_root, 0, value)]
        while pending:
            parent, slot, item = pending.pop()
            copy: JsonValue
            if isinstance(item, dict):
                copy = {}
                for key, child in reversed(item.items()):  # popped, so inserted, in order
                    pending.append((copy, self.text(key), child))
            elif isinstance(item, list):
                copy = [None] * len(item)
                for index in range(len(item) - 1, -1, -1):
                    pending.append((copy, index, item[index]))
            elif isinstance(item, str):
                copy = self.text(item)
            else:
                copy = item
            if isinstance(parent, dict):
                assert isinstance(slot, str)
                parent[slot] = copy
            elif parent is out_root:
                out_root.append(copy)
            else:
                assert isinstance(slot, int)
                parent[slot] = copy
        return out_root[0]

    def could_start(self, text: str) -> bool:
        """Whether ``text`` is the beginning of some encoded copy of the key (or all of it)."""
        return any(True for _ in self._prefix_ends(text, 0, 0))

    def _prefix_ends(self, text: str, at: int, index: int) -> Iterator[None]:
        """Yields once for each way ``text[at:]`` runs out while matching key[index:]."""
        if at >= len(text):
            yield None
            return
        if index >= len(self._key):
            return
        for form in _literal_forms(self._key[index]):
            rest = text[at : at + len(form)]
            if form.lower().startswith(rest.lower()) if _is_escape(form) else form.startswith(rest):
                if len(rest) < len(form):
                    yield None
                    return
                yield from self._prefix_ends(text, at + len(form), index + 1)

    def tail_start(self, text: str, longest: int) -> int:
        """Where the held-back end of ``text`` begins: the first position in its last
        ``longest`` characters from which the rest could begin the key; ``len(text)`` if none."""
        for candidate in self._starts.finditer(text, max(0, len(text) - longest)):
            if self.could_start(text[candidate.start() :]):
                return candidate.start()
        return len(text)

    @property
    def longest(self) -> int:
        """The most characters an encoded copy of the key can take."""
        return sum(max(len(f) for f in _literal_forms(c)) for c in self._key)


def _is_escape(form: str) -> bool:
    return form[:1] in ("%", "\\", "&")


def _literal_forms(char: str) -> list[str]:
    """The literal spellings behind `_forms` (hex in lower case; compared case-insensitively)."""
    forms = [char]
    forms.append("".join(f"%{b:02x}" for b in char.encode("utf-8", "surrogatepass")))
    units = char.encode("utf-16-be", "surrogatepass")
    forms.append("".join(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)))
    short = {"/": "/", '"': '"', "\\": "\\\\", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}.get(char)
    if short is not None:
        forms.append("\\" + short)
    forms.append(f"&#{ord(char)};")
    forms.append(f"&#x{ord(char):x};")
    return forms


_ESCAPES: Final = re.compile(r"\\u([0-9a-fA-F]{4})|\\([/\"\\bfnrt])|%([0-9a-fA-F]{2})|&#([0-9]{1,7});|&#[xX]([0-9a-fA-F]{1,6});")
_SHORT: Final = {"/": "/", '"': '"', "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _decode_once(text: str) -> str:
    """One round of decoding JSON escapes, percent-encoding and character references (bytes
    of a percent-encoded run read as UTF-8, loosely). Linear in ``text``."""
    if "\\" not in text and "%" not in text and "&#" not in text:
        return text
    out: list[str] = []
    pending: bytearray = bytearray()
    last = 0

    def flush() -> None:
        if pending:
            out.append(pending.decode("utf-8", "replace"))
            pending.clear()

    for match in _ESCAPES.finditer(text):
        if match.start() != last:
            flush()
            out.append(text[last : match.start()])
        last = match.end()
        unit, short, byte, decimal, hexa = match.groups()
        if byte is not None:
            pending.append(int(byte, 16))
            continue
        flush()
        if unit is not None:
            out.append(chr(int(unit, 16)))
        elif short is not None:
            out.append(_SHORT[short])
        else:
            code = int(decimal) if decimal is not None else int(hexa, 16)
            out.append(chr(code) if code <= 0x10FFFF else match.group())
    flush()
    out.append(text[last:])
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class KeyFilter:
    """Chunks of streamed text with the key scrubbed, also when it is split across chunks.

    A chunk whose end could begin an encoded copy of the key keeps that end back until the
    next chunk (or `flush`) says whether the key follows.
    """

    __slots__ = ("_held", "_longest", "_scrubber")

    def __init__(self, scrubber: KeyScrubber | None) -> None:
        self._scrubber = scrubber
        self._held = ""
        self._longest = 0 if scrubber is None else scrubber.longest

    def feed(self, text: str) -> str:
        scrubber = self._scrubber
        if scrubber is None:
            return text
        text = scrubber.text(self._held + text)
        cut = scrubber.tail_start(text, self._longest)
        self._held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held if self._scrubber is None else self._scrubber.text(held)
