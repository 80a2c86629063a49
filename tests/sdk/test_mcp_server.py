"""`mcp_server(...)`: an MCP server a mod declares is checked, frozen data (API.md section 16)."""

from __future__ import annotations

import attrs
import pytest

from modular_sdk import AiContributions, McpServer, ModDefinitionError, ModMetadata, define_mod, mcp_server


def test_a_stdio_server_is_frozen_data_with_its_transport() -> None:
    server = mcp_server(id="files", command="python", args=["files.py", "--root", "."], env={"LEVEL": "1"}, description="Files")
    assert isinstance(server, McpServer) and server.transport == "stdio"
    assert server.args == ("files.py", "--root", ".") and dict(server.env or {}) == {"LEVEL": "1"}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        server.command = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        server.env["LEVEL"] = "2"  # type: ignore[index]


def test_an_http_server_has_the_http_transport() -> None:
    server = mcp_server(id="search", url="https://example.test/mcp", description="Search")
    assert server.transport == "http" and server.command is None and server.args == ()


def test_equal_declarations_give_equal_mods() -> None:
    def make() -> object:
        return define_mod(
            metadata=ModMetadata(display_name="Files", description="Files"),
            ai=AiContributions(mcp_servers=[mcp_server(id="files", command="python", args=["f.py"], description="Files")]),
        )

    assert make() == make()


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({}, "command", "needs exactly one of command"),
        ({"command": "python", "url": "http://x/mcp"}, "command", "needs exactly one of command"),
        ({"url": "ftp://x/mcp"}, "url", "must be an http:// or https:// address"),
        ({"url": "http://x/mcp", "args": ["-v"]}, "args", "args and env belong to a stdio server"),
        ({"command": "python", "args": "server.py"}, "args", "args must be a list of str"),
        ({"command": "python", "env": {"A": 1}}, "env", "env maps variable names to str values"),
        ({"command": ""}, "command", "command must not be empty"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_field(arguments: dict[str, object], field: str, message: str) -> None:
    with pytest.raises(ModDefinitionError, match=message) as raised:
        mcp_server(id="files", description="Files", **arguments)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert "mcp_server(id='files')" in str(raised.value)


def test_an_id_with_a_dot_is_refused_because_it_separates_server_and_tool() -> None:
    with pytest.raises(ModDefinitionError, match=r"MCP server id 'my\.files' holds '\.'") as raised:
        mcp_server(id="my.files", command="python", description="Files")
    assert raised.value.field == "id" and raised.value.value == "my.files"


def test_an_empty_description_and_a_bad_id_are_refused() -> None:
    with pytest.raises(ModDefinitionError, match="MCP server id 'Bad Id' is not a valid id"):
        mcp_server(id="Bad Id", command="python", description="Files")
    with pytest.raises(ModDefinitionError, match="description must not be empty"):
        mcp_server(id="files", command="python", description=" ")


def test_two_servers_with_one_id_are_refused() -> None:
    server = mcp_server(id="files", command="python", description="Files")
    with pytest.raises(ModDefinitionError, match="MCP server id 'files' is declared twice") as raised:
        AiContributions(mcp_servers=[server, server])
    assert raised.value.field == "mcp_servers[1].id"


def test_mcp_servers_must_be_made_by_mcp_server() -> None:
    with pytest.raises(ModDefinitionError, match=r"mcp_servers\[0\] must be made by mcp_server"):
        AiContributions(mcp_servers=[{"id": "files"}])  # type: ignore[list-item]
    with pytest.raises(ModDefinitionError, match="mcp_servers must be a list or tuple"):
        AiContributions(mcp_servers="files")  # type: ignore[arg-type]
