"""Render the public API report ``stubs/*.pyi`` from the code with griffe.

Usage: ``python -m tools.render_stubs`` (writes the files) or
``python -m tools.render_stubs --check`` (exit 1 and print a diff when they are stale).

The report is the ``.pyi``-style surface of each public door (``modular_sdk``,
``host_sim``, ``host_sim.pytest_plugin``): every name in ``__all__`` with its signature,
types, ``Literal`` aliases, keyword-only and positional-only markers, class attributes,
properties, overloads and the first line of its docstring. Names the surface refers to
but does not export (type variables, private aliases) are listed at the end, so the
report says what every annotation means. It is a reviewed diff of the API, not a stub
package: nothing imports it.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import griffe

__all__ = ["PACKAGES", "check", "render", "render_all", "write"]

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "stubs"
PACKAGES = ("modular_sdk", "host_sim", "host_sim.pytest_plugin")
COMMAND = "python -m tools.render_stubs"
_DUNDERS = frozenset({"__init__", "__call__", "__aenter__", "__aexit__", "__enter__", "__exit__", "__iter__", "__len__"})
_INDENT = "    "


def _first_line(obj: griffe.Object) -> str | None:
    if obj.docstring is None:
        return None
    lines = obj.docstring.value.strip().splitlines()
    if not lines:
        return None
    return lines[0].strip().replace('"""', "'''")


def _doc(obj: griffe.Object, indent: str) -> list[str]:
    line = _first_line(obj)
    return [] if line is None else [f'{indent}"""{line}"""']


class _Renderer:
    def __init__(self, package: griffe.Module, public: str) -> None:
        self.package = package
        self.public = public
        self.referenced: dict[str, griffe.Object] = {}

    # -- expressions ---------------------------------------------------------------------
    def expr(self, value: str | griffe.Expr | None) -> str:
        if value is None:
            return ""
        if isinstance(value, griffe.Expr):
            for part in value.iterate(flat=True):
                if isinstance(part, griffe.ExprName):
                    self._note(part)
        return str(value)

    def _note(self, name: griffe.ExprName) -> None:
        path = name.canonical_path
        top = path.split(".", 1)[0]
        if top not in ("modular_sdk", "host_sim") or name.name in _export_names(self.package):
            return
        try:
            target = self.package.modules_collection.get_member(path)
        except (KeyError, ValueError, AttributeError):
            return
        if isinstance(target, griffe.Alias):
            try:
                target = target.final_target
            except griffe.AliasResolutionError:
                return
        if target.is_attribute and name.name not in self.referenced:
            self.referenced[name.name] = target

    # -- members -------------------------------------------------------------------------
    def function(self, func: griffe.Function, indent: str) -> list[str]:
        out: list[str] = []
        for overload in func.overloads or ():
            out += ["", f"{indent}@overload"] if not out else [f"{indent}@overload"]
            out.append(self._signature(overload, indent, docstring=False))
        decorators = [d for d in func.decorators if self.expr(d.value) not in ("overload", "typing.overload")]
        for decorator in decorators:
            out.append(f"{indent}@{self.expr(decorator.value)}")
        signature = self._signature(func, indent, docstring=True)
        out.append(signature)
        return out

    def _signature(self, func: griffe.Function, indent: str, *, docstring: bool) -> str:
        params: list[str] = []
        kinds = [p.kind for p in func.parameters]
        seen_star = False
        for index, param in enumerate(func.parameters):
            kind = param.kind
            if kind is griffe.ParameterKind.keyword_only and not seen_star:
                params.append("*")
                seen_star = True
            if kind is griffe.ParameterKind.var_positional:
                seen_star = True
            text = param.name
            if kind is griffe.ParameterKind.var_positional:
                text = "*" + text
            elif kind is griffe.ParameterKind.var_keyword:
                text = "**" + text
            if param.annotation is not None:
                text += f": {self.expr(param.annotation)}"
            if param.default is not None and kind not in (
                griffe.ParameterKind.var_positional,
                griffe.ParameterKind.var_keyword,
            ):
                text += f" = {self.expr(param.default)}" if param.annotation is not None else f"={self.expr(param.default)}"
            params.append(text)
            if kind is griffe.ParameterKind.positional_only and (
                index + 1 == len(kinds) or kinds[index + 1] is not griffe.ParameterKind.positional_only
            ):
                params.append("/")
        returns = f" -> {self.expr(func.returns)}" if func.returns is not None else ""
        prefix = "async def" if "async" in func.labels else "def"
        head = f"{indent}{prefix} {func.name}({', '.join(params)}){returns}:"
        doc = _first_line(func) if docstring else None
        if doc is None:
            return head + " ..."
        return f'{head}\n{indent}{_INDENT}"""{doc}"""'

    def attribute(self, attr: griffe.Attribute, indent: str, *, in_class: bool) -> list[str]:
        if "property" in attr.labels:
            returns = f" -> {self.expr(attr.annotation)}" if attr.annotation is not None else ""
            head = f"{indent}@property\n{indent}def {attr.name}(self){returns}:"
            doc = _first_line(attr)
            return [head + (f'\n{indent}{_INDENT}"""{doc}"""' if doc else " ...")]
        annotation = self.expr(attr.annotation) if attr.annotation is not None else None
        if in_class:
            value = str(attr.value) if attr.value is not None else None  # shown raw, not followed
            if "instance-attribute" in attr.labels and annotation is None:
                annotation = self._init_annotation(attr)
                value = None
            if value is not None and len(value) > 100:
                value = "..."
            line = f"{indent}{attr.name}: {annotation}" if annotation else f"{indent}{attr.name}"
            return [line + (f" = {value}" if value is not None else ""), *_doc(attr, indent)]
        value = self.expr(attr.value) if attr.value is not None else None
        if annotation in ("TypeAlias", "typing_extensions.TypeAlias", "typing.TypeAlias"):
            line = f"{indent}{attr.name}: TypeAlias = {value}"
        elif value is not None and value.startswith(("NewType(", "TypeVar(")):
            line = f"{indent}{attr.name} = {value}"
        elif annotation is not None:
            show_value = value is not None and len(value) <= 200
            line = f"{indent}{attr.name}: {annotation}" + (f" = {value}" if show_value else "")
        else:
            line = f"{indent}{attr.name} = {value}"
        return [line, *_doc(attr, indent)]

    def _init_annotation(self, attr: griffe.Attribute) -> str | None:
        parent = attr.parent
        init = parent.members.get("__init__") if isinstance(parent, griffe.Class) else None
        if isinstance(init, griffe.Function) and attr.value is not None:
            for param in init.parameters:
                if param.name == str(attr.value) and param.annotation is not None:
                    return self.expr(param.annotation)
        return None

    def klass(self, cls: griffe.Class) -> list[str]:
        out = [f"@{self.expr(d.value)}" for d in cls.decorators]
        bases = ", ".join(self.expr(b) for b in cls.bases)
        out.append(f"class {cls.name}({bases}):" if bases else f"class {cls.name}:")
        body = _doc(cls, _INDENT)
        for name, member in cls.members.items():
            if isinstance(member, griffe.Alias) or member.inherited:
                continue
            if name.startswith("_") and name not in _DUNDERS and not _init_alias(member):
                continue
            if isinstance(member, griffe.Attribute):
                body += self.attribute(member, _INDENT, in_class=True)
            elif isinstance(member, griffe.Function):
                body += self.function(member, _INDENT)
            elif isinstance(member, griffe.Class):
                body += [_INDENT + line for line in self.klass(member)]
        body += self._from_private_bases(cls)
        return out + (body or [f"{_INDENT}..."])

    def _from_private_bases(self, cls: griffe.Class) -> list[str]:
        """Public members a class inherits from a base the package does not export (a mixin
        such as ``PostgresTraces``): they are the class's API, so the report lists them."""
        exported = set(_export_names(self.package))
        body: list[str] = []
        for name, alias in cls.inherited_members.items():
            if name in cls.members or (name.startswith("_") and name not in _DUNDERS):
                continue
            try:
                member = alias.final_target
            except griffe.AliasResolutionError:
                continue
            owner = member.parent
            if not isinstance(owner, griffe.Class) or owner.name in exported or owner.path.split(".", 1)[0] != cls.path.split(".", 1)[0]:
                continue
            if isinstance(member, griffe.Attribute):
                body += self.attribute(member, _INDENT, in_class=True)
            elif isinstance(member, griffe.Function):
                body += self.function(member, _INDENT)
        return body

    def member(self, obj: griffe.Object) -> list[str]:
        if isinstance(obj, griffe.Class):
            return self.klass(obj)
        if isinstance(obj, griffe.Function):
            return self.function(obj, "")
        if isinstance(obj, griffe.Attribute):
            return self.attribute(obj, "", in_class=False)
        return [f"{obj.name}: {obj.kind.value}"]


def _init_alias(member: griffe.Object | griffe.Alias) -> bool:
    """A private attrs field given to ``__init__`` under a public name (``alias=``): public."""
    return isinstance(member, griffe.Attribute) and "alias=" in str(member.value or "")


def _export_names(module: griffe.Module) -> list[str]:
    return [str(name) for name in module.exports or ()]


def _target(member: griffe.Object | griffe.Alias) -> griffe.Object | griffe.Alias:
    return member.final_target if isinstance(member, griffe.Alias) else member


def _reexport(module: griffe.Module, name: str) -> str | None:
    """The path of a name re-exported from our other package (``modular_sdk``), else ``None``."""
    member = module.members[name]
    if isinstance(member, griffe.Alias) and member.target_path.split(".", 1)[0] != module.path.split(".", 1)[0]:
        return member.target_path
    return None


def _exports(module: griffe.Module) -> Iterator[tuple[str, griffe.Object]]:
    for name in _export_names(module):
        if _reexport(module, name) is not None:
            continue  # rendered as a re-export line: its own report shows it
        member = module.members[name]
        target = member.final_target if isinstance(member, griffe.Alias) else member
        if not isinstance(target, griffe.Object):
            raise TypeError(f"cannot render {name!r} of {module.path}")
        yield name, target


def render(public: str) -> str:
    """The report of one public module, as ``.pyi`` text."""
    top = public.split(".", 1)[0]
    loader = griffe.GriffeLoader(allow_inspection=False)
    package = loader.load(top)
    assert isinstance(package, griffe.Module)
    loader.resolve_aliases(implicit=False, external=None)
    module = package if public == top else package.modules_collection.get_member(public)
    assert isinstance(module, griffe.Module)
    renderer = _Renderer(module, public)
    lines = [
        f"# The public API of `{public}`, rendered from the code by `{COMMAND}`.",
        "# Do not edit: change the code, re-run the command, review the diff.",
        "",
    ]
    for line in _doc(module, ""):
        lines += [line, ""]
    kind_of: dict[str, list[str]] = {}
    for name, target in _exports(module):
        body = renderer.member(target)
        if target.name != name:
            body = [f"{name} = {target.name}  # alias", *body]
        kind_of[name] = body
    for name in _export_names(module):
        reexport = _reexport(module, name)
        if reexport is not None:
            lines += [f"from {reexport.rpartition('.')[0]} import {name} as {name}  # re-exported, one class", "", ""]
            continue
        lines += [*kind_of[name], ""]
        if isinstance(_target(module.members[name]), griffe.Class):
            lines.append("")
    if renderer.referenced:
        lines += ["", "# -- Not exported, referenced above " + "-" * 50, ""]
        done: set[str] = set()
        while len(done) < len(renderer.referenced):
            for name, target in sorted(renderer.referenced.items()):
                if name in done:
                    continue
                done.add(name)
                assert isinstance(target, griffe.Attribute)
                lines += [*renderer.attribute(target, "", in_class=False), ""]
    text = "\n".join(lines).rstrip() + "\n"
    while "\n\n\n\n" in text:
        text = text.replace("\n\n\n\n", "\n\n\n")
    return text


def _path(public: str) -> Path:
    return STUBS / f"{public}.pyi"


def render_all() -> dict[Path, str]:
    """Every report file and its fresh text."""
    return {_path(public): render(public) for public in PACKAGES}


def write() -> list[Path]:
    """Rewrite the reports; the paths that changed."""
    STUBS.mkdir(exist_ok=True)
    changed = []
    for path, text in render_all().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def check() -> str:
    """A unified diff of the committed reports against fresh ones ('' when up to date)."""
    chunks: list[str] = []
    for path, text in render_all().items():
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old != text:
            rel = path.relative_to(ROOT).as_posix()
            chunks += difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True), f"{rel} (committed)", f"{rel} (from the code)"
            )
    return "".join(chunks)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--check"]:
        diff = check()
        if diff:
            print(diff, end="")
            print(f"\nstubs/ is stale; refresh it with: {COMMAND}")
            return 1
        return 0
    if args:
        print(f"usage: {COMMAND} [--check]", file=sys.stderr)
        return 2
    for path in write():
        print(f"wrote {path.relative_to(ROOT).as_posix()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
