"""The commands docs/cli.md and the README show work as shown, from the wheel."""

from __future__ import annotations

from pathlib import Path

from ._support import ROOT, Installed, host_sim


def test_check_of_the_shipped_examples_as_cli_md_shows(installed: Installed, user_dir: Path) -> None:
    (user_dir / "hello.py").write_text(
        "from modular_sdk import ModMetadata, define_mod\n\n"
        'mod = define_mod(metadata=ModMetadata(display_name="Hello", description="Says hello"))\n'
    )
    shown = "host-sim check hello.py host_sim.examples.background_tasks host_sim.examples.proposals"
    assert shown in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    result = host_sim(installed, user_dir, *shown.split()[1:])
    assert result.code == 0, result.out + result.err
    assert "ok      host_sim.examples.proposals: proposals (1 tool, 1 action)" in result.out


def test_every_shipped_example_checks_from_an_empty_folder(installed: Installed, user_dir: Path) -> None:
    specs = sorted(f"host_sim.examples.{p.stem}" for p in (ROOT / "host_sim" / "examples").glob("[!_]*.py"))
    assert len(specs) >= 6
    result = host_sim(installed, user_dir, "check", *specs)
    assert result.code == 0, result.out + result.err
    assert result.out.endswith(f"checked {len(specs)} mods: {len(specs)} ok, 0 failed\n")


def test_demo_then_lineage_html_as_the_readme_says(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "demo").code == 0
    result = host_sim(installed, user_dir, "lineage", "--html", "lineage.html")
    assert result.code == 0, result.err
    assert result.out == "wrote lineage.html (3 sessions); open it in a browser\n"
    page = (user_dir / "lineage.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '"label":"Task report"' in page


def test_lineage_html_into_a_missing_folder(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "demo").code == 0
    result = host_sim(installed, user_dir, "lineage", "--html", "nowhere/lineage.html")
    assert result.code == 1
    assert "host-sim lineage: error: cannot write 'nowhere/lineage.html'" in result.err
    assert "Traceback" not in result.err
