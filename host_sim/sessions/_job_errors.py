"""The error of a job id nobody knows: below the jobs and the scope checks that both raise it."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["UnknownJobError", "unknown_job"]


class UnknownJobError(ModularError, LookupError):
    """No job has this id in the host's store; ``id`` is the id asked for."""

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])


def unknown_job(job_id: str) -> UnknownJobError:
    """What the host answers for a job id it does not hold (or a scope does not see)."""
    return UnknownJobError(
        f"no job {job_id!r} is in this host's store; pass the id of a Job that host.start "
        "returned (host.jobs() lists them)",
        id=job_id,
    )
