"""mypy plugin for modular-sdk: literal command ids and statically checked hook targets.

Enable it in the mypy configuration::

    [tool.mypy]
    plugins = ["modular_sdk.mypy_plugin"]

It does two things:

1. Keeps literal ids. ``slash_command(id="task", ...)`` is typed
   ``SlashCommand[Literal['task']]`` (plain mypy widens the type variable to ``str``); the
   same holds for ``command(id=...)`` and ``before_action("command:task", ...)``, and for a
   ``Final`` or ``Literal``-typed variable passed as the id. The type parameters are
   covariant, so these stay assignable to ``SlashCommand[str]``.
2. Checks hook targets. A ``define_mod(...)`` call fails to type-check, with the error code
   ``modular-hook-target``, when a ``before_action`` target is neither a `HostAction` nor
   ``"command:<id>"`` of one of that call's own ``commands``. The error is on the line of
   the hook (the list element, or the ``hooks=`` argument when it is a variable).

It checks what it can see statically: inline lists and tuples (``*spread`` included),
commands and hooks imported from other modules (through their declared types), tuple
variables and list variables of the checked module that are assigned once and never
mutated. When a command id or a target is not statically a literal, it stays silent:
``define_mod`` always checks the same rule at runtime.

This module imports only mypy and the standard library, so mypy may also load it by path.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from mypy.checker import TypeChecker
from mypy.errorcodes import ErrorCode
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import (
    AssertStmt,
    AssignmentStmt,
    Block,
    CallExpr,
    ClassDef,
    Context,
    Decorator,
    DelStmt,
    Expression,
    ExpressionStmt,
    ForStmt,
    FuncDef,
    IfStmt,
    IndexExpr,
    ListExpr,
    MatchStmt,
    NameExpr,
    OperatorAssignmentStmt,
    OverloadedFuncDef,
    RaiseStmt,
    RefExpr,
    ReturnStmt,
    StarExpr,
    Statement,
    StrExpr,
    TryStmt,
    TupleExpr,
    TypeAlias,
    Var,
    WhileStmt,
    WithStmt,
)
from mypy.plugin import FunctionContext, Plugin
from mypy.traverser import all_name_and_member_expressions
from mypy.typeops import make_simplified_union, try_getting_str_literals, try_getting_str_literals_from_type
from mypy.types import Instance, LiteralType, TupleType, Type, UninhabitedType, UnionType, get_proper_type

__all__ = ["HOOK_TARGET", "ModularSdkPlugin", "plugin"]

HOOK_TARGET: Final = ErrorCode(
    "modular-hook-target",
    "Check that a before_action target is a host action or 'command:<id>' of the mod",
    "modular-sdk",
)
"""The error code of a bad hook target: ``# type: ignore[modular-hook-target]``."""

_MOD: Final = "modular_sdk._mod"
_LITERAL_ID_PARAMS: Final = {
    f"{_MOD}.slash_command": "id",
    f"{_MOD}.command": "id",
    f"{_MOD}.before_action": "target",
}
_DEFINE_MOD: Final = f"{_MOD}.define_mod"
_MOD_METADATA: Final = f"{_MOD}.ModMetadata"
_COMMAND_CLASSES: Final = (f"{_MOD}.SlashCommand", f"{_MOD}.PaletteCommand")
_HOOK_CLASSES: Final = (f"{_MOD}.BeforeActionHook",)
_HOST_ACTION_MODULE: Final = "modular_sdk._ids"
_HOST_ACTION_ALIAS: Final = "HostAction"
_MAX_DEPTH: Final = 8

_Element = tuple[Context, Type]
"""One element of a commands or hooks sequence: where to report it, and its type."""


class ModularSdkPlugin(Plugin):
    """Types ids as literals and checks ``define_mod`` hook targets (see the module docs)."""

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        param = _LITERAL_ID_PARAMS.get(fullname)
        if param is not None:
            return _literal_id_hook(param)
        if fullname == _DEFINE_MOD:
            return _check_define_mod
        return None


def plugin(version: str) -> type[Plugin]:
    """The mypy entry point: ``plugins = ["modular_sdk.mypy_plugin"]``."""
    return ModularSdkPlugin


# -- literal ids ---------------------------------------------------------------------------


def _argument(ctx: FunctionContext, name: str) -> tuple[Expression, Type] | None:
    """The one expression (and its type) passed for parameter ``name``, if any."""
    if name not in ctx.callee_arg_names:
        return None
    index = ctx.callee_arg_names.index(name)
    if len(ctx.args[index]) != 1:
        return None
    return ctx.args[index][0], ctx.arg_types[index][0]


def _literal_id_hook(param: str) -> Callable[[FunctionContext], Type]:
    def hook(ctx: FunctionContext) -> Type:
        returned = get_proper_type(ctx.default_return_type)
        passed = _argument(ctx, param)
        if passed is None or not isinstance(returned, Instance) or len(returned.args) != 1:
            return ctx.default_return_type
        values = try_getting_str_literals(*passed)
        if not values:
            return ctx.default_return_type
        fallback = ctx.api.named_generic_type("builtins.str", [])
        literal = make_simplified_union(
            [LiteralType(value, fallback) for value in dict.fromkeys(values)]
        )
        return returned.copy_modified(args=[literal])

    return hook


# -- hook targets --------------------------------------------------------------------------


def _check_define_mod(ctx: FunctionContext) -> Type:
    api = ctx.api
    hooks = _argument(ctx, "hooks")
    if not isinstance(api, TypeChecker) or hooks is None:
        return ctx.default_return_type
    host_actions = _host_actions(api)
    if host_actions is None:  # not the SDK we know: leave it to the runtime check
        return ctx.default_return_type
    commands = _argument(ctx, "commands")
    command_ids: list[str] | None = []
    if commands is not None:
        command_ids = _literal_ids(_elements(api, commands[0], None, 0), _COMMAND_CLASSES)
    mod_id = _mod_id(ctx)
    elements = _elements(api, hooks[0], None, 0)
    for where, hook_type in elements[0]:
        for target in _type_literals(hook_type, _HOOK_CLASSES) or ():
            message = _target_problem(target, host_actions, command_ids, mod_id)
            if message is not None:
                api.fail(message, where, code=HOOK_TARGET)
    return ctx.default_return_type


def _target_problem(
    target: str, host_actions: Sequence[str], command_ids: Sequence[str] | None, mod_id: str | None
) -> str | None:
    """The message for a bad target (worded like the runtime check), or None if it is fine.

    ``command_ids`` is None when some command id is not statically known: a ``command:``
    target then cannot be judged.
    """
    if target in host_actions:
        return None
    is_command = target.startswith("command:")
    if command_ids is None and is_command:
        return None
    own = list(dict.fromkeys(command_ids or ()))
    valid = [*host_actions, *(f"command:{ident}" for ident in own)]
    if target in valid:
        return None
    mod = f"mod {mod_id!r}" if mod_id is not None else "this mod"
    if is_command:
        known = ", ".join(repr(c) for c in own) or "none"
        rule = f"names no command of {mod} (its commands: {known})"
        # Compare the ids alone: every 'command:...' target looks alike to difflib.
        close = difflib.get_close_matches(target.removeprefix("command:"), own, n=1, cutoff=0.6)
        found = [f"command:{ident}" for ident in close]
    else:
        rule = "is neither a host action nor 'command:<id>' of this mod"
        found = difflib.get_close_matches(target, valid, n=1, cutoff=0.6)
    suggestion = f"; did you mean {found[0]!r}?" if found else ""
    expected = ", ".join(repr(t) for t in valid)
    if command_ids is None:
        expected += ", 'command:<id>'"
    return f"hook target {target!r} {rule}{suggestion} (expected one of: {expected})"


def _host_actions(api: TypeChecker) -> list[str] | None:
    """The members of the ``HostAction`` literal, read from the SDK being checked."""
    module = api.modules.get(_HOST_ACTION_MODULE)
    symbol = module.names.get(_HOST_ACTION_ALIAS) if module is not None else None
    if symbol is None or not isinstance(symbol.node, TypeAlias):
        return None
    return try_getting_str_literals_from_type(symbol.node.target)


def _mod_id(ctx: FunctionContext) -> str | None:
    """The mod id for messages: ``id=`` or the slug of an inline ``ModMetadata``."""
    passed = _argument(ctx, "id")
    if passed is not None:
        values = try_getting_str_literals(*passed)
        return values[0] if values is not None and len(values) == 1 else None
    metadata = _argument(ctx, "metadata")
    if metadata is None:
        return None
    call = metadata[0]
    if not (
        isinstance(call, CallExpr)
        and isinstance(call.callee, RefExpr)
        and call.callee.fullname == _MOD_METADATA
    ):
        return None
    for name, value in zip(call.arg_names, call.args):
        if name == "display_name" and isinstance(value, StrExpr):
            ident = re.sub(r"[^a-z0-9]+", "-", value.value.lower()).strip("-")
            return ident or None
    return None


def _literal_ids(elements: tuple[list[_Element], bool], classes: Sequence[str]) -> list[str] | None:
    """Every id the elements may carry, or None when one is not statically known."""
    found, complete = elements
    if not complete:
        return None
    ids: list[str] = []
    for _, typ in found:
        values = _type_literals(typ, classes)
        if values is None:
            return None
        ids += values
    return ids


def _type_literals(typ: Type, classes: Sequence[str]) -> list[str] | None:
    """The literal id (or target) type argument of a declaration type, or None if not literal."""
    proper = get_proper_type(typ)
    if isinstance(proper, UninhabitedType):  # the element of an empty list
        return []
    if isinstance(proper, UnionType):
        values: list[str] = []
        for item in proper.items:
            found = _type_literals(item, classes)
            if found is None:
                return None
            values += found
        return values
    if not isinstance(proper, Instance):
        return None
    for base in proper.type.mro:
        if base.fullname in classes:
            mapped = map_instance_to_supertype(proper, base)
            return try_getting_str_literals_from_type(mapped.args[0]) if mapped.args else None
    return None


def _elements(
    api: TypeChecker, expr: Expression, where: Context | None, depth: int
) -> tuple[list[_Element], bool]:
    """The elements of a sequence expression, and whether that list is complete.

    ``where`` is the location to report every element at (the ``hooks=`` argument when the
    elements come from a variable), or None to report each at its own line.
    """
    if depth > _MAX_DEPTH:
        return [], False
    if isinstance(expr, (ListExpr, TupleExpr)):
        found: list[_Element] = []
        complete = True
        for item in expr.items:
            if isinstance(item, StarExpr):
                inner, ok = _elements(api, item.expr, where or item, depth + 1)
            else:
                inner, ok = [(where or item, _type_of(api, item))], True
            found += inner
            complete = complete and ok
        return found, complete
    if isinstance(expr, NameExpr) and isinstance(expr.node, Var):
        initializer = _sole_initializer(api, expr.node)
        if initializer is not None:
            return _elements(api, initializer, where or expr, depth + 1)
    return _elements_of_type(_type_of(api, expr), where or expr)


def _elements_of_type(typ: Type, where: Context) -> tuple[list[_Element], bool]:
    """Elements read from a sequence type: exact for a tuple, one element type otherwise."""
    proper = get_proper_type(typ)
    if isinstance(proper, TupleType):
        return [(where, item) for item in proper.items], True
    if isinstance(proper, Instance):
        for base in proper.type.mro:
            if base.fullname == "typing.Iterable":
                mapped = map_instance_to_supertype(proper, base)
                if len(mapped.args) == 1:
                    return [(where, mapped.args[0])], True
    return [], False


def _type_of(api: TypeChecker, expr: Expression) -> Type:
    """The type mypy inferred for ``expr`` while checking the call (inferred again if absent)."""
    known = api.lookup_type_or_none(expr)
    return known if known is not None else api.get_expression_type(expr)


def _sole_initializer(api: TypeChecker, var: Var) -> Expression | None:
    """The list or tuple display a variable of the checked module is bound to, if that is all.

    None when the variable is defined elsewhere, bound more than once, or possibly mutated
    in this module (``append``, item assignment, ``+=``, ...): its type speaks for it then.
    """
    bindings: list[Expression] = []
    mutated = False

    def binds(lvalue: Expression | None) -> bool:
        if isinstance(lvalue, (TupleExpr, ListExpr)):
            return any(binds(item) for item in lvalue.items)
        if isinstance(lvalue, StarExpr):
            return binds(lvalue.expr)
        if isinstance(lvalue, IndexExpr):  # COMMANDS[0] = ..., del COMMANDS[0]
            return binds(lvalue.base)
        return isinstance(lvalue, NameExpr) and lvalue.node is var

    for statement in _statements(api.tree.defs):
        if isinstance(statement, AssignmentStmt):
            for lvalue in statement.lvalues:
                if isinstance(lvalue, NameExpr) and lvalue.node is var:
                    bindings.append(statement.rvalue)
                elif binds(lvalue):
                    mutated = True
        elif isinstance(statement, OperatorAssignmentStmt):
            mutated = mutated or binds(statement.lvalue)
        elif isinstance(statement, ForStmt):
            mutated = mutated or binds(statement.index)
        elif isinstance(statement, DelStmt):
            mutated = mutated or binds(statement.expr)
        elif isinstance(statement, WithStmt):
            mutated = mutated or any(binds(target) for target in statement.target)
        for expr in _expressions(statement):
            _, members = all_name_and_member_expressions(expr)
            # COMMANDS.append(...), COMMANDS.extend(...), ...
            mutated = mutated or any(binds(member.expr) for member in members)
    if mutated or len(bindings) != 1:
        return None
    value = bindings[0]
    return value if isinstance(value, (ListExpr, TupleExpr)) else None


def _statements(statements: Sequence[Statement]) -> Iterator[Statement]:
    """Every statement, nested ones included (function and class bodies too)."""
    for statement in statements:
        yield statement
        yield from _statements(_blocks(statement))


def _blocks(s: Statement) -> list[Statement]:
    """The statements (mostly blocks) directly nested in ``s``."""
    if isinstance(s, Block):
        return list(s.body)
    if isinstance(s, IfStmt):
        return [*s.body, *([s.else_body] if s.else_body else [])]
    if isinstance(s, (WhileStmt, ForStmt)):
        return [s.body, *([s.else_body] if s.else_body else [])]
    if isinstance(s, WithStmt):
        return [s.body]
    if isinstance(s, TryStmt):
        optional = [s.else_body, s.finally_body]
        return [s.body, *s.handlers, *(b for b in optional if b is not None)]
    if isinstance(s, FuncDef):
        return [s.body]
    if isinstance(s, Decorator):
        return [s.func]
    if isinstance(s, OverloadedFuncDef):
        return [*s.items, *([s.impl] if s.impl else [])]
    if isinstance(s, ClassDef):
        return [s.defs]
    if isinstance(s, MatchStmt):
        return list(s.bodies)
    return []


def _expressions(s: Statement) -> list[Expression]:
    """The expressions directly in ``s`` (not in its nested statements)."""
    found: list[Expression | None]
    if isinstance(s, ExpressionStmt):
        found = [s.expr]
    elif isinstance(s, AssignmentStmt):
        found = [*s.lvalues, s.rvalue]
    elif isinstance(s, OperatorAssignmentStmt):
        found = [s.lvalue, s.rvalue]
    elif isinstance(s, ReturnStmt):
        found = [s.expr]
    elif isinstance(s, AssertStmt):
        found = [s.expr, s.msg]
    elif isinstance(s, RaiseStmt):
        found = [s.expr, s.from_expr]
    elif isinstance(s, DelStmt):
        found = [s.expr]
    elif isinstance(s, IfStmt):
        found = list(s.expr)
    elif isinstance(s, WhileStmt):
        found = [s.expr]
    elif isinstance(s, ForStmt):
        found = [s.index, s.expr]
    elif isinstance(s, WithStmt):
        found = [*s.expr, *s.target]
    elif isinstance(s, MatchStmt):
        found = [s.subject, *s.guards]
    elif isinstance(s, Decorator):
        found = list(s.decorators)
    elif isinstance(s, FuncDef):
        found = [a.initializer for a in s.arguments]
    else:
        found = []
    return [e for e in found if e is not None]
