"""Fresh identifiers for sessions, turns and messages."""

from __future__ import annotations

import hashlib
import secrets

from modular_sdk import InvalidArgumentError, SessionId, TurnId
from modular_sdk._rules import show

__all__ = ["checked_request_id", "job_id_for", "turn_id_for", "new_call_id", "new_host_id", "new_invocation_id", "new_job_id", "new_message_id", "new_session_id", "new_turn_id"]


def new_session_id() -> SessionId:
    return SessionId(f"ses_{secrets.token_hex(6)}")


def new_turn_id() -> TurnId:
    return TurnId(f"turn_{secrets.token_hex(6)}")


def turn_id_for(session_id: str, request_id: str) -> TurnId:
    """The id of the turn a send with ``request_id`` makes in session ``session_id``: the same for
    every retry, so the store's key on turn ids keeps one turn per request (docs/embedding.md)."""
    return TurnId(f"turn_{_digest(session_id, request_id)}")


def job_id_for(session_id: str, request_id: str) -> str:
    """The id of the job a start with ``request_id`` makes in session ``session_id`` (as `turn_id_for`)."""
    return f"job_{_digest(session_id, request_id)}"


def checked_request_id(request_id: object) -> str:
    """``request_id`` if it is a usable key: a non-empty str of at most 256 characters without NUL."""
    if not isinstance(request_id, str) or not request_id or len(request_id) > 256 or "\x00" in request_id:
        raise InvalidArgumentError(
            f"request_id must be None or a non-empty str of at most 256 characters without NUL, got "
            f"{show(request_id)}; pass the caller's key for this request (e.g. a UUID), the same on every retry",
            argument="request_id",
            value=request_id,
        )
    return request_id


def _digest(session_id: str, request_id: str) -> str:
    return hashlib.sha256(f"{session_id}\x00{request_id}".encode()).hexdigest()[:12]


def new_message_id() -> str:
    return f"msg_{secrets.token_hex(6)}"


def new_call_id() -> str:
    return f"call_{secrets.token_hex(6)}"


def new_invocation_id() -> str:
    return f"inv_{secrets.token_hex(6)}"


def new_job_id() -> str:
    return f"job_{secrets.token_hex(6)}"


def new_host_id() -> str:
    return f"host_{secrets.token_hex(6)}"
