"""Every Python block of README.md and docs/*.md is a tested program (see tools/mdcheck.py).

Each document's blocks are joined into one module with line numbers preserved, type-checked
with mypy --strict and the project's mypy plugin (one mypy run for the whole suite), and
executed. Blocks marked ``expect-error=`` / ``expect-mypy=`` must fail as documented.
Refresh nothing: edit the Markdown and re-run ``pytest tests/test_docs.py``, or
``python -m tools.mdcheck docs/x.md`` for one document.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest

from tools import mdcheck

DOCS = mdcheck.default_docs()
LABELS = [mdcheck.ROOT.joinpath(d).relative_to(mdcheck.ROOT).as_posix() for d in DOCS]

SYNTHETIC = '''\
# A synthetic document

```python
def double(x: int) -> int:
    return x * 2
```

Some prose between the blocks.

```python
result: str = double(21)
```

```python expect-error=ZeroDivisionError
print(1 / 0)
```
'''

RAISES = '''\
# Raises

```python
def boom() -> None:
    raise RuntimeError("the block broke")


boom()
```

```python expect-error=KeyError
x = 1
```

```python expect-error=ValueError match="needle"
raise ValueError("haystack")
```

```python expect-mypy="Unsupported operand"
y = 1 + 2
```
'''


@attrs.frozen
class Checked:
    programs: Sequence[mdcheck.Program]
    skipped: Sequence[mdcheck.Block]
    diagnostics: dict[Path, list[mdcheck.Diagnostic]]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """Generate every document's programs, plus two synthetic ones, and run mypy once."""
    synthetic = tmp_path_factory.mktemp("synthetic")
    (synthetic / "synthetic.md").write_text(SYNTHETIC, encoding="utf-8")
    (synthetic / "raises.md").write_text(RAISES, encoding="utf-8")
    docs = [*DOCS, synthetic / "synthetic.md", synthetic / "raises.md"]
    programs, skipped = mdcheck.generate(docs, tmp_path_factory.mktemp("docs-programs"))
    return Checked(programs=programs, skipped=skipped, diagnostics=mdcheck.typecheck(programs))


@pytest.mark.parametrize("label", LABELS)
def test_document_blocks_type_check_and_run(checked: Checked, label: str) -> None:
    """Every block of the document passes mypy --strict and runs (or fails as marked)."""
    problems = mdcheck.check(checked.programs, checked.diagnostics, label=label)
    assert not problems, "\n".join(problems)


def test_enough_blocks_and_no_silent_skips(checked: Checked) -> None:
    blocks = [b for doc in DOCS for b in mdcheck.parse(doc)]
    assert len(blocks) >= 15, f"only {len(blocks)} Python blocks in the docs"
    assert all(b.skip and len(b.skip.split()) >= 2 for b in blocks if b.skip is not None)
    skipped = [b for b in checked.skipped if b.label in LABELS]
    assert len(skipped) == sum(1 for b in blocks if b.skip), "every skip is counted"


def test_a_type_error_is_reported_at_its_markdown_line(checked: Checked) -> None:
    problems = mdcheck.check(checked.programs, checked.diagnostics, label="synthetic.md")
    assert problems == [
        'mypy: synthetic.md:11: error: Incompatible types in assignment (expression has type "int", '
        'variable has type "str")  [assignment]'
    ]


def test_a_raising_block_and_unmet_expectations_are_reported(checked: Checked) -> None:
    problems = mdcheck.check(checked.programs, checked.diagnostics, label="raises.md")
    assert len(problems) == 4, problems
    raised, no_error, wrong_message, no_mypy_error = problems
    assert raised == (
        "raises.md:5: raised RuntimeError: the block broke\n"
        "  raises.md:8 in <module>: boom()\n"
        '  raises.md:5 in boom: raise RuntimeError("the block broke")\n'
    )
    assert no_error == "raises.md:12: expected KeyError but the block ran without error"
    assert wrong_message == "raises.md:16: ValueError message 'haystack' does not match 'needle'"
    assert no_mypy_error == "raises.md:20: expected a mypy error containing 'Unsupported operand', got no error"


@pytest.mark.parametrize(
    ("fence", "message"),
    [
        ("```python skip=x", "must say why"),
        ("```python expect-eror=ValueError", "unknown block option 'expect-eror'"),
        ("```python match=x", "'match' only goes with 'expect-error'"),
        ("```python pytest", "'pytest' needs file=test_<name>.py"),
        ("```python file=Bad-Name.py", "must be a module file name"),
    ],
)
def test_malformed_blocks_are_refused(tmp_path: Path, fence: str, message: str) -> None:
    doc = tmp_path / "bad.md"
    doc.write_text(f"# Bad\n\n{fence}\nx = 1\n```\n", encoding="utf-8")
    with pytest.raises(mdcheck.DocFormatError, match=message) as caught:
        mdcheck.parse(doc)
    assert str(caught.value).startswith("bad.md:3: ")


def test_an_unclosed_block_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "open.md"
    doc.write_text(textwrap.dedent("# Open\n```python\nx = 1\n"), encoding="utf-8")
    with pytest.raises(mdcheck.DocFormatError, match=r"open.md:2: the ```python block is never closed"):
        mdcheck.parse(doc)


def test_lines_are_preserved(tmp_path: Path) -> None:
    """Line N of a generated module is line N of the document."""
    doc = tmp_path / "lines.md"
    doc.write_text("# T\n\n```python\na = 1\n```\ntext\n```python\nb = 2\n```\n", encoding="utf-8")
    [program], _ = mdcheck.generate([doc], tmp_path / "out")
    source = program.path.read_text(encoding="utf-8").splitlines()
    assert (source[3], source[7]) == ("a = 1", "b = 2")
    assert all(not line for i, line in enumerate(source) if i not in (3, 7))
