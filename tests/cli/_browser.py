"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by Selenium.

`.ci/run` installs both when missing. The flags are the ones Chromium needs on a closed
network (without them it stalls on first-run, sync and update traffic), and every browser
gets a fresh profile folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

__all__ = ["CHROMIUM_FLAGS", "chromium"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _which(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return found
    raise AssertionError(
        f"none of {names} is installed: the lineage page is tested in a real browser; "
        "install Debian's chromium and chromium-driver (.ci/run does: apt-get install -y chromium chromium-driver)"
    )


@contextmanager
def chromium(profile: Path, width: int = 1400, height: int = 900) -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a fresh profile in ``profile``; quit when the block ends."""
    options = webdriver.ChromeOptions()
    options.binary_location = _which("chromium", "chromium-browser")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    service = Service(executable_path=_which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()
