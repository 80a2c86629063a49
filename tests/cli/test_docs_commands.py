"""The commands docs/cli.md and the README show work as shown, from the wheel."""

from __future__ import annotations

from pathlib import Path

from ._support import ROOT, Installed, host_sim


def test_check_of_the_examples_glob_in_cli_md(installed: Installed, user_dir: Path) -> None:
    examples = user_dir / "examples"
    examples.mkdir()
    for source in (ROOT / "examples").glob("*.py"):
        (examples / source.name).write_bytes(source.read_bytes())
    (user_dir / "hello.py").write_text(
        "from modular_sdk import ModMetadata, define_mod\n\n"
        'mod = define_mod(metadata=ModMetadata(display_name="Hello", description="Says hello"))\n'
    )
    specs = ["hello.py", *sorted(p.relative_to(user_dir).as_posix() for p in examples.glob("[!_]*.py"))]
    assert "examples/__init__.py" not in specs
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
