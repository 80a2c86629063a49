"""What the docs say about the code agrees with the code (issue 36: a new user found four
places where it did not)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from host_sim import Host, ModelRequest, ScriptedModel
from host_sim.examples import background_tasks
from host_sim.fold import Manifest
from modular_sdk import Mod

ROOT = Path(__file__).resolve().parents[1]


def test_the_manifest_reference_has_a_row_for_every_field_of_the_manifest() -> None:
    table = (ROOT / "docs" / "manifest.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE))
    missing = [f.name for f in attrs.fields(Manifest) if f.name not in rows]
    assert not missing, f"docs/manifest.md's fields table lacks {missing}"


def test_the_docs_name_the_integration_examples_framework_as_it_imports() -> None:
    app = (ROOT / "host_sim" / "examples" / "integration" / "app.py").read_text(encoding="utf-8")
    framework = "Starlette" if "from starlette" in app else "FastAPI"
    other = {"Starlette": "FastAPI", "FastAPI": "Starlette"}[framework]
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            if "examples/integration" in line:
                assert other not in line, f"{page.name}: {line.strip()!r} calls the {framework} example {other}"


def _readme_mod() -> Mod:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A mod in twenty lines", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own block
    mod = scope["mod"]
    assert isinstance(mod, Mod)
    return mod


async def _what_task_does(mod: Mod) -> tuple[list[str], str, str]:
    """The texts its model was asked, and the notification's title and body (session ids masked)."""
    asked: list[str] = []

    def respond(request: ModelRequest) -> str:
        asked.append(request.text)
        return f"answer {len(asked)}"

    async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")  # a fork needs a completed turn
        started = await host.submit(chat, "/task write the tests")
        assert started.error is None, started.error
        *_, note = await (await host.sessions.get(chat.id)).turns()
    message = note.message
    assert message.type == "notification"
    masked = [re.sub(r"ses_[0-9a-f]{12}", "ses_X", text) for text in asked]
    return masked, message.title, re.sub(r"ses_[0-9a-f]{12}", "ses_X", message.body)


@pytest.mark.anyio
async def test_the_readmes_twenty_line_mod_does_what_the_shipped_task_does() -> None:
    assert await _what_task_does(_readme_mod()) == await _what_task_does(background_tasks.mod)
