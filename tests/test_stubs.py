"""stubs/ is the public API report, rendered from the code; it must not drift."""

from __future__ import annotations

from tools import render_stubs


def test_stubs_match_the_code() -> None:
    diff = render_stubs.check()
    assert not diff, (
        "stubs/ does not match the public API of the code:\n\n"
        f"{diff}\n"
        f"If the change is intended, refresh the report with `{render_stubs.COMMAND}` "
        "and commit it with the change."
    )


def test_stubs_cover_every_export() -> None:
    import host_sim
    import host_sim.pytest_plugin
    import modular_sdk

    for module in (modular_sdk, host_sim, host_sim.pytest_plugin):
        text = (render_stubs.STUBS / f"{module.__name__}.pyi").read_text(encoding="utf-8")
        for name in module.__all__:
            assert any(
                line.startswith((f"class {name}(", f"class {name}:", f"def {name}(", f"async def {name}(", f"{name}:", f"{name} ="))
                or (line.startswith("from ") and f" import {name} as {name}" in line)  # a re-export
                for line in text.splitlines()
            ), f"{module.__name__}.{name} is missing from stubs/{module.__name__}.pyi"
