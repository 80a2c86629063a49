"""On the lineage page, a session with no turns yet never looks like an erased turn."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from selenium.webdriver.common.by import By

from host_sim.testing import render_lineage_html
from modular_sdk import CommandTrigger, RootLineage, SessionId, SpawnLineage

from ._browser import chromium
from ._states import T0, session, turn


def test_a_fresh_spawn_is_a_bar_and_an_erased_turn_a_hollow_dot(tmp_path: Path) -> None:
    spawn = SpawnLineage(
        parent_session_id=SessionId("s-0"),
        parent_chat_uri="chat://s-0",
        trigger=CommandTrigger(mod_id="background-tasks", command_id="delegate"),
        depth=1,
        spawned_at=T0 + timedelta(seconds=5),
    )
    sessions = [session(0, RootLineage(), "Chat"), session(1, spawn, "Fresh spawn")]
    turns = [turn("s-0", 0), turn("s-0", 1, erased=True, at=2)]
    page = tmp_path / "lineage.html"
    page.write_text(render_lineage_html(sessions, turns), encoding="utf-8")
    with chromium(tmp_path / "profile", width=900, height=300) as browser:
        browser.get(page.as_uri())
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
        fresh = browser.find_element(By.CSS_SELECTOR, '#tree g.row[data-session="s-1"]')
        assert fresh.find_elements(By.CSS_SELECTOR, "circle") == []  # no dot at all
        bar = fresh.find_element(By.CSS_SELECTOR, "line.turn.empty")
        assert bar.find_element(By.TAG_NAME, "title").get_attribute("textContent") == "no turns yet"
        erased = browser.find_element(By.CSS_SELECTOR, '#tree g.row[data-session="s-0"] circle.turn.erased')

        def style(element: object) -> dict[str, str]:
            looks: dict[str, str] = browser.execute_script(
                "const s = getComputedStyle(arguments[0]);"
                "return {fill: s.fill, stroke: s.stroke, dash: s.strokeDasharray, tag: arguments[0].tagName};",
                element,
            )
            return looks

        assert style(bar)["tag"] == "line" and style(erased)["tag"] == "circle"
        assert style(bar)["stroke"] != style(erased)["stroke"]
        assert style(bar)["dash"] == "none" and style(erased)["dash"] != "none"
        legend = browser.find_element(By.CSS_SELECTOR, ".legend").text
        assert "erased" in legend and "no turns yet" in legend
