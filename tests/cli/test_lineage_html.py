"""``host-sim lineage --html FILE``: one self-contained page, checked in headless Chromium."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import anyio
import pytest
from selenium.webdriver.common.by import By

from host_sim import Host, ModelRequest, ScriptedModel, SqliteStore, ToolCall
from host_sim.testing import layout, render_lineage_html

from ._browser import chromium
from ._states import forest, fork_chain, turn
from ._support import ROOT, Installed, host_sim

SCREENSHOT = ROOT / "docs" / "images" / "lineage-html.png"
"""Shown by docs/cli.md; ``UPDATE_SCREENSHOTS=1`` makes the browser test write it."""


def test_a_fork_chain_100000_deep_lays_out_without_recursion() -> None:
    sessions, turns = fork_chain(100_000)
    rows = layout(sessions, turns)
    assert len(rows) == 100_001
    assert rows[-1]["depth"] == 100_000 and rows[-1]["anchor"] == 99_999 and rows[-1]["parentRow"] == 99_999
    page = render_lineage_html(sessions, turns)
    assert page.count('"kind":"fork"') == 100_000


def test_the_page_loads_nothing_from_anywhere() -> None:
    sessions, turns = forest(30)
    page = render_lineage_html(sessions, turns, title="x.sqlite")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


def test_text_in_the_data_cannot_close_the_script() -> None:
    sessions, _ = fork_chain(0)
    hostile = "</script><script>window.pwned = 1</script><!--"
    page = render_lineage_html(sessions, [turn("s-0", 0, text=hostile)], title="</script><b>x</b>")
    assert page.count("</script>") == 2  # the page's own two scripts
    assert "window.pwned = 1" in page and "<!--" not in page.split('id="lineage-data">', 1)[1]


def _make_store(path: Path) -> None:
    """A chat, the /task forks, a spawn from /delegate and a turn whose model failed."""

    def respond(request: ModelRequest) -> str | ToolCall:
        if "explode" in request.text:
            raise RuntimeError("the model is down")
        return f"echo: {request.text}"

    async def build() -> None:
        mods = [str(ROOT / "host_sim" / "examples" / "background_tasks.py"), str(ROOT / "host_sim" / "examples" / "delegate.py")]
        async with Host(mods=mods, model=ScriptedModel(respond), store=SqliteStore(path)) as host:
            chat = await host.sessions.create()
            await host.submit(chat, "Refactor the parser")
            await host.submit(chat, "/task write the tests")
            await host.submit(chat, "/delegate summarize the diff")
            await host.submit(chat, "explode, please")

    anyio.run(build)


@pytest.fixture(scope="module")
def task_page(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page the installed ``host-sim lineage --html`` writes for `_make_store`."""
    folder = tmp_path_factory.mktemp("lineage-page")
    _make_store(folder / "store.sqlite")
    result = host_sim(installed, folder, "lineage", "--store", "store.sqlite", "--html", "lineage.html")
    assert result.code == 0, result.err
    assert result.out == "wrote lineage.html (4 sessions); open it in a browser\n"
    assert "store.sqlite" not in (folder / "lineage.html").read_text(encoding="utf-8")  # the page names no path
    return folder / "lineage.html"


def test_the_page_in_chromium(task_page: Path, tmp_path: Path) -> None:
    with chromium(tmp_path / "profile", width=1100, height=400) as browser:
        browser.get(task_page.as_uri())
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
        rows = browser.find_elements(By.CSS_SELECTOR, "#tree g.row")
        kinds = [row.get_attribute("class") for row in rows]
        assert kinds == ["row root", "row fork", "row fork", "row spawn"]
        summary = browser.find_element(By.ID, "summary").text
        assert summary == "4 sessions: 1 roots, 2 forks, 1 spawns; 1 failed turns"

        # Each fork is drawn from its anchor turn: the link starts at the parent's dot.
        links = browser.find_elements(By.CSS_SELECTOR, "#tree path.link")
        assert sorted(link.get_attribute("class") or "" for link in links) == ["link fork", "link fork", "link spawn"]
        for link in browser.find_elements(By.CSS_SELECTOR, "#tree path.link.fork"):
            child = link.get_attribute("data-to")
            anchor = browser.execute_script(
                "const s = JSON.parse(document.getElementById('lineage-data').textContent).sessions"
                ".find((s) => s.id === arguments[0]); return s.anchor;",
                child,
            )
            parent = link.get_attribute("data-from")
            dot = browser.find_element(By.CSS_SELECTOR, f'#tree g.row[data-session="{parent}"] circle[data-ordinal="{anchor}"]')
            start = re.match(r"M([\d.]+),([\d.]+)", link.get_attribute("d") or "")
            assert start is not None
            assert (float(start[1]), float(start[2])) == (float(dot.get_attribute("cx") or ""), float(dot.get_attribute("cy") or ""))

        counts = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#names .name .count")]
        assert counts == ["· 3 turns", "· 2 turns", "· 3 turns", "· 1 turn"]
        failed = browser.find_elements(By.CSS_SELECTOR, "#tree circle.turn.failed")
        assert len(failed) == 1
        assert browser.find_element(By.CSS_SELECTOR, ".name .badge.failures").text == "1 failed"

        # Click the report fork: its conversation, inherited turns marked, shows on the side.
        report = browser.find_elements(By.CSS_SELECTOR, "#names .name")[2]
        report.click()
        pane = browser.find_element(By.ID, "transcript")
        assert pane.find_element(By.TAG_NAME, "h2").text.startswith("Task report · ses_")
        turns = pane.find_elements(By.CSS_SELECTOR, ".t")
        assert [t.get_attribute("data-ordinal") for t in turns] == ["0", "1", "2"]
        assert ["inherited" in (t.get_attribute("class") or "") for t in turns] == [True, True, False]
        assert "Summarize the completed work" in turns[2].text
        ids = [t.find_element(By.CSS_SELECTOR, ".head .id").text for t in turns]
        assert all(re.fullmatch(r"turn_[0-9a-f]{12}", i) for i in ids), ids  # what forget and --forward take

        # The root's conversation shows the failed turn with its error.
        browser.find_elements(By.CSS_SELECTOR, "#names .name")[0].click()
        failed_turn = pane.find_element(By.CSS_SELECTOR, ".t.failed")
        assert "FAILED:" in failed_turn.text and "the model is down" in failed_turn.text

        # Spawns say what made them.
        browser.find_elements(By.CSS_SELECTOR, "#names .name")[3].click()
        assert "spawned from ses_" in pane.find_element(By.CSS_SELECTOR, ".meta").text
        assert "command /delegate" in pane.find_element(By.CSS_SELECTOR, ".meta").text

        browser.find_elements(By.CSS_SELECTOR, "#names .name")[1].click()
        target = SCREENSHOT if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path / "lineage.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(target))
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and target.stat().st_size > 10_000


def test_a_thousand_sessions_stay_readable(tmp_path: Path) -> None:
    sessions, turns = forest(1000)
    page = tmp_path / "forest.html"
    page.write_text(render_lineage_html(sessions, turns), encoding="utf-8")
    with chromium(tmp_path / "profile") as browser:
        started = time.monotonic()
        browser.get(page.as_uri())
        loaded = time.monotonic() - started
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
        assert loaded < 10, f"the page of 1,000 sessions took {loaded:.1f}s to load"
        names = browser.find_elements(By.CSS_SELECTOR, "#names .name")
        assert len(names) == 1000
        # One row per session at a fixed pitch: nothing overlaps, text stays at least 12px.
        tops = browser.execute_script(
            "return [...document.querySelectorAll('#names .name')].map((e) => e.getBoundingClientRect().top)"
        )
        assert all(round(b - a) == 24 for a, b in zip(tops, tops[1:]))
        size = browser.execute_script("return parseFloat(getComputedStyle(document.querySelector('.name')).fontSize)")
        assert size >= 12
        # The filter finds a session among the thousand and scrolls it into view.
        box = browser.find_element(By.ID, "filter")
        box.send_keys("s-987")
        visible = browser.execute_script(
            "const e = document.querySelector('#names .name:not(.dim)'); const r = e.getBoundingClientRect();"
            "return [e.dataset.session, r.top >= 0 && r.bottom <= innerHeight]"
        )
        assert visible == ["s-987", True]
        assert len(browser.find_elements(By.CSS_SELECTOR, "#names .name.dim")) == 999

        # Failed and erased turns are marked where they are, and the erased text is gone.
        failed = sum(1 for i in range(1000) if i % 7 == 3)
        erased = sum(1 for i in range(1000) if i % 11 == 5)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#tree circle.turn.failed")) == failed
        assert len(browser.find_elements(By.CSS_SELECTOR, "#tree circle.turn.erased")) == erased
        browser.find_element(By.CSS_SELECTOR, '#names .name[data-session="s-5"]').click()
        shown = browser.find_element(By.CSS_SELECTOR, "#transcript .t.erased")
        assert "(erased)" in shown.text and "prompt" not in shown.text
