"""The error of a job id nobody knows: below the jobs and the scope checks that both raise it."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["UnknownJobError"]


class UnknownJobError(ModularError, LookupError):
    """No job has this id in the host's store; ``id`` is the id asked for."""

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])
