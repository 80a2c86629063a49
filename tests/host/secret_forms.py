"""The API key as a hostile server or tool may write it (API.md section 24), and a reader that
decodes any text the way a person or a program could, to find it again.

`FORMS` writes the key in each encoding the host must catch; `assert_no_key` is the oracle:
written independently of `host_sim.models._secrets`, with the standard library's decoders
(``html.unescape``, ``urllib.parse.unquote``, ``base64``) applied layer after layer.
"""

from __future__ import annotations

import base64
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Callable

KEY = "sk-proj/SECRET_0123-abc~XYZ.9"


def percent(text: str, times: int = 1) -> str:
    """Every byte percent-encoded, then the result percent-encoded ``times - 1`` more times."""
    text = "".join(f"%{b:02X}" for b in text.encode())
    for _ in range(times - 1):
        text = urllib.parse.quote(text, safe="")
    return text


_NAMED = {"/": "&sol;", "_": "&lowbar;", ".": "&period;", "-": "&#45;", "~": "&#x7e;"}  # "-" and "~" have no name


def html_named(text: str) -> str:
    return "".join(_NAMED.get(c, c) for c in text)


def interleaved(marks: str) -> Callable[[str], str]:
    def write(text: str) -> str:
        return "".join(c + marks[i % len(marks)] for i, c in enumerate(text))

    return write


def b64(prefix: bytes, *, url: bool = False) -> Callable[[str], str]:
    def write(text: str) -> str:
        data = prefix + text.encode() + b" trailing"
        return (base64.urlsafe_b64encode(data) if url else base64.b64encode(data)).decode()

    return write


FORMS: dict[str, Callable[[str], str]] = {
    "plain": lambda k: k,
    "json unicode escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "html named references": html_named,
    "html decimal references without ;": lambda k: "".join(f"&#{ord(c)}" for c in k),
    "html hex references": lambda k: "".join(f"&#x{ord(c):X};" for c in k),
    "html references twice (&amp;)": lambda k: html_named(k).replace("&", "&amp;"),
    "soft hyphens interleaved": interleaved("\u00ad"),
    "zero-width marks interleaved": interleaved("\u200b\u200c\u200d\u2060\ufeff"),
    "percent-encoded once": percent,
    "percent-encoded five times": lambda k: percent(k, 5),
    "base64": b64(b""),
    "base64 at offset 1": b64(b"Bearer "),
    "base64 at offset 2": b64(b"key: "),
    "url-safe base64": b64(b"x", url=True),
    "percent of html of zero-width": lambda k: percent(html_named(interleaved("\u200b")(k)), 2),
}


def _strip_invisible(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c) != "Cf" and c != "\u034f")


def _unescape_json(text: str) -> str:
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text).replace("\\/", "/")


def decoded_views(text: str) -> list[str]:
    """``text`` and what a reader gets by decoding it again and again, every way at once."""
    views = [text]
    for _ in range(8):
        text = _strip_invisible(urllib.parse.unquote(html.unescape(_unescape_json(text))))
        if text == views[-1]:
            break
        views.append(text)
    return views


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}")


def _base64_holds(text: str, key: bytes) -> bool:
    for run in _BASE64_RUN.findall(text):
        standard = run.replace("-", "+").replace("_", "/")
        for start in range(4):
            piece = standard[start:]
            piece = piece[: len(piece) - len(piece) % 4]
            if key in base64.b64decode(piece + "", validate=False):
                return True
    return False


def holds_key(text: str, key: str = KEY) -> bool:
    """Whether any decoded view of ``text`` holds ``key``, plainly or in base64."""
    return any(key in view or _base64_holds(view, key.encode()) for view in decoded_views(text))


def assert_no_key(where: str, text: str) -> None:
    assert not holds_key(text), f"the key is in {where}: {text[:400]!r}"

