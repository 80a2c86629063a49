"""Markdown Python blocks as tested programs: type-check them with mypy --strict and run them.

Usage: ``python -m tools.mdcheck [FILE.md ...]`` (default: README.md and docs/*.md). It
prints ``docs/x.md:LINE: ...`` for every problem and exits 1 if there is one.

How a document becomes programs
-------------------------------
Each document's plain ````` ```python ````` blocks are joined, in order, into one module; the
lines outside them become blank lines, so line N of the module is line N of the ``.md``
and every error points at ``docs/x.md:N``. The module is type-checked (mypy ``strict``,
``warn_unreachable`` and the project's mypy plugin ``modular_sdk.mypy_plugin``) and then
executed; a block that shows async code defines ``async def main()`` and calls
``anyio.run(main)``.

Options after ``python`` on the fence line (``key=value``, values may be quoted):

``expect-error=ModDefinitionError``
    the block is a program of its own (not joined) that type-checks and must raise that
    exception (its class or a base class, by name); ``match="regex"`` also checks the message.
``expect-mypy="text"``
    the block is a program of its own that mypy must reject with an error containing
    ``text``; combine with ``expect-error`` to say what happens at runtime too (else it is
    not run).
``file=name.py``
    the block is the whole file ``name.py``: other blocks of the document (and of later
    documents) may import it. File names are unique across documents.
``pytest``
    (with ``file=test_*.py``) the file is a test module: it is run with pytest (``-W error``)
    and must pass.
``skip="why"``
    not checked; the reason is required and skipped blocks are counted and reported.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import attrs

__all__ = [
    "Block",
    "Diagnostic",
    "DocFormatError",
    "Program",
    "check",
    "execute",
    "generate",
    "parse",
    "typecheck",
]

ROOT = Path(__file__).resolve().parents[1]
MYPY_CONFIG = """\
[mypy]
strict = True
warn_unreachable = True
python_version = 3.11
plugins = modular_sdk.mypy_plugin
"""
_FENCE = re.compile(r"^```python(?:[ \t]+(?P<options>.*))?$")
_OPTIONS = frozenset({"expect-error", "match", "expect-mypy", "file", "pytest", "skip"})


class DocFormatError(ValueError):
    """A document's Python block is malformed (unclosed fence, unknown or bad option)."""


@attrs.frozen(kw_only=True)
class Block:
    """One ```` ```python ```` block: its document, first code line (1-based) and options."""

    doc: Path
    label: str
    start: int
    lines: tuple[str, ...]
    expect_error: str | None = None
    match: str | None = None
    expect_mypy: str | None = None
    file: str | None = None
    pytest: bool = False
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"{self.label}:{self.start}"

    @property
    def joined(self) -> bool:
        """Part of its document's joined module (a plain block)."""
        return not (self.expect_error or self.expect_mypy or self.file or self.skip)


@attrs.frozen(kw_only=True)
class Program:
    """A generated module: a document's joined plain blocks, or one block of its own."""

    path: Path
    label: str
    kind: Literal["joined", "block"]
    blocks: tuple[Block, ...]

    @property
    def module(self) -> str:
        return self.path.stem


@attrs.frozen(kw_only=True)
class Diagnostic:
    """One mypy message, pointed at the document."""

    line: int
    severity: str
    message: str

    def render(self, label: str) -> str:
        return f"{label}:{self.line}: {self.severity}: {self.message}"


def _label(doc: Path) -> str:
    try:
        return doc.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return doc.name


def parse(doc: Path) -> list[Block]:
    """The Python blocks of a Markdown document, with their options."""
    label = _label(doc)
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        opening = index + 1
        options = _options(fence.group("options") or "", f"{label}:{opening}")
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise DocFormatError(f"{label}:{opening}: the ```python block is never closed with ```")
        text = {key: value for key, value in options.items() if isinstance(value, str)}
        block = Block(
            doc=doc,
            label=label,
            start=opening + 1,
            lines=tuple(lines[index + 1 : end]),
            expect_error=text.get("expect_error"),
            match=text.get("match"),
            expect_mypy=text.get("expect_mypy"),
            file=text.get("file"),
            pytest=options.get("pytest") is True,
            skip=text.get("skip"),
        )
        _validate(block)
        blocks.append(block)
        index = end + 1
    return blocks


def _options(text: str, where: str) -> dict[str, str | bool | None]:
    found: dict[str, str | bool | None] = {}
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise DocFormatError(f"{where}: cannot read the fence options {text!r}: {exc}") from None
    for word in words:
        key, sep, value = word.partition("=")
        if key not in _OPTIONS:
            raise DocFormatError(
                f"{where}: unknown block option {key!r}; known: {', '.join(sorted(_OPTIONS))}"
            )
        if key == "pytest":
            if sep:
                raise DocFormatError(f"{where}: 'pytest' takes no value")
            found["pytest"] = True
            continue
        if not sep or not value.strip():
            raise DocFormatError(f"{where}: option {key!r} needs a value, as in {key}=\"...\"")
        found[key.replace("-", "_")] = value
    return found


def _validate(block: Block) -> None:
    where = f"{block.label}:{block.start - 1}"  # the fence line
    if block.skip is not None and len(block.skip.split()) < 2:
        raise DocFormatError(f"{where}: skip={block.skip!r} must say why the block is not checked")
    if block.match is not None and block.expect_error is None:
        raise DocFormatError(f"{where}: 'match' only goes with 'expect-error'")
    if block.pytest and not (block.file or "").startswith("test_"):
        raise DocFormatError(f"{where}: 'pytest' needs file=test_<name>.py")
    if block.file is not None and not re.fullmatch(r"[a-z_][a-z0-9_]*\.py", block.file):
        raise DocFormatError(f"{where}: file={block.file!r} must be a module file name like my_mod.py")
    if block.file is not None and (block.expect_error or block.expect_mypy):
        raise DocFormatError(f"{where}: a file= block cannot also expect an error")


def _module_name(label: str) -> str:
    return "doc_" + re.sub(r"[^0-9a-zA-Z]+", "_", label.removesuffix(".md")).strip("_").lower()


def _write(path: Path, blocks: Sequence[Block]) -> None:
    size = max(b.start + len(b.lines) for b in blocks)
    lines = [""] * size
    for block in blocks:
        lines[block.start - 1 : block.start - 1 + len(block.lines)] = block.lines
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def generate(docs: Sequence[Path], outdir: Path) -> tuple[list[Program], list[Block]]:
    """Write every document's programs into ``outdir``; return them and the skipped blocks."""
    outdir.mkdir(parents=True, exist_ok=True)
    programs: list[Program] = []
    skipped: list[Block] = []
    files: dict[str, Block] = {}
    for doc in docs:
        blocks = parse(doc)
        label = _label(doc)
        base = _module_name(label)
        for block in blocks:
            if block.skip:
                skipped.append(block)
            elif block.file:
                if block.file in files:
                    raise DocFormatError(
                        f"{block.where}: file={block.file!r} is already written by {files[block.file].where}; "
                        "give each document's files distinct names"
                    )
                files[block.file] = block
                path = outdir / block.file
                _write(path, [block])
                programs.append(Program(path=path, label=label, kind="block", blocks=(block,)))
        joined = [b for b in blocks if b.joined]
        if joined:
            path = outdir / f"{base}.py"
            _write(path, joined)
            programs.append(Program(path=path, label=label, kind="joined", blocks=tuple(joined)))
        for block in blocks:
            if block.expect_error or block.expect_mypy:
                path = outdir / f"{base}__line{block.start}.py"
                _write(path, [block])
                programs.append(Program(path=path, label=label, kind="block", blocks=(block,)))
    return programs, skipped


_MYPY_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*)$")


def typecheck(programs: Sequence[Program], *, cache_dir: Path | None = None) -> dict[Path, list[Diagnostic]]:
    """Run mypy once over every program; its messages by program path."""
    if not programs:
        return {}
    outdir = programs[0].path.parent
    config = outdir / "mypy.ini"
    config.write_text(MYPY_CONFIG, encoding="utf-8")
    cache = cache_dir if cache_dir is not None else ROOT / ".mypy_cache" / "docs"
    command = [
        sys.executable, "-m", "mypy",
        "--config-file", str(config),
        "--cache-dir", str(cache),
        "--show-error-codes", "--no-error-summary", "--hide-error-context", "--no-pretty",
        "--no-color-output",
        *(str(p.path) for p in programs),
    ]  # fmt: skip
    env = {**os.environ, "MYPYPATH": str(outdir)}
    done = subprocess.run(command, capture_output=True, text=True, cwd=outdir, env=env, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"mypy crashed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    by_path: dict[Path, list[Diagnostic]] = {p.path: [] for p in programs}
    resolved = {p.path.resolve(): p.path for p in programs}
    for raw in done.stdout.splitlines():
        found = _MYPY_LINE.match(raw)
        if found is None:
            continue
        target = resolved.get((outdir / found["path"]).resolve())
        if target is None:
            continue
        by_path[target].append(
            Diagnostic(line=int(found["line"]), severity=found["severity"], message=found["message"])
        )
    return by_path


@contextlib.contextmanager
def _importable(outdir: Path) -> Iterator[None]:
    before = set(sys.modules)
    sys.path.insert(0, str(outdir))
    try:
        yield
    finally:
        sys.path.remove(str(outdir))
        for name in set(sys.modules) - before:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if module_file.startswith(str(outdir)):
                del sys.modules[name]


def execute(program: Program, generated: Sequence[Program]) -> tuple[BaseException | None, str]:
    """Run a program in this process; the exception it raised (or None) and its output.

    The exception's ``__notes__`` gain the ``docs/x.md:LINE`` it was raised from.
    """
    output = io.StringIO()
    with _importable(program.path.parent):
        spec = importlib.util.spec_from_file_location(program.module, program.path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[program.module] = module
        try:
            with contextlib.redirect_stdout(output):
                spec.loader.exec_module(module)
        except BaseException as exc:  # a block may raise anything; we report it
            if isinstance(exc, KeyboardInterrupt):
                raise
            exc.add_note(f"raised at {where_raised(exc, generated)}")
            return exc, output.getvalue()
    return None, output.getvalue()


def where_raised(exc: BaseException, generated: Sequence[Program]) -> str:
    """``docs/x.md:LINE`` of the innermost traceback frame inside a document's code."""
    by_file = {str(p.path.resolve()): p.label for p in generated}
    place = "an unknown line"
    for frame in traceback.extract_tb(exc.__traceback__):
        label = by_file.get(str(Path(frame.filename).resolve()))
        if label is not None:
            place = f"{label}:{frame.lineno}"
    return place


def _doc_traceback(exc: BaseException, generated: Sequence[Program]) -> str:
    """The traceback frames of ``exc`` that are document code, as ``docs/x.md:LINE in name``."""
    by_file = {str(p.path.resolve()): p.label for p in generated}
    lines = []
    for frame in traceback.extract_tb(exc.__traceback__):
        label = by_file.get(str(Path(frame.filename).resolve()))
        if label is not None:
            lines.append(f"  {label}:{frame.lineno} in {frame.name}: {frame.line}\n")
    return "".join(lines)


def _exception_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def _run_pytest(program: Program) -> str | None:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", program.path.name]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=program.path.parent, check=False,
        env={**os.environ, "PYTHONPATH": str(program.path.parent)},
    )  # fmt: skip
    if done.returncode != 0:
        return f"pytest failed on this test file (exit {done.returncode}):\n{done.stdout}{done.stderr}"
    return None


def check(
    programs: Sequence[Program], diagnostics: dict[Path, list[Diagnostic]], *, label: str | None = None
) -> list[str]:
    """Every problem of the programs (of one document if ``label`` is given), as readable lines."""
    problems: list[str] = []
    for program in programs:
        if label is not None and program.label != label:
            continue
        errors = [d for d in diagnostics.get(program.path, []) if d.severity == "error"]
        block = program.blocks[0]
        if program.kind == "block" and block.expect_mypy is not None:
            expected = block.expect_mypy
            if not any(expected in d.message for d in errors):
                seen = "; ".join(d.render(program.label) for d in errors) or "no error"
                problems.append(f"{block.where}: expected a mypy error containing {expected!r}, got {seen}")
            if block.expect_error is None:
                continue
        else:
            notes = {d.line: d for d in diagnostics.get(program.path, []) if d.severity == "note"}
            for error in errors:
                problems.append("mypy: " + error.render(program.label))
                if error.line in notes:
                    problems.append("mypy: " + notes[error.line].render(program.label))
            if errors:
                continue
        exc, _ = execute(program, programs)
        if program.kind == "block" and block.expect_error is not None:
            if exc is None:
                problems.append(f"{block.where}: expected {block.expect_error} but the block ran without error")
            elif block.expect_error not in _exception_names(exc):
                problems.append(
                    f"{block.where}: expected {block.expect_error}, got {type(exc).__name__}: {exc} "
                    f"({where_raised(exc, programs)})"
                )
            elif block.match is not None and re.search(block.match, str(exc)) is None:
                problems.append(f"{block.where}: {type(exc).__name__} message {str(exc)!r} does not match {block.match!r}")
            continue
        if exc is not None:
            problems.append(
                f"{where_raised(exc, programs)}: raised {type(exc).__name__}: {exc}\n" + _doc_traceback(exc, programs)
            )
            continue
        if block.pytest:
            failure = _run_pytest(program)
            if failure is not None:
                problems.append(f"{block.where}: {failure}")
    return problems


def default_docs() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def main(argv: Sequence[str] | None = None) -> int:
    import tempfile

    args = list(sys.argv[1:] if argv is None else argv)
    docs = [Path(a) for a in args] or default_docs()
    with tempfile.TemporaryDirectory(prefix="mdcheck-") as tmp:
        programs, skipped = generate(docs, Path(tmp))
        problems = check(programs, typecheck(programs))
    for problem in problems:
        print(problem)
    blocks = sum(len(p.blocks) for p in programs if p.kind == "joined") + sum(
        1 for p in programs if p.kind == "block"
    )
    print(f"{blocks} blocks checked, {len(skipped)} skipped, {len(problems)} problems")
    for block in skipped:
        print(f"  skipped {block.where}: {block.skip}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
