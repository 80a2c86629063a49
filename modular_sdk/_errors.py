"""The error tree of modular-sdk.

Every error a mod author or host integrator can catch derives from `ModularError`, and
also from the builtin it resembles, so ``except ValueError`` keeps working::

    ModularError
    ├── ModDefinitionError      (ValueError)    a declaration breaks a rule
    ├── SerializationError      (ValueError)    JSON that is not one of our values
    ├── InvalidArgumentError    (TypeError, ValueError) a bad argument to a host method or message
    ├── NoConversationError     (RuntimeError)  fork of a session with no completed turn
    ├── SpawnContextError       (RuntimeError)  spawn outside a command or tool handler
    ├── TurnFailedError         (RuntimeError)  the model or a tool failed the turn
    ├── ReentrantTurnError      (RuntimeError)  a handler sent to the session it runs in
    ├── ReplyValidationError    (ValueError)    a reply does not match ``output_type``
    ├── ActionDeniedError       (PermissionError) a ``before_action`` hook said ``Deny``
    ├── UnknownSessionError     (LookupError)   no session by that id
    ├── UnknownTurnError        (LookupError)   no turn or message by that id
    ├── SessionDeletedError     (RuntimeError)  a send, fork or spawn from a deleted session
    ├── HostClosedError         (RuntimeError)  an operation on a host that is closed
    ├── ActionStateError        (RuntimeError)  a proposed action confirmed twice or after dismissal
    └── ManifestBuildError      (RuntimeError)  the build-time fold refused a module

Each error carries the offending value as an attribute, and its message says what was
wrong and what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ActionDeniedError",
    "ActionStateError",
    "HostClosedError",
    "InvalidArgumentError",
    "ManifestBuildError",
    "ModDefinitionError",
    "ModularError",
    "NoConversationError",
    "ReentrantTurnError",
    "ReplyValidationError",
    "SerializationError",
    "SessionDeletedError",
    "SpawnContextError",
    "TurnFailedError",
    "UnknownSessionError",
    "UnknownTurnError",
]


class ModularError(Exception):
    """Base class of every error raised by modular-sdk and the host simulator."""


class ModDefinitionError(ModularError, ValueError):
    """A declaration breaks a rule: a mod and its parts, or any frozen value of this package
    (a message, a lineage record, an author, a decision) built with bad arguments.

    ``field`` names the offending field (``"commands[1].id"``), ``value`` is the offending
    value. When `define_mod` finds several problems it raises one `ModDefinitionError` whose
    message lists them all and whose ``problems`` holds one `ModDefinitionError` each.
    """

    field: str | None
    value: object
    problems: tuple[ModDefinitionError, ...]

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: object = None,
        problems: Sequence[ModDefinitionError] = (),
    ) -> None:
        super().__init__(message)
        self.field = field
        self.value = value
        self.problems = tuple(problems) if problems else (self,)


class SerializationError(ModularError, ValueError):
    """JSON data that does not describe one of our values.

    ``value`` is the offending JSON value and ``type_name`` the type it was read as.
    """

    def __init__(self, message: str, *, value: object = None, type_name: str = "") -> None:
        super().__init__(message)
        self.value = value
        self.type_name = type_name


class InvalidArgumentError(ModularError, TypeError, ValueError):
    """A bad argument to a message constructor or a host method (wrong type, or a value it cannot take).

    ``argument`` names it (``"model"``, ``"text"``), ``value`` is what was passed. It is
    both a `TypeError` and a `ValueError`, so code catching either keeps working.
    """

    def __init__(self, message: str, *, argument: str, value: object = None) -> None:
        super().__init__(message)
        self.argument = argument
        self.value = value


class NoConversationError(ModularError, RuntimeError):
    """A fork of a session (or at a turn) with no completed turn to copy.

    ``session_id`` names the session.
    """

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class SpawnContextError(ModularError, RuntimeError):
    """`AiSessionHandle.spawn` called outside a command or tool handler."""

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class TurnFailedError(ModularError, RuntimeError):
    """A turn failed: the model or a tool raised, timed out, or was cancelled.

    ``turn_id`` names the failed turn, ``reason`` says why.
    """

    def __init__(self, message: str, *, turn_id: str, reason: str) -> None:
        super().__init__(message)
        self.turn_id = turn_id
        self.reason = reason


class ReentrantTurnError(ModularError, RuntimeError):
    """A handler running inside a turn of a session sent a message to that same session.

    The turn would wait for itself; the host refuses at once instead of deadlocking.
    """

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class ReplyValidationError(ModularError, ValueError):
    """A model reply does not match the ``output_type`` asked of `AiSessionHandle.run`.

    ``raw`` is the reply text exactly as the model gave it; it is never coerced.
    """

    def __init__(self, message: str, *, raw: str, output_type: str) -> None:
        super().__init__(message)
        self.raw = raw
        self.output_type = output_type


class ActionDeniedError(ModularError, PermissionError):
    """A ``before_action`` hook answered `Deny`; ``reason`` is what it said."""

    def __init__(self, message: str, *, action: str, reason: str, mod_id: str) -> None:
        super().__init__(message)
        self.action = action
        self.reason = reason
        self.mod_id = mod_id


class UnknownSessionError(ModularError, LookupError):
    """No session has this id; ``session_id`` is the id asked for."""

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])


class UnknownTurnError(ModularError, LookupError):
    """No turn or message has this id in this host; ``id`` is the id asked for."""

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])


class UnknownRecordError(ModularError, LookupError):
    """No memory record has this id in this host; ``id`` is the id asked for (docs/memory.md)."""

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])


class SessionDeletedError(ModularError, RuntimeError):
    """The session was deleted (``sessions.delete``, on any host sharing the store): nothing
    more may be sent to it, forked or spawned from it. ``session_id`` is the deleted session.

    Its history stays readable (erased) and ``sessions.get`` still returns it, with
    ``deleted_at`` set; its forks made before the deletion keep working.
    """

    def __init__(self, message: str, *, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class HostClosedError(ModularError, RuntimeError):
    """An operation was asked of a host (or a handle of one) that is not open.

    ``state`` is the host's state: ``"new"`` (not entered yet) or ``"closed"``; ``"open"``
    when a host already entered is entered again (a `Host` opens once).
    """

    def __init__(self, message: str, *, state: str = "closed") -> None:
        super().__init__(message)
        self.state = state


class ActionStateError(ModularError, RuntimeError):
    """A proposed action cannot move to the state asked: confirmed twice, or after dismissal.

    ``action_id`` names the action, ``state`` is the state it is in: ``"pending"`` (its mod
    is not loaded, or its payload no longer fits), ``"confirmed"``, ``"dismissed"``,
    ``"unknown"``, ``"erased"`` (the turn that proposed it was forgotten or
    its session deleted: its payload is gone) or ``"deleted"`` (proposed in a session that
    was deleted since; confirming is refused, dismissing is not).
    """

    def __init__(self, message: str, *, action_id: str, state: str) -> None:
        super().__init__(message)
        self.action_id = action_id
        self.state = state


class ManifestBuildError(ModularError, RuntimeError):
    """The build-time fold refused a mod module.

    ``spec`` is the mod spec, ``problems`` one line per reason (an impure statement with
    its ``file:line``, an import error, a missing attribute ...).
    """

    def __init__(self, message: str, *, spec: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.spec = spec
        self.problems = tuple(problems)
