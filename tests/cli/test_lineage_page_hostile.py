"""The lineage page is safe with any text: labels, tags, prompts, replies, errors and the
title are data, shown as themselves in a real browser, never markup and never script."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selenium import webdriver

from host_sim.stores import SessionRecord, TurnRecord
from host_sim.testing import render_lineage_html
from modular_sdk import AiPromptMessage, AiSessionDisplayMetadata, ForkLineage, RootLineage, SessionId

from ._browser import chromium
from ._states import RUNNER, T0, session, turn

# What broke pages like this one: comment and script openers and closers, the template's
# own placeholders, JavaScript's line terminators, markup with handlers that would set the
# flag the browser test checks, entities, quotes and backslashes.
HOSTILE = [
    "<!--", "-->", "</script>", "</SCRIPT >", "<script>window.__pwned = 1</script>", "<![CDATA[", "]]>",
    "@DATA@", "@TITLE@", "@HEADING@", "@SCRIPT@", "@STYLE@", "\u2028", "\u2029",
    "<img src=x onerror=\"window.__pwned = 1\">", "<svg onload=window.__pwned=1>", "<b>bold</b>",
    "&lt;", "&amp;", "&#x3c;", '"', "'", "\\", "\\u2028", "${x}", "`", "\x00", "\r\n", "\t", "\ufeff",
]  # fmt: skip
SURROGATES = ["\ud800", "\udfff", "\ud83d\ude00"]  # lone, lone, and a pair as two code points


def hostile_text(*, surrogates: bool) -> st.SearchStrategy[str]:
    fragments = st.sampled_from(HOSTILE + (SURROGATES if surrogates else [])) | st.text(max_size=8)
    return st.lists(fragments, max_size=6).map("".join)


def storable(text: str) -> str:
    """Messages and labels refuse lone surrogates when made: what such records can hold."""
    return re.sub("[\ud800-\udfff]", "?", text)


@attrs.frozen
class Story:
    """A root and a fork of it (or a root alone), every text hostile."""

    title: str
    sessions: list[SessionRecord]
    turns: list[TurnRecord]


@st.composite
def stories(draw: st.DrawFn) -> Story:
    sessions: list[SessionRecord] = []
    turns: list[TurnRecord] = []
    for index in range(draw(st.integers(1, 3))):
        lineage: RootLineage | ForkLineage = RootLineage()
        if index > 0:
            lineage = ForkLineage(
                parent_session_id=SessionId("s-0"), parent_turn_ordinal=0, parent_runner_id=RUNNER, depth=1, forked_at=T0
            )
        label = draw(st.none() | hostile_text(surrogates=False).map(storable).filter(str.strip))
        tags = draw(st.dictionaries(hostile_text(surrogates=True), hostile_text(surrogates=True), max_size=3))
        record = attrs.evolve(session(index, lineage), tags=tags)
        if label is not None:
            record = attrs.evolve(record, metadata=AiSessionDisplayMetadata(label=label))
        sessions.append(record)
        ordinal = 0 if index == 0 else 1
        failed = draw(st.booleans())
        base = turn(f"s-{index}", ordinal, failed=failed)
        turns.append(
            attrs.evolve(
                base,
                message=AiPromptMessage(text=storable(draw(hostile_text(surrogates=False)))),
                reply=None if failed else draw(hostile_text(surrogates=True)),
                error=draw(hostile_text(surrogates=True)) if failed else None,
            )
        )
    return Story(title=draw(hostile_text(surrogates=True)), sessions=sessions, turns=turns)


def code_units(text: str | None) -> list[int] | None:
    """``text`` as JavaScript holds it: UTF-16 code units (a lone surrogate stays one)."""
    if text is None:
        return None
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def expected(story: Story) -> dict[str, object]:
    def tags(record: SessionRecord) -> list[list[list[int] | None]]:
        return sorted(([code_units(k), code_units(v)] for k, v in record.tags.items()), key=json.dumps)

    return {
        "title": code_units(story.title),
        "sessions": [
            {
                "id": code_units(record.id),
                "label": code_units(None if record.metadata is None else record.metadata.label),
                "tags": tags(record),
                "turns": [
                    [code_units(t.message.text), code_units(t.reply), code_units(t.error)]  # type: ignore[union-attr]
                    for t in story.turns
                    if t.session_id == record.id
                ],
            }
            for record in story.sessions
        ],
    }


# Run in the page: the data as it parsed, and the texts as they show, as UTF-16 code units.
READ_BACK = """
const codes = (s) => s === null ? null : Array.from({ length: s.length }, (_, i) => s.charCodeAt(i));
const data = JSON.parse(document.getElementById("lineage-data").textContent);
const shown = [];
for (const s of data.sessions) {
  document.querySelector(`#names .name[data-session="${s.id}"]`).click();
  const pane = document.getElementById("transcript");
  shown.push({
    label: codes(document.querySelector(`#names .name[data-session="${s.id}"] .label`).textContent),
    tags: [...pane.querySelectorAll(".tag")].map((e) => codes(e.textContent)),
    prompt: [...pane.querySelectorAll(".t:not(.inherited) > div:nth-child(2)")].map((e) => codes(e.textContent)),
    after: [...pane.querySelectorAll(".t:not(.inherited) > div:nth-child(3)")].map((e) => codes(e.textContent)),
  });
}
return {
  data: {
    title: codes(data.title),
    sessions: data.sessions.map((s) => ({
      id: codes(s.id),
      label: codes(s.label),
      tags: Object.entries(s.tags).map(([k, v]) => [codes(k), codes(v)]),
      turns: s.turns.map((t) => [codes(t.text), codes(t.reply), codes(t.error)]),
    })),
  },
  shown: shown,
  heading: codes(document.getElementById("heading").textContent),
  ready: document.body.dataset.ready,
  pwned: typeof window.__pwned,
  rows: document.querySelectorAll("#names .name").length,
  scripts: document.scripts.length,
  injected: document.querySelectorAll("img, b, #names svg, [onerror], [onload]").length,
};
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    with chromium(tmp_path_factory.mktemp("profile")) as driver:
        yield driver


def _sorted_tags(tags: Mapping[str, str]) -> list[list[int] | None]:
    return sorted((code_units(f"{k}={v}") for k, v in tags.items()), key=json.dumps)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(story=stories())
def test_any_text_in_any_field_shows_as_itself_in_chromium_and_runs_nothing(
    story: Story, browser: webdriver.Chrome, tmp_path_factory: pytest.TempPathFactory
) -> None:
    page = render_lineage_html(story.sessions, story.turns, title=story.title)
    path = tmp_path_factory.mktemp("page") / "lineage.html"
    path.write_bytes(page.encode("utf-8"))  # no lone surrogate reaches the file: it is all \u escapes
    browser.get(path.as_uri())
    seen = browser.execute_script(READ_BACK)
    for shown_session in seen["data"]["sessions"]:  # a JS object's keys come in its own order
        shown_session["tags"].sort(key=json.dumps)
    assert seen["ready"] == "true" and seen["pwned"] == "undefined"  # the page's script ran, nothing else did
    assert seen["scripts"] == 2 and seen["injected"] == 0  # no markup came out of the data
    assert seen["rows"] == len(story.sessions)
    assert seen["data"] == expected(story)  # the data round-trips exactly, code unit for code unit
    assert seen["heading"] == code_units(story.title)
    for record, shown in zip(story.sessions, seen["shown"]):
        label = None if record.metadata is None else record.metadata.label
        assert shown["label"] == code_units("\u201c" + label + "\u201d " if label else "")
        assert sorted(shown["tags"], key=json.dumps) == _sorted_tags(record.tags)
        own = [t for t in story.turns if t.session_id == record.id]
        assert shown["prompt"] == [code_units(t.message.text) for t in own]  # type: ignore[union-attr]
        assert shown["after"] == [
            code_units("FAILED: " + (t.error or "") if t.status == "failed" else "model: " + (t.reply or "")) for t in own
        ]


def embedded_data(page: str) -> object:
    """The JSON block as an HTML parser cuts it: up to the first ``</script`` in any case."""
    start = page.index('<script type="application/json" id="lineage-data">') + len('<script type="application/json" id="lineage-data">')
    end = page.lower().index("</script", start)
    return json.loads(page[start:end])


@settings(max_examples=300, deadline=None)
@given(story=stories())
def test_no_text_can_end_the_data_block_or_be_read_as_a_placeholder(story: Story) -> None:
    page = render_lineage_html(story.sessions, story.turns, title=story.title)
    block = page.split('id="lineage-data">', 1)[1].split("</script>", 1)[0]
    assert not re.search(r"[<>&\u2028\u2029\ud800-\udfff]", block)  # nothing the HTML parser or JS reads specially
    data = embedded_data(page)  # JSON joins an escaped surrogate pair, as JavaScript's strings do: compare code units
    assert isinstance(data, dict) and code_units(data["title"]) == code_units(story.title)
    assert [code_units(s["label"]) for s in data["sessions"]] == [
        code_units(None if r.metadata is None else r.metadata.label) for r in story.sessions
    ]
    assert [sorted((code_units(k), code_units(v)) for k, v in s["tags"].items()) for s in data["sessions"]] == [
        sorted((code_units(k), code_units(v)) for k, v in r.tags.items()) for r in story.sessions
    ]
    assert page.count('id="lineage-data"') == 1 and page.count("<script") == 2
    page.encode("utf-8")  # writable as UTF-8, whatever the title and replies hold


def test_a_placeholder_in_the_title_is_shown_not_filled_in() -> None:
    sessions = [attrs.evolve(session(0, RootLineage()), metadata=AiSessionDisplayMetadata(label="<img src=x onerror=alert(1)>"))]
    page = render_lineage_html(sessions, [turn("s-0", 0)], title="store @DATA@ @SCRIPT@ @TITLE@")
    assert "<title>store @DATA@ @SCRIPT@ @TITLE@</title>" in page
    assert "<img" not in page and "\\u003cimg src=x onerror=alert(1)\\u003e" in page


def test_a_malformed_fragment_in_the_address_does_not_stop_the_page(browser: webdriver.Chrome, tmp_path: Path) -> None:
    path = tmp_path / "lineage.html"
    path.write_text(render_lineage_html([session(0, RootLineage())], [turn("s-0", 0)]), encoding="utf-8")
    browser.get(path.as_uri() + "#%E0%A4%A")
    assert browser.execute_script("return document.body.dataset.ready") == "true"
    browser.get("about:blank")  # a new load, not a jump within the page
    browser.get(path.as_uri() + "#s-0")  # a well-formed one still opens that session
    assert browser.execute_script("return document.getElementById('transcript').dataset.session") == "s-0"
