"""Type tests for Host's OpenTelemetry providers (API §15): the SDK's providers are accepted,
anything else is a type error. Checked by mypy, never run.
"""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from host_sim import Host

Host(tracer_provider=TracerProvider(), meter_provider=MeterProvider())
Host(tracer_provider=trace.get_tracer_provider(), meter_provider=metrics.get_meter_provider())
Host(tracer_provider=None, meter_provider=None)
Host(tracer_provider="otel")  # type: ignore[arg-type]
Host(meter_provider=TracerProvider())  # type: ignore[arg-type]
