"""`mcp_server`: a mod declares an MCP server whose tools its sessions may use (docs/mcp.md).

Data only, like every declaration: nothing starts at import or build. The host connects
when a session first needs tools (a stdio subprocess for ``command``, streamable HTTP for
``url``), lists the server's tools and offers them to the model as ``{id}.{tool}``.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Mapping
from typing import Final, Literal

import attrs

from ._rules import Problem, check_id, check_text, raise_problems, show, unstorable_text

__all__ = ["McpServer", "mcp_server"]


def _args(value: Iterable[str]) -> tuple[str, ...]:
    given: object = value
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        return _NotArgs(given)
    return tuple(value)


class _NotArgs(tuple[str, ...]):
    """What ``args`` holds when it was given no sequence (``args="-v"``), for the check."""

    value: object

    def __new__(cls, value: object) -> _NotArgs:
        self = super().__new__(cls, ())
        self.value = value
        return self


def _names(value: Iterable[str]) -> tuple[str, ...]:
    given: object = value
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        return _NotArgs(given)
    return tuple(value)


_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
"""A tool name as MCP servers write them (and as the host offers them, after ``{id}.``)."""


def _env(value: Mapping[str, str] | None) -> Mapping[str, str] | None:
    if value is None or not isinstance(value, Mapping):
        return value
    return types.MappingProxyType(dict(value))


@attrs.frozen(kw_only=True)
class McpServer:
    """An MCP server a mod uses, for ``AiContributions(mcp_servers=[...])``. Immutable; make
    one with `mcp_server`.

    Exactly one of ``command`` (with ``args`` and ``env``: a stdio server the host starts as
    a subprocess) and ``url`` (a streamable HTTP endpoint) is set; ``transport`` says which.
    ``read_only_tools`` names the server's tools that run without the user's confirmation;
    ``trust_annotations`` also lets a tool the server annotates ``readOnlyHint`` run so.
    """

    id: str
    description: str
    command: str | None = None
    args: tuple[str, ...] = attrs.field(default=(), converter=_args)
    env: Mapping[str, str] | None = attrs.field(default=None, converter=_env, hash=False)
    url: str | None = None
    read_only_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    trust_annotations: bool = False

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``"stdio"`` for a ``command``, ``"http"`` for a ``url``."""
        return "stdio" if self.command is not None else "http"

    def __attrs_post_init__(self) -> None:
        problems = check_id("id", self.id, "MCP server id") + check_text("description", self.description)
        if isinstance(self.id, str) and "." in self.id:
            problems.append(
                Problem(
                    "id",
                    self.id,
                    f"MCP server id {show(self.id)} holds '.', which separates it from tool names "
                    "('{id}.{tool}'); use '-' or '_' instead",
                )
            )
        if (self.command is None) == (self.url is None):
            problems.append(
                Problem(
                    "command",
                    (self.command, self.url),
                    f"an MCP server needs exactly one of command (a stdio server the host starts) and url "
                    f"(a streamable HTTP endpoint), got command={show(self.command)} and url={show(self.url)}; "
                    "pass command='python', args=['server.py'] or url='http://127.0.0.1:8765/mcp'",
                )
            )
        if self.command is not None:
            problems += check_text("command", self.command)
        if isinstance(self.args, _NotArgs):
            problems.append(
                Problem("args", self.args.value, f"args must be a list of str, got {show(self.args.value)}; pass args=['server.py']")
            )
        for index, arg in enumerate(self.args):
            if not isinstance(arg, str) or unstorable_text(arg) is not None or "\x00" in arg:
                problems.append(Problem(f"args[{index}]", arg, f"args[{index}] must be text, got {show(arg)}"))
        if self.command is None and (self.args or self.env is not None):
            problems.append(
                Problem("args", self.args, "args and env belong to a stdio server (command=...); an HTTP server (url=...) takes neither")
            )
        env: object = self.env  # checked: callers may pass anything
        if env is not None:
            if not isinstance(env, Mapping):
                problems.append(
                    Problem("env", env, f"env must map str to str, got {show(env)}; pass env={{'TOKEN_FILE': '...'}}")
                )
            else:
                for key, value in env.items():
                    if not isinstance(key, str) or not key or not isinstance(value, str) or "=" in key:
                        problems.append(
                            Problem("env", env, f"env maps variable names to str values, got {show(key)}: {show(value)}")
                        )
        if self.url is not None:
            if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
                problems.append(
                    Problem("url", self.url, f"url must be an http:// or https:// address of a streamable HTTP MCP endpoint, got {show(self.url)}")
                )
        if isinstance(self.read_only_tools, _NotArgs):
            problems.append(
                Problem(
                    "read_only_tools",
                    self.read_only_tools.value,
                    f"read_only_tools must be a list of tool names, got {show(self.read_only_tools.value)}; "
                    "pass read_only_tools=['search']",
                )
            )
        for index, name in enumerate(self.read_only_tools):
            if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
                problems.append(
                    Problem(
                        f"read_only_tools[{index}]",
                        name,
                        f"read_only_tools[{index}] must name a tool as the server lists it (letters, digits, "
                        f"'_', '-', '.', at most 64), got {show(name)}; pass e.g. read_only_tools=['search']",
                    )
                )
            elif name in self.read_only_tools[:index]:
                problems.append(Problem(f"read_only_tools[{index}]", name, f"read_only_tools names {show(name)} twice; name it once"))
        trust: object = self.trust_annotations  # checked: callers may pass anything
        if not isinstance(trust, bool):
            problems.append(
                Problem(
                    "trust_annotations",
                    trust,
                    f"trust_annotations must be True or False, got {show(trust)}",
                )
            )
        raise_problems(f"mcp_server(id={show(self.id)})", problems)


def mcp_server(
    *,
    id: str,
    command: str | None = None,
    args: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    description: str,
    read_only_tools: Iterable[str] = (),
    trust_annotations: bool = False,
) -> McpServer:
    """Declare an MCP server whose tools the model may call, for ``AiContributions(mcp_servers=[...])``.

    Give ``command`` (and ``args``, ``env``: extra environment variables) for a server the
    host starts as a subprocess speaking MCP over stdio, or ``url`` for a streamable HTTP
    endpoint; exactly one. Data only: nothing starts at import or build. At runtime the host
    connects when a session first needs tools and offers each tool as ``{id}.{tool}``.

    A tool runs when the model calls it only when this declaration says it only reads:
    it is named in ``read_only_tools``, or ``trust_annotations=True`` and the server
    annotates it ``readOnlyHint`` (a server's annotation alone is a hint, not a permission:
    a server may lie). Every other call waits for the user to confirm it (``host.confirm``).
    The host checks again at each call, against the tool as the server lists it then.

    Raises `ModDefinitionError` for a bad id, an empty description, both or neither of
    ``command`` and ``url``, a ``url`` that is not http(s), ``read_only_tools`` that is not
    a list of distinct tool names, or ``trust_annotations`` that is not a bool.

    >>> files = mcp_server(id="files", command="python", args=["files_server.py"], description="Project files",
    ...                    read_only_tools=["read_file", "search"])
    """
    return McpServer(
        id=id,
        command=command,
        args=args,
        env=env,
        url=url,
        description=description,
        read_only_tools=read_only_tools,
        trust_annotations=trust_annotations,
    )
