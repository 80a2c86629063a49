"""The ``mcp`` package is an optional extra: one check, one error, for both directions."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["McpUnavailableError", "require_mcp"]


class McpUnavailableError(ModularError, ImportError):
    """The ``mcp`` package is not installed (the extra ``mcp``)."""


def require_mcp(what: str) -> None:
    """Raise `McpUnavailableError`, naming the extra, when the ``mcp`` package is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise McpUnavailableError(
            f"{what} needs the 'mcp' package, which is not installed; install the extra: "
            "pip install 'modular-chat-sdk[mcp]'"
        ) from None
