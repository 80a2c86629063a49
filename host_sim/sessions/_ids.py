"""Fresh identifiers for sessions, turns and messages."""

from __future__ import annotations

import secrets

from modular_sdk import SessionId, TurnId

__all__ = ["new_call_id", "new_host_id", "new_invocation_id", "new_job_id", "new_message_id", "new_session_id", "new_turn_id"]


def new_session_id() -> SessionId:
    return SessionId(f"ses_{secrets.token_hex(6)}")


def new_turn_id() -> TurnId:
    return TurnId(f"turn_{secrets.token_hex(6)}")


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
