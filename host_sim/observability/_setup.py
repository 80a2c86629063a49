"""Which `Telemetry` a host reports through, chosen when it opens."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from modular_sdk import InvalidArgumentError

from ._telemetry import NO_TELEMETRY, Telemetry

if TYPE_CHECKING:
    from ..models._protocol import Model

__all__ = ["telemetry_for"]


@functools.cache
def _api_installed() -> bool:
    """Whether opentelemetry-api imports (asked once: a failed import is not remembered by Python)."""
    try:
        import opentelemetry.trace  # noqa: F401  (the API: the global providers live there)
    except ImportError:
        return False
    return True


def telemetry_for(tracer_provider: object, meter_provider: object, model: Model) -> Telemetry:
    """The telemetry a host opening now reports through: the given providers, else the
    global ones when opentelemetry-api is installed, else none (nothing imported).

    Raises `InvalidArgumentError` when a provider is given and opentelemetry-api is not installed.
    """
    if tracer_provider is None and meter_provider is None and not _api_installed():
        return NO_TELEMETRY
    try:
        from ._otel import OtelTelemetry
    except ImportError as missing:
        argument = "tracer_provider" if tracer_provider is not None else "meter_provider"
        raise InvalidArgumentError(
            f"Host's {argument} needs opentelemetry-api, which cannot be imported ({missing}); "
            "install it with pip install 'modular-chat-sdk[otel]'",
            argument=argument,
            value=tracer_provider if tracer_provider is not None else meter_provider,
        ) from None
    return OtelTelemetry.create(tracer_provider, meter_provider, model) or NO_TELEMETRY
