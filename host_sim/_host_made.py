"""Classes whose instances only the host makes (handles, the trace service, job handles).

Below every folder of host_sim, so sessions, traces and the jobs all use it without importing
one another.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from modular_sdk import InvalidArgumentError

__all__ = ["NoPublicConstructor"]

C = TypeVar("C")


class NoPublicConstructor(type):
    """Metaclass refusing ``Cls(...)``: instances come from ``Cls._create(...)`` (host only)."""

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise InvalidArgumentError(
            f"{cls.__module__}.{cls.__qualname__} has no public constructor; "
            f"{(cls.__doc__ or '').strip().splitlines()[-1].strip()}",
            argument=cls.__qualname__,
            value=None,
        )

    def _create(cls: type[C], *args: Any, **kwargs: Any) -> C:
        return super().__call__(*args, **kwargs)  # type: ignore[misc, no-any-return]
