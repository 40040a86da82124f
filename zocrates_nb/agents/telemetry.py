"""OpenTelemetry for the agents: pydantic-ai's instrumentation switched to match
`telemetry.otel`, never recording message content."""

from __future__ import annotations

import os
import threading
import weakref

from zocrates_nb.config import Settings
from zocrates_nb.redaction import safe_url

# pydantic-ai's switch is process-wide while each App has its own config: it is on while any
# live owner (an App's model registry) asks for it, so one App's config never switches another's
# spans off.
_WANTED: weakref.WeakSet[object] = weakref.WeakSet()
_LOCK = threading.Lock()


def configure_telemetry(settings: Settings, owner: object | None = None) -> str:
    """Switch pydantic-ai's OpenTelemetry instrumentation to match `telemetry.otel` of `owner`
    (with every other live owner's wish: on while any of them wants it).

    Spans carry no message content (no paper text, no prompts). They go to the global tracer
    provider; if none is set and OTEL_EXPORTER_OTLP_ENDPOINT is, an OTLP exporter is installed.
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    with _LOCK:
        if owner is not None:
            if settings.telemetry.otel:
                _WANTED.add(owner)
            else:
                _WANTED.discard(owner)
        on = settings.telemetry.otel or bool(len(_WANTED))
        Agent.instrument_all(InstrumentationSettings(include_content=False) if on else False)
    if not settings.telemetry.otel:
        also = " (another App in this process has it on)" if on else ""
        return f"OpenTelemetry instrumentation is off (telemetry.otel is false){also}"
    note = _ensure_tracer_provider()
    return f"OpenTelemetry instrumentation is on (content not recorded); {note}"


def release_telemetry(owner: object) -> None:
    """`owner` (a closing App's registry) no longer wants spans: off unless another does."""
    from pydantic_ai import Agent

    with _LOCK:
        if owner in _WANTED:
            _WANTED.discard(owner)
            if not len(_WANTED):
                Agent.instrument_all(False)


def _ensure_tracer_provider() -> str:
    from opentelemetry import trace

    current = trace.get_tracer_provider()
    if type(current).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
        return "spans go to the application's tracer provider"
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint:
        return (
            "no tracer provider is configured: set OTEL_EXPORTER_OTLP_ENDPOINT (or configure "
            "OpenTelemetry in the host application) to export spans"
        )
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        return (f"cannot export spans: {e.name or e} is not installed "
                "(pip install 'zocrates-nb[telemetry]')")
    provider = TracerProvider(resource=Resource.create({"service.name": "zocrates-nb"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return f"spans are exported over OTLP to {safe_url(endpoint)}"
