"""Keeping an API key out of every text the host keeps, however it was encoded.

A server, a tool or an MCP server may quote the key: plainly, JSON-escaped (``\\/``,
``\\u0073``), percent-encoded any number of times (``%73``, ``%2573``), as HTML character
references (``&#115;``, ``&#x73``, ``&sol;``, with or without ``;``, ``&amp;`` chains), with
invisible characters (soft hyphen, zero-width marks, bidi controls, variation selectors ...)
between its characters, in base64 (standard or URL-safe, at any offset inside the encoded
text), in any mix and split across the chunks of a stream.

`KeyScrubber.text` reads a text the way a reader could: it decodes it one layer at a time
(`_decode_once`: JSON escapes, percent runs, character references, invisible characters
dropped), at most `_MAX_ROUNDS` layers, and looks for the key (and its base64 forms) in
every layer. A text with no copy anywhere is returned unchanged; otherwise the deepest layer
that held one is returned with every copy replaced by ``<api key>`` (the layers below it
scrubbed too). Each layer is linear in the text and no longer than it, so a hostile text
costs at most `_MAX_ROUNDS` passes. `KeyFilter` does the same for a stream: it holds back
the last run of non-space characters (no encoded key spans a space) until the run ends.

Decoders as secret scanners use them (iterative URL/HTML/escape decoding with a round cap,
base64 matched rather than guessed at), written for this: no step can grow a text.
"""

from __future__ import annotations

import base64
import html.entities
import re
from collections.abc import Callable
from typing import Final

from modular_sdk._schema import JsonValue

__all__ = ["HIDDEN", "KeyFilter", "KeyScrubber", "Scrub", "scrub_data", "scrubber_of"]

HIDDEN: Final = "<api key>"
_MAX_ROUNDS: Final = 16  # layers decoded; each one at least triples a mixed encoding's size

Scrub = Callable[[str], str]
"""Text in, the same text with every secret in it replaced (the identity when there is none)."""


def _ignorable_class() -> str:
    """A character class of what a reader does not see: Unicode's Default_Ignorable_Code_Point
    ranges (soft hyphen, zero-width marks, fillers, variation selectors, tags) and the other
    format characters (category Cf: Arabic and Syriac marks, Egyptian format controls ...)."""
    ranges = [
        (0xAD, 0xAD), (0x34F, 0x34F), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F),
        (0x890, 0x891), (0x8E2, 0x8E2), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
        (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F),
        (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
        (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
    ]  # fmt: skip
    return "[" + "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"


_IGNORABLE: Final = re.compile(_ignorable_class() + "+")
_ESCAPES: Final = re.compile(
    r"\\u([0-9a-fA-F]{4})"  # JSON, JavaScript
    r"|\\x([0-9a-fA-F]{2})"  # JavaScript, Python
    r"|\\([/\"\\bfnrt])"  # JSON's short escapes
    r"|%(?:25)*([0-9a-fA-F]{2})"  # percent-encoding, also encoded again any number of times
    r"|&(?:amp;?)*#0*([0-9]{1,7});?"  # decimal references, also inside &amp; chains
    r"|&(?:amp;?)*#[xX]0*([0-9a-fA-F]{1,6});?"  # hexadecimal references
    r"|&(?:amp;?)*([A-Za-z][A-Za-z0-9]{0,31};?)"  # named references (HTML5's, or their legacy prefix)
)
_SHORT: Final = {"/": "/", '"': '"', "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NAMED: Final = html.entities.html5


def _named(name: str) -> str | None:
    """What ``&name`` stands for: the whole name (``sol;``, ``sol``), else its longest known
    prefix (``&amp`` in ``&ampx``, as browsers read the legacy names)."""
    if name in _NAMED:
        return _NAMED[name]
    if not name.endswith(";") and name + ";" in _NAMED:
        return _NAMED[name + ";"]
    for end in range(len(name) - 1, 1, -1):
        prefix = name[:end]
        if prefix in _NAMED or prefix + ";" in _NAMED:
            return (_NAMED.get(prefix) or _NAMED[prefix + ";"]) + name[end:]
    return None


def _decode_once(text: str) -> str:
    """One layer of decoding: JSON and JavaScript escapes, percent runs (bytes read as UTF-8,
    loosely), character references, invisible characters dropped. Linear in ``text`` and
    never longer than it."""
    if "\\" in text or "%" in text or "&" in text:
        out: list[str] = []
        pending = bytearray()
        last = 0
        for match in _ESCAPES.finditer(text):
            if match.start() != last:
                if pending:
                    out.append(pending.decode("utf-8", "replace"))
                    pending.clear()
                out.append(text[last : match.start()])
            last = match.end()
            unit, byte_x, short, byte, decimal, hexa, name = match.groups()
            if byte is not None:
                pending.append(int(byte, 16))
                continue
            if pending:
                out.append(pending.decode("utf-8", "replace"))
                pending.clear()
            if unit is not None:
                out.append(chr(int(unit, 16)))
            elif byte_x is not None:
                out.append(chr(int(byte_x, 16)))
            elif short is not None:
                out.append(_SHORT[short])
            elif name is not None:
                named = _named(name)
                out.append(match.group() if named is None or len(named) >= len(match.group()) else named)
            else:
                code = int(decimal) if decimal is not None else int(hexa, 16)
                out.append(chr(code) if code <= 0x10FFFF else match.group())
        if pending:
            out.append(pending.decode("utf-8", "replace"))
        out.append(text[last:])
        text = "".join(out)
        if not text.isascii():  # surrogate pairs written as two escapes become one character
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text if text.isascii() else _IGNORABLE.sub("", text)


def _hex(value: int, width: int) -> str:
    """``[0][0][7][3]`` with letters in either case: hex digits as a writer may write them."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


def _names_of() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for name, value in _NAMED.items():
        if len(value) == 1 and name.endswith(";"):
            names.setdefault(value, []).append(name[:-1])
    return names


_NAMES_OF: Final = _names_of()


def _forms(char: str) -> str:
    """A regular expression for every way ``char`` may be written in one layer of JSON, URL,
    JavaScript or HTML text: for a key whose own characters look like escapes (``\\``,
    ``%``, ``&``), written partly plainly and partly escaped in the same layer."""
    forms = [re.escape(char)]
    data = char.encode("utf-8", "surrogatepass")
    forms.append("".join(f"%(?:25)*{_hex(b, 2)}" for b in data))
    units = char.encode("utf-16-be", "surrogatepass")
    forms.append("".join(rf"\\u{_hex(int.from_bytes(units[i : i + 2], 'big'), 4)}" for i in range(0, len(units), 2)))
    if ord(char) < 0x100:
        forms.append(rf"\\x{_hex(ord(char), 2)}")
    short = {"/": "/", '"': '"', "\\": "\\", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}.get(char)
    if short is not None:
        forms.append(r"\\" + re.escape(short))
    forms.append(rf"&(?:amp;?)*#0*{ord(char)};?")
    forms.append(rf"&(?:amp;?)*#[xX]0*{_hex(ord(char), 1)};?")
    forms += [rf"&(?:amp;?)*{re.escape(name)};?" for name in _NAMES_OF.get(char, ())]
    return "(?:" + "|".join(forms) + ")"


def _base64_cores(data: bytes) -> list[str]:
    """The base64 characters (standard and URL-safe alphabets) that ``data`` alone decides,
    for each of the three offsets it may have inside the encoded bytes: any base64 text
    holding ``data`` holds one of these (the characters shared with its neighbours aside)."""
    cores: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data + bytes(3)).decode("ascii")
        first = -(-8 * offset // 6)  # the first character whose six bits are all the key's
        last = (8 * (offset + len(data))) // 6  # one past the last
        core = encoded[first:last]
        if len(core) >= 8:  # shorter would match by chance
            cores.append(core)
            safe = core.replace("+", "-").replace("/", "_")
            if safe != core:
                cores.append(safe)
    return cores


class KeyScrubber:
    """Replaces the key, in any encoding (see the module), with ``<api key>``."""

    __slots__ = ("_forms", "_key", "_pattern")

    def __init__(self, key: str) -> None:
        self._key = key
        between = _IGNORABLE.pattern.replace("+", "*")  # invisible characters may sit between any two
        self._pattern = re.compile(between.join(_forms(c) for c in key))
        seen = _IGNORABLE.sub("", key)  # the key as read with its invisible characters dropped
        forms = {key, seen} if seen else {key}
        for form in list(forms):
            forms.update(_base64_cores(form.encode("utf-8", "surrogatepass")))
        self._forms = sorted(forms, key=len, reverse=True)  # longest first: a core inside a key form goes with it

    @property
    def key(self) -> str:
        return self._key

    def _replace(self, text: str) -> str:
        text = self._pattern.sub(HIDDEN, text)
        for form in self._forms:
            if form in text:
                text = text.replace(form, HIDDEN)
        return text

    def text(self, text: str) -> str:
        """``text`` unchanged when no layer of it holds the key; else the deepest layer that
        does, every copy (in it and the layers below) replaced by ``<api key>``."""
        found: str | None = None
        view = text
        for _ in range(_MAX_ROUNDS):
            scrubbed = self._replace(view)
            if scrubbed != view:
                found = scrubbed
            decoded = _decode_once(scrubbed)
            if decoded == scrubbed:
                return text if found is None else found
            view = decoded
        scrubbed = self._replace(view)  # the last layer read; deeper ones take a text 65,536 times the key's size
        return scrubbed if scrubbed != view else text if found is None else found

    def data(self, value: JsonValue) -> JsonValue:
        """Decoded JSON data with every string (keys too) scrubbed (iteratively, any depth)."""
        return scrub_data(value, self.text)


def scrub_data(value: JsonValue, scrub: Scrub) -> JsonValue:
    """``value`` with ``scrub`` applied to every string in it, keys too (iteratively, any depth)."""
    if isinstance(value, str):
        return scrub(value)
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
                pending.append((copy, scrub(key), child))
        elif isinstance(item, list):
            copy = [None] * len(item)
            for index in range(len(item) - 1, -1, -1):
                pending.append((copy, index, item[index]))
        elif isinstance(item, str):
            copy = scrub(item)
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


def scrubber_of(model: object) -> Scrub | None:
    """The ``scrub`` of a model that holds a secret (`OpenAIModel`, a `RecordingModel` of one,
    any model with a ``scrub(text) -> str`` method), else ``None``."""
    scrub = getattr(model, "scrub", None)
    return scrub if callable(scrub) else None


_SPACES: Final = " \t\r\n"


class KeyFilter:
    """Chunks of streamed text with the key scrubbed, also when it is split across chunks.

    No encoded copy of the key holds a space, so text is let through up to its last space
    (scrubbed as a whole) and the run of characters after it waits for the next space or
    `flush`. Each character is scrubbed once: linear in the stream.
    """

    __slots__ = ("_held", "_scrub", "_spaces")

    def __init__(self, scrub: KeyScrubber | Scrub | None) -> None:
        self._scrub: Scrub | None = scrub.text if isinstance(scrub, KeyScrubber) else scrub
        key = scrub.key if isinstance(scrub, KeyScrubber) else ""
        self._spaces = "".join(c for c in _SPACES if c not in key)  # a key with a space: only the others end a run
        self._held: list[str] = []

    def feed(self, text: str) -> str:
        scrub = self._scrub
        if scrub is None:
            return text
        cut = max((text.rfind(c) for c in self._spaces), default=-1)
        if cut < 0:
            self._held.append(text)
            return ""
        whole = "".join(self._held) + text[: cut + 1]
        self._held = [text[cut + 1 :]] if cut + 1 < len(text) else []
        return scrub(whole)

    def flush(self) -> str:
        held, self._held = "".join(self._held), []
        return held if self._scrub is None else self._scrub(held)
