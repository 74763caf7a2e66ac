"""Traces of a run in OpenTelemetry, off unless the environment asks for them.

A run is traced when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is
set (the variables every OpenTelemetry SDK reads; `OTEL_SDK_DISABLED=true` or
`OTEL_TRACES_EXPORTER=none` turn it off again) and the `gitswarm[otel]` extra is installed. The
spans are built from the run's events (`telemetry.spans`) and sent over OTLP/HTTP by the SDK's
exporter, which reads the rest of its settings (headers, timeout, compression) from the same
environment. Until a run is traced, nothing of `opentelemetry` is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio

from gitswarm.core.events import Listener

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""Either turns tracing on; the exporter sends to the first set (the second + `/v1/traces`)."""
MISSING = ("gitswarm: {name} is set, but the tracing packages are not installed "
           "(pip install 'gitswarm[otel]'): this run sends no traces")


def wanted(env: Mapping[str, str] = os.environ) -> str | None:
    """The variable that asks for traces, or None when none does (or tracing is switched off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    return next((name for name in ENDPOINTS if env.get(name, "").strip()), None)


@asynccontextmanager
async def traced(listeners: list[Listener]) -> AsyncIterator[list[Listener]]:
    """`listeners`, with a tracer among them when the environment asks for traces; on leaving,
    the spans still open are ended as cut and every span is sent (the SDK's exporter bounds
    that by `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default, off the event loop)."""
    name = wanted()
    if name is None:
        yield listeners
        return
    try:
        from gitswarm.telemetry.spans import Spans, provider
    except ImportError:
        print(MISSING.format(name=name), file=sys.stderr)
        yield listeners
        return
    sdk = provider()
    spans = Spans(sdk.get_tracer("gitswarm"))
    try:
        yield [*listeners, spans]
    finally:
        spans.close()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(sdk.shutdown)
