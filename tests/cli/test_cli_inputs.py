"""What a user types is read as the docs say: view data as the view's type, model URLs, check's counts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim.testing import view_data
from modular_sdk import ModMetadata, SerializationError, define_mod, view

from ._support import ROOT, Installed, host_sim, no_traceback

DASHBOARD = textwrap.dedent(
    '''\
    import attrs

    from modular_sdk import ModMetadata, define_mod, view


    @attrs.frozen
    class Progress:
        done: int
        total: int


    def progress_bar(data: Progress) -> str:
        filled = round(10 * data.done / data.total)
        return f"[{'#' * filled}{'.' * (10 - filled)}] {data.done}/{data.total}"


    def raw(data: object) -> str:
        return repr(data)


    mod = define_mod(
        metadata=ModMetadata(display_name="Dashboard", description="Progress at a glance"),
        views=[view(id="progress", title="Task progress", render=progress_bar), view(id="raw", title="Raw", render=raw)],
    )
    '''
)


@pytest.fixture
def dashboard(user_dir: Path) -> Path:
    (user_dir / "dashboard.py").write_text(DASHBOARD)
    return user_dir


def test_view_data_is_structured_into_the_views_attrs_class_as_the_docs_show(installed: Installed, dashboard: Path) -> None:
    result = host_sim(installed, dashboard, "run", "dashboard.py", "--no-store", "--view", "progress", "--data", '{"done": 3, "total": 4}')
    no_traceback(result)
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines() == ["> view progress", "[########..] 3/4"]  # views alone make no session


def test_view_data_that_does_not_fit_names_the_field_and_runs_the_next_step(installed: Installed, dashboard: Path) -> None:
    result = host_sim(
        installed, dashboard, "run", "dashboard.py", "--no-store",
        "--view", "progress", "--data", '{"done": "3", "total": 4}',
        "--view", "progress", "--data", '{"done": 1}',
        "--view", "progress", "--data", '{"done": 1, "total": 2}',
    )  # fmt: skip
    no_traceback(result)
    assert result.code == 1
    lines = result.out.splitlines()
    assert lines[1].startswith("""error: --data {"done": "3", "total": 4} does not fit view 'progress': cannot read""")
    assert "field 'done'" in lines[1]
    assert lines[3].startswith("error: --data {\"done\": 1} does not fit view 'progress'") and "field 'total' is required but missing" in lines[3]
    assert lines[4:] == ["> view progress", "[#####.....] 1/2"]  # views alone make no session


def test_a_view_that_takes_any_data_gets_the_json_as_parsed(installed: Installed, dashboard: Path) -> None:
    result = host_sim(installed, dashboard, "run", "dashboard.py", "--no-store", "--view", "raw", "--data", '[1, {"a": null}]')
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines()[-1] == "[1, {'a': None}]"


@pytest.mark.parametrize("url", ["notaurl", "ftp://models.example/v1", "localhost:11434/v1"])
def test_a_model_base_url_that_is_not_http_is_refused(installed: Installed, user_dir: Path, url: str) -> None:
    result = host_sim(installed, user_dir, "run", "x.py", "-m", "hi", "--model", f"openai:llama@{url}")
    no_traceback(result)
    assert result.code == 2
    assert result.err.startswith(f"host-sim run: error: argument --model: 'openai:llama@{url}': {url!r} after '@' is not an http:// or https:// URL")
    assert "openai:MODEL@http://HOST:PORT/v1" in result.err


def test_check_counts_every_kind_of_contribution_actions_too(installed: Installed, user_dir: Path) -> None:
    (user_dir / "proposals.py").write_bytes((ROOT / "host_sim" / "examples" / "proposals.py").read_bytes())
    result = host_sim(installed, user_dir, "check", "proposals.py")
    assert result.code == 0, result.out + result.err
    assert result.out.startswith("ok      proposals.py: proposals (1 tool, 1 action)\n")


def test_the_demo_tree_draws_task_report_as_the_child_of_task(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "demo", "--no-store")
    assert result.code == 0, result.err
    tree = result.out.split("== lineage ==\n", 1)[1].splitlines()
    assert tree[1].startswith("└── ses_") and tree[1].endswith('fork@0  "Task"  2 turns')
    assert tree[2].startswith("    ↳ ses_") and tree[2].endswith('fork@1  "Task report"  3 turns')


@attrs.frozen
class Progress:
    done: int
    total: int


def _bar(data: Progress) -> str:
    return f"{data.done}/{data.total}"


def _any(data: object) -> str:
    return repr(data)


BOARD = define_mod(
    metadata=ModMetadata(display_name="Board", description="Typed and untyped views"),
    views=[view(id="progress", title="Progress", render=_bar), view(id="any", title="Any", render=_any)],
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON | st.fixed_dictionaries({"done": JSON, "total": JSON}, optional={"extra": JSON}))
def test_any_json_for_a_typed_view_is_its_type_or_an_error_naming_what_does_not_fit(value: object) -> None:
    try:
        got = view_data([BOARD], "progress", value)
    except SerializationError as exc:
        assert "Progress" in str(exc), str(exc)  # names the type the data must fit
    else:
        assert isinstance(got, Progress) and type(got.done) is int and type(got.total) is int
        assert value == {"done": got.done, "total": got.total}


@settings(max_examples=100, deadline=None)
@given(value=JSON)
def test_a_view_without_a_type_and_an_unknown_view_get_the_json_unchanged(value: object) -> None:
    assert view_data([BOARD], "any", value) is value
    assert view_data([BOARD], "nope", value) is value
