"""``host-sim studio``: a mod author drives the host from a browser (API.md section 22).

The studio runs as a real subprocess on a real SQLite store; Debian's Chromium, driven by
Selenium, finds every element by its role and accessible name, as a screen reader would,
and a person with a keyboard alone can send, pick a completion and fork.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from host_sim import Host, SqliteStore
from modular_sdk import AiPromptMessage, AiSessionDisplayMetadata

from ._browser import chromium
from ._support import Installed, host_sim, no_traceback

FIXTURES = Path(__file__).parent / "fixtures"
STATIC = Path(__file__).parents[2] / "host_sim" / "studio" / "static"
IMAGES = Path(__file__).parents[2] / "docs" / "images"
"""docs/studio.md shows ``studio-*.png``; ``UPDATE_SCREENSHOTS=1`` makes the browser tests write them."""
MOD = str(FIXTURES / "studio_mod.py")
T = TypeVar("T")
HOSTILE_LABEL = '<img src=x onerror="window.__pwned = 1"> label </script><script>window.__pwned = 1</script>'


async def seed(store: Path) -> None:
    """A root with a hostile label and prompt, and a fork of it, already in the store."""
    async with Host(store=SqliteStore(store)) as host:
        root = await host.sessions.create(metadata=AiSessionDisplayMetadata(label=HOSTILE_LABEL))
        turn = await root.send(AiPromptMessage(text=f"seeded {HOSTILE_LABEL}"))
        await turn.fork(metadata=AiSessionDisplayMetadata(label=f"fork of {HOSTILE_LABEL}"))
        fact = await host.memory.record(root, f"Alice lives in {HOSTILE_LABEL}", kind="fact", cites=(turn.id,))
        await host.memory.record(root, "a summary of what Alice said", kind="summary", derived_from=(fact.id,))
        long = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="long"))
        for index in range(205):
            await long.send(AiPromptMessage(text=f"long {index}"))

# The elements each role can be (what the page uses); the name is the computed accessible name.
_ROLE_SELECTORS = {
    "button": "button",
    "textbox": "input[type=text], textarea, input:not([type])",
    "option": "[role=option]",
    "listbox": "[role=listbox]",
    "region": "[role=region], section[aria-label]",
    "article": "article",
    "combobox": "select",
    "heading": "h2, h3",
    "alert": "[role=alert]",
}


class Studio:
    def __init__(self, process: subprocess.Popen[str], url: str, store: Path) -> None:
        self.process = process
        self.url = url
        self.store = store
        parts = urllib.parse.urlsplit(url)
        self.netloc = parts.netloc
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]

    def request(self, method: str, path: str, headers: dict[str, str] | None = None, body: object = None) -> tuple[int, object]:
        host, port = self.netloc.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        payload = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=payload, headers=headers or {})
        response = connection.getresponse()
        raw = response.read()
        connection.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")

    def api(self, method: str, path: str, body: object = None) -> object:
        sep = "&" if "?" in path else "?"
        status, data = self.request(method, f"{path}{sep}token={self.token}", body=body)
        assert status == 200, data
        return data


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    folder = tmp_path_factory.mktemp("studio")
    store = folder / "studio.sqlite"
    anyio.run(seed, store)
    log = folder / "studio.err"
    with log.open("w") as err, subprocess.Popen(
        [sys.executable, "-m", "host_sim", "studio", MOD, "--store", str(store)],
        stdout=subprocess.PIPE, stderr=err, text=True, cwd=folder,
    ) as process:  # fmt: skip
        try:
            assert process.stdout is not None
            first = process.stdout.readline().strip()
            assert first.startswith("http://127.0.0.1:") and "?token=" in first, (first, log.read_text())
            yield Studio(process, first, store)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


def wait_for(what: Callable[[], T | None], *, timeout: float = 20.0, why: str = "") -> T:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = what()
        except Exception:  # noqa: BLE001 - a stale element while the page redraws: look again
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {why or what}")
        time.sleep(0.1)


def by_role(driver: webdriver.Chrome | WebElement, role: str, name: str | None = None, *, exact: bool = True) -> list[WebElement]:
    found = []
    for element in driver.find_elements(By.CSS_SELECTOR, _ROLE_SELECTORS[role]):
        if not element.is_displayed() or element.aria_role != role:
            continue
        label = element.accessible_name
        if name is None or (label == name if exact else name in label):
            found.append(element)
    return found


def one(driver: webdriver.Chrome | WebElement, role: str, name: str | None = None, *, exact: bool = True) -> WebElement:
    def first() -> WebElement | None:
        found = by_role(driver, role, name, exact=exact)
        return found[0] if found else None

    return wait_for(first, why=f"{role} {name!r}")


def settled_turn(browser: webdriver.Chrome, done: Callable[[str], bool], why: str) -> WebElement:
    """The first turn's article once ``done(its text)``; found afresh each look (the list is redrawn as the host reports)."""

    def look() -> WebElement | None:
        found = by_role(browser, "article", "Turn 0")
        return found[0] if found and done(found[0].text) else None

    return wait_for(look, why=why)


def open_studio(browser: webdriver.Chrome, studio: Studio) -> None:
    browser.get(studio.url)
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready === 'true'"), why="the page to load")


def not_pwned(browser: webdriver.Chrome) -> None:
    assert browser.execute_script("return window.__pwned === undefined"), "hostile text ran as script"
    assert browser.find_elements(By.CSS_SELECTOR, "main img, aside img, nav img, main script") == []


def press(browser: webdriver.Chrome, *keys: str) -> None:
    browser.switch_to.active_element.send_keys(*keys)


def focused_name(browser: webdriver.Chrome) -> str:
    return str(browser.switch_to.active_element.accessible_name)


def tab_to(browser: webdriver.Chrome, name: str, *, back: bool = False) -> None:
    for _ in range(80):
        if focused_name(browser) == name:
            return
        press(browser, Keys.SHIFT, Keys.TAB) if back else press(browser, Keys.TAB)
    raise AssertionError(f"Tab never reached {name!r}")


def screenshot(browser: webdriver.Chrome, name: str, tmp_path: Path) -> None:
    target = IMAGES / f"studio-{name}.png" if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path / f"{name}.png"
    assert browser.save_screenshot(str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and target.stat().st_size > 10_000


def test_the_page_loads_nothing_from_anywhere_and_never_parses_text_as_markup() -> None:
    for name in ("index.html", "app.js", "style.css"):
        text = (STATIC / name).read_text(encoding="utf-8")
        assert re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text) == [], name
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in text, (name, sink)


def test_a_request_without_the_token_is_refused(studio: Studio) -> None:
    for path in ("/", "/app.js", "/api/sessions", "/api/events", "/agui"):
        status, data = studio.request("GET", path)
        assert status == 403, (path, data)
    status, _ = studio.request("GET", "/?token=not-the-token")
    assert status == 403
    status, _ = studio.request("POST", "/api/sessions", body={})
    assert status == 403
    status, _ = studio.request("GET", f"/?token={studio.token}")
    assert status == 200


def test_a_foreign_host_or_origin_is_refused_even_with_the_token(studio: Studio) -> None:
    status, data = studio.request("GET", f"/api/sessions?token={studio.token}", headers={"Host": "evil.example"})
    assert status == 403 and "Host" in str(data)
    status, data = studio.request(
        "POST", f"/api/sessions?token={studio.token}", headers={"Origin": "http://evil.example"}, body={}
    )
    assert status == 403 and "Origin" in str(data)
    status, _ = studio.request("GET", f"/api/sessions?token={studio.token}", headers={"Origin": f"http://{studio.netloc}"})
    assert status == 200


def test_keyboard_alone_picks_a_completion_sends_and_forks(studio: Studio, browser: webdriver.Chrome, tmp_path: Path) -> None:
    open_studio(browser, studio)
    tab_to(browser, "Message")
    assert browser.switch_to.active_element.aria_role == "textbox"
    press(browser, "/expl")
    listbox = one(browser, "listbox", "Completions")
    option = one(listbox, "option", "/explain TOPIC", exact=False)
    assert "<img" in option.text  # the mod's hostile description, shown as text
    press(browser, Keys.ARROW_DOWN, Keys.ENTER)
    assert browser.switch_to.active_element.get_attribute("value") == "/explain "
    press(browser, "p")
    one(browser, "option", "/explain planner")
    press(browser, Keys.ARROW_DOWN, Keys.ARROW_DOWN, Keys.ENTER)
    assert browser.switch_to.active_element.get_attribute("value") == "/explain planner"
    press(browser, Keys.ENTER)  # sends the command through AG-UI
    live = one(browser, "region", "Last run")
    wait_for(lambda: "explaining planner" in live.text, why="the command's output")
    assert "<script>" in live.text
    not_pwned(browser)

    tab_to(browser, "Message")
    press(browser, "hello <b>not bold</b>", Keys.ENTER)
    turn = settled_turn(browser, lambda text: "completed" in text and "Fork here" in text, "the completed turn")
    shown = turn.text
    assert "hello <b>not bold</b>" in shown
    assert browser.find_elements(By.CSS_SELECTOR, "#turns b") == []
    turn_id = shown.split("turn ", 1)[1].split(" ", 1)[0]
    before = {s["id"] for s in studio.api("GET", "/api/sessions")["sessions"]}  # type: ignore[index]

    tab_to(browser, "Fork here", back=True)
    press(browser, Keys.ENTER)
    sessions = wait_for(
        lambda: [s for s in studio.api("GET", "/api/sessions")["sessions"] if s["id"] not in before],  # type: ignore[index]
        why="the fork in the store",
    )
    (fork,) = sessions
    assert fork["kind"] == "fork" and fork["anchor"] == 0
    data = studio.api("GET", f"/api/sessions/{fork['id']}/turns")
    assert [t["id"] for t in data["turns"]] == [turn_id]  # type: ignore[index]
    wait_for(lambda: fork["id"] in browser.find_element(By.ID, "session-title").text, why="the fork to open")
    tree = one(browser, "button", f"{fork['id']} (fork at turn 0)")
    assert tree.get_attribute("aria-current") == "true"
    not_pwned(browser)
    screenshot(browser, "chat", tmp_path)


def _new_turn(studio: Studio, browser: webdriver.Chrome, text: str) -> WebElement:
    open_studio(browser, studio)
    one(browser, "button", "New session").click()
    box = one(browser, "textbox", "Message")
    wait_for(lambda: browser.switch_to.active_element == box, why="the message box focused")
    box.send_keys(text, Keys.ENTER)
    turn = settled_turn(browser, lambda text: "completed" in text and "Forget…" in text, "the completed turn")
    return turn


def test_forget_shows_the_plan_and_erases_only_on_the_second_click(studio: Studio, browser: webdriver.Chrome, tmp_path: Path) -> None:
    _new_turn(studio, browser, "a secret to forget")
    one(one(browser, "article", "Turn 0"), "button", "Forget…").click()
    plan = one(browser, "region", "Erasure plan")
    assert "Forgetting erases these turns" in plan.text
    session_id = browser.find_element(By.ID, "session-title").text.removeprefix("Session ")
    data = studio.api("GET", f"/api/sessions/{session_id}/turns")
    assert data["turns"][0]["erased"] is False  # type: ignore[index]
    assert data["turns"][0]["text"] == "a secret to forget"  # type: ignore[index]
    screenshot(browser, "forget", tmp_path)
    one(plan, "button", "Erase").click()
    wait_for(lambda: "(forgotten)" in one(browser, "article", "Turn 0").text, why="the turn shown forgotten")
    data = studio.api("GET", f"/api/sessions/{session_id}/turns")
    assert data["turns"][0]["erased"] is True  # type: ignore[index]
    assert "a secret to forget" not in json.dumps(data)


def test_retract_asks_for_a_reason(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, "the figures are from 2019")
    one(one(browser, "article", "Turn 0"), "button", "Retract…").click()
    reason = one(browser, "textbox", "Reason")
    reason.send_keys("<img src=x onerror=window.__pwned=1> stale")
    one(browser, "button", "Retract").click()
    wait_for(lambda: "retracted: <img" in one(browser, "article", "Turn 0").text, why="the retraction shown")
    not_pwned(browser)


def test_provenance_lists_what_rests_on_a_turn(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, "the root of it")
    one(one(browser, "article", "Turn 0"), "button", "Provenance").click()
    region = one(browser, "region", "Provenance")
    assert "Forward (what rests on it)" in region.text and "Backward (what it read)" in region.text


def test_a_view_renders_typed_data_and_shows_bad_data_inline(studio: Studio, browser: webdriver.Chrome, tmp_path: Path) -> None:
    open_studio(browser, studio)
    data = one(browser, "textbox", "View data (JSON)")
    render = one(browser, "button", "Render")
    data.clear()
    data.send_keys('{"done": "three"}')
    render.click()
    alert = browser.find_element(By.ID, "view-error")
    wait_for(lambda: "does not fit view 'meter'" in alert.text, why="the inline error")
    data.clear()
    data.send_keys("{not json")
    render.click()
    wait_for(lambda: "not JSON" in alert.text, why="the JSON error")
    data.clear()
    data.send_keys('{"done": 3}')
    render.click()
    output = browser.find_element(By.ID, "view-output")
    wait_for(lambda: output.text.startswith("### <img"), why="the rendered view, as text")
    assert alert.text == ""
    not_pwned(browser)
    screenshot(browser, "view", tmp_path)


PROPOSE = '<mod-action type="note.save">{"text": "<img src=x onerror=window.__pwned=1>"}</mod-action>'
PLACE = '<mod-widget type="bar">{"done": 4}</mod-widget>'


def test_a_widget_in_a_reply_is_rendered_by_its_mod_as_text(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, f"show a bar {PLACE}")  # EchoModel's reply repeats the tag
    figure = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "figure[aria-label='Widget bar']"), why="the widget")
    assert "==== <img" in figure.text and "<script>" in figure.text
    not_pwned(browser)


def test_pending_actions_are_confirmed_or_dismissed_with_a_reason(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, f"please {PROPOSE} and {PROPOSE}")
    session_id = browser.find_element(By.ID, "session-title").text.removeprefix("Session ")
    pending = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#pending > li") if len(browser.find_elements(By.CSS_SELECTOR, "#pending > li")) == 2 else None, why="two pending actions")
    assert "<img src=x" in pending[0].text  # the payload, as text
    one(pending[0], "textbox", "Reason for note.save").send_keys("looks right")
    one(pending[0], "button", "Confirm").click()
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#pending > li")) == 1, why="the confirmed action to leave the list")
    last = browser.find_element(By.CSS_SELECTOR, "#pending > li")
    one(last, "button", "Dismiss").click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#pending > li") == [], why="the dismissed action to leave the list")
    assert studio.api("GET", f"/api/sessions/{session_id}/pending") == {"actions": []}
    not_pwned(browser)


def test_a_standing_rule_is_listed_and_revoked(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, f"please {PROPOSE}")
    session_id = browser.find_element(By.ID, "session-title").text.removeprefix("Session ")
    (action,) = wait_for(lambda: studio.api("GET", f"/api/sessions/{session_id}/pending")["actions"], why="the pending action")  # type: ignore[index]
    run = {
        "threadId": session_id, "runId": "allow-always", "state": {}, "messages": [], "tools": [], "context": [],
        "forwardedProps": {},
        "resume": [{"interruptId": action["id"], "status": "resolved", "payload": {"approved": True, "always": True}}],
    }  # fmt: skip
    status, answer = studio.request("POST", f"/agui?token={studio.token}", headers={"content-type": "application/json"}, body=run)
    assert status == 200, answer
    rules = wait_for(lambda: studio.api("GET", "/api/approvals")["rules"], why="the standing rule")  # type: ignore[index]
    assert [r["action_type"] for r in rules] == ["note.save"]
    open_studio(browser, studio)
    revoke = one(browser, "button", "Revoke note.save")
    revoke.click()
    wait_for(lambda: not by_role(browser, "button", "Revoke note.save"), why="the rule to leave the list")
    assert studio.api("GET", "/api/approvals")["rules"] == []  # type: ignore[index]


def test_the_tree_draws_forks_at_their_anchor_and_hostile_labels_as_text(studio: Studio, browser: webdriver.Chrome) -> None:
    open_studio(browser, studio)
    root = one(browser, "button", HOSTILE_LABEL)
    fork = one(browser, "button", f"fork of {HOSTILE_LABEL} (fork at turn 0)")
    assert fork.find_element(By.XPATH, "../../..").find_element(By.XPATH, "./button") == root  # drawn under its parent
    fork.send_keys(Keys.ENTER)
    settled_turn(browser, lambda text: f"seeded {HOSTILE_LABEL}" in text, "the inherited turn")
    not_pwned(browser)


def test_the_tree_is_live_a_session_made_elsewhere_appears(studio: Studio, browser: webdriver.Chrome) -> None:
    open_studio(browser, studio)
    wait_for(lambda: browser.execute_script("return document.body.dataset.live === 'true'"), why="the event stream open")
    made = studio.api("POST", "/api/sessions", {})
    one(browser, "button", str(made["id"]))  # type: ignore[index]  # from the host's session_created event


def test_a_double_slash_sends_a_literal_slash_and_offers_no_commands(studio: Studio, browser: webdriver.Chrome) -> None:
    open_studio(browser, studio)
    one(browser, "button", "New session").click()
    box = one(browser, "textbox", "Message")
    wait_for(lambda: browser.switch_to.active_element == box, why="the message box focused")
    box.send_keys("//explain is not a command")
    time.sleep(0.5)
    assert by_role(browser, "listbox", "Completions") == []
    box.send_keys(Keys.ENTER)
    settled_turn(browser, lambda text: "echo: /explain is not a command" in text, "the prompt's reply")


def test_a_long_session_shows_its_newest_turns_and_pages_back(studio: Studio, browser: webdriver.Chrome) -> None:
    open_studio(browser, studio)
    one(browser, "button", "long").click()
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#turns article")) == 200, why="the newest 200 turns")
    assert "long 204" in browser.find_elements(By.CSS_SELECTOR, "#turns article")[-1].text
    earlier = "//button[starts-with(normalize-space(), 'Show earlier turns')]"  # 800 turn buttons: no role scan
    (button,) = browser.find_elements(By.XPATH, earlier)
    assert button.aria_role == "button" and button.accessible_name == "Show earlier turns (5 more)"
    button.click()
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#turns article")) == 205, why="every turn")
    assert "long 0" in browser.find_elements(By.CSS_SELECTOR, "#turns article")[0].text
    assert browser.find_elements(By.XPATH, earlier) == []


def test_the_wheel_ships_the_page_and_names_the_extra_when_it_is_missing(installed: Installed, user_dir: Path) -> None:
    shipped = subprocess.run(
        [installed.python, "-c", "import importlib.resources as r; s = r.files('host_sim.studio') / 'static'; "
         "print(sorted(p.name for p in s.iterdir()))"],
        capture_output=True, text=True, check=True, cwd=user_dir,
    )  # fmt: skip
    assert shipped.stdout.strip() == "['app.js', 'index.html', 'style.css']"
    result = host_sim(installed, user_dir, "studio", "--no-store")  # the wheel without extras: no uvicorn
    no_traceback(result)
    assert result.code == 1 and "pip install 'modular-chat-sdk[studio]'" in result.err, result.err
    assert result.out == ""


def test_ctrl_c_stops_the_studio_while_a_page_listens_to_its_events(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "host_sim", "studio", "--no-store"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        parts = urllib.parse.urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        connection.request("GET", f"/api/events?{parts.query}")
        response = connection.getresponse()
        assert response.status == 200 and response.getheader("content-type") == "text/event-stream"
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        process.wait(timeout=20)
        assert time.monotonic() - started < 10
        connection.close()
        process.stdout.close()


def focus_is_visible(browser: webdriver.Chrome) -> bool:
    """The focused element draws the page's focus ring (``:focus-visible``), not nothing."""
    return bool(browser.execute_script(
        "const e = document.activeElement; const s = getComputedStyle(e);"
        "return e.matches(':focus-visible') && s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;"
    ))  # fmt: skip


def test_keyboard_alone_forgets_a_turn_after_seeing_its_plan_and_can_keep_it(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, "a secret typed by keyboard")
    session_id = browser.find_element(By.ID, "session-title").text.removeprefix("Session ")
    tab_to(browser, "Forget…", back=True)
    assert focus_is_visible(browser)
    press(browser, Keys.ENTER)
    one(browser, "region", "Erasure plan")
    wait_for(lambda: focused_name(browser) == "Erase", why="focus on the Erase button")
    assert focus_is_visible(browser)
    tab_to(browser, "Keep it")
    press(browser, Keys.ENTER)  # the second step declined: nothing erased, focus back where it was
    wait_for(lambda: not by_role(browser, "region", "Erasure plan"), why="the plan closed")
    assert focused_name(browser) == "Forget…"
    assert studio.api("GET", f"/api/sessions/{session_id}/turns")["turns"][0]["erased"] is False  # type: ignore[index]
    press(browser, Keys.ENTER)
    wait_for(lambda: focused_name(browser) == "Erase", why="focus on the Erase button again")
    press(browser, Keys.SPACE)
    wait_for(lambda: "(forgotten)" in one(browser, "article", "Turn 0").text, why="the turn shown forgotten")
    data = studio.api("GET", f"/api/sessions/{session_id}/turns")
    assert data["turns"][0]["erased"] is True and "a secret typed" not in json.dumps(data)  # type: ignore[index]
    assert focused_name(browser) == "Message"


def test_keyboard_alone_renders_a_view_and_reads_its_inline_error(studio: Studio, browser: webdriver.Chrome) -> None:
    open_studio(browser, studio)
    tab_to(browser, "View")
    assert browser.switch_to.active_element.aria_role == "combobox" and focus_is_visible(browser)
    press(browser, Keys.ARROW_DOWN)  # the only view stays chosen
    tab_to(browser, "View data (JSON)")
    press(browser, Keys.CONTROL, "a")
    press(browser, '{"done": "three"}')
    tab_to(browser, "Render")
    assert focus_is_visible(browser)
    press(browser, Keys.ENTER)
    alert = browser.find_element(By.ID, "view-error")
    wait_for(lambda: "does not fit view 'meter'" in alert.text, why="the inline error")
    tab_to(browser, "View data (JSON)", back=True)
    press(browser, Keys.CONTROL, "a")
    press(browser, '{"done": 2}')
    tab_to(browser, "Render")
    press(browser, Keys.SPACE)
    output = browser.find_element(By.ID, "view-output")
    wait_for(lambda: output.text.startswith("## <img"), why="the rendered view")
    assert alert.text == ""
    not_pwned(browser)


def _pending_items(browser: webdriver.Chrome) -> list[WebElement]:
    return browser.find_elements(By.CSS_SELECTOR, "#pending > li")


def test_every_sessions_pending_actions_are_listed_and_one_is_allowed_always(studio: Studio, browser: webdriver.Chrome) -> None:
    _new_turn(studio, browser, f"first {PROPOSE}")
    first = browser.find_element(By.ID, "session-title").text.removeprefix("Session ")
    _new_turn(studio, browser, f"second {PROPOSE}")
    second = browser.find_element(By.ID, "session-title").text.removeprefix("Session ")
    one(browser, "button", "New session").click()  # a third session is selected: both still wait in the list
    wait_for(lambda: first not in browser.find_element(By.ID, "session-title").text and second not in browser.find_element(By.ID, "session-title").text, why="a fresh session")
    items = wait_for(lambda: _pending_items(browser) if len(_pending_items(browser)) == 2 else None, why="both sessions' actions")
    named = {item.accessible_name: item for item in items}  # the newest session's first, as the tree
    assert sorted(named) == sorted([f"Action note.save in {first}", f"Action note.save in {second}"])
    one(named[f"Action note.save in {first}"], "textbox", "Reason for note.save").send_keys("notes are fine")
    one(named[f"Action note.save in {first}"], "button", "Allow always").click()
    revoke = one(browser, "button", "Revoke note.save")  # the standing rule, listed at once
    wait_for(lambda: len(_pending_items(browser)) == 1, why="the allowed action to leave the list")
    assert studio.api("GET", f"/api/sessions/{first}/pending") == {"actions": []}
    (rule,) = studio.api("GET", "/api/approvals")["rules"]  # type: ignore[index]
    assert rule["action_type"] == "note.save" and rule["reason"] == "notes are fine"
    assert len(studio.api("GET", f"/api/sessions/{second}/pending")["actions"]) == 1  # type: ignore[index]  # a rule decides only new ones
    revoke.click()
    wait_for(lambda: not by_role(browser, "button", "Revoke note.save"), why="the rule revoked")
    one(_pending_items(browser)[0], "button", "Dismiss").click()
    wait_for(lambda: _pending_items(browser) == [], why="the list empty")
    not_pwned(browser)


def test_provenance_shows_the_memory_records_on_a_turn_and_walks_a_record_back(studio: Studio, browser: webdriver.Chrome) -> None:
    open_studio(browser, studio)
    one(browser, "button", HOSTILE_LABEL).click()
    turn = settled_turn(browser, lambda text: "seeded" in text, "the seeded turn")
    turn_id = turn.text.split("turn ", 1)[1].split(" ", 1)[0]
    listed = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#records button") if len(browser.find_elements(By.CSS_SELECTOR, "#records button")) == 2 else None, why="the session's records")
    assert [b.text.rsplit(" ", 1)[1] for b in listed] == ["(fact)", "(summary)"]
    fact_id = listed[0].text.split(" ")[1]
    summary_id = listed[1].text.split(" ")[1]
    one(turn, "button", "Provenance").click()
    region = one(browser, "region", "Provenance")
    one(region, "button", f"Record {summary_id} (summary)")  # it rests on the turn through the fact
    one(region, "button", f"Record {fact_id} (fact)").send_keys(Keys.ENTER)
    record = one(browser, "region", f"Record {fact_id}")
    assert browser.switch_to.active_element == record
    assert f"Alice lives in {HOSTILE_LABEL}" in record.text and f"turn {turn_id}" in record.text
    one(record, "button", f"Record {summary_id} (summary)").click()  # what rests on the fact
    summary = one(browser, "region", f"Record {summary_id}")
    assert "a summary of what Alice said" in summary.text
    one(summary, "button", f"Record {fact_id} (fact)").click()  # and back to what it was derived from
    one(browser, "region", f"Record {fact_id}")
    not_pwned(browser)
