"""OpenTelemetry, switched on in the config: spans name the role and the pipeline phase, and no
span carries paper text, prompts or API keys."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import (
    Recorder,
    coordinator_search,
    index_small_library,
    run,
    search_then,
    terminal,
)
from conftest import LibraryBuilder


@pytest.fixture
def spans() -> Iterator[Any]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent

    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        pytest.skip("another tracer provider is installed in this process")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.clear()
    exporter.shutdown()
    Agent.instrument_all(False)


def test_spans_name_roles_and_phases_without_content(
    tmp_path: Path, spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zocrates_nb.app import App

    index = index_small_library(LibraryBuilder(tmp_path / "library"), tmp_path / "index-home")
    monkeypatch.setenv("ZOCRATES_TEST_SECRET_KEY", "sk-test-secret-value-1234567890")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "zocrates_config.json").write_text(
        json.dumps({"telemetry": {"otel": True}})
    )
    rec = Recorder()
    app = App.open(
        tmp_path / "home",
        index=index,
        role_models={
            "coordinator": rec.wrap("coordinator", coordinator_search),
            "search": rec.wrap("search", search_then(["randomized election timeouts"])),
        },
    )
    final = terminal(run(app.ask("How does Raft elect a leader?", hitl=False)))
    assert final.type == "final"
    names = {s.name for s in spans.get_finished_spans()}
    assert {"invoke_agent coordinator", "invoke_agent search", "invoke_agent synthesizer"} <= names
    assert {"zocrates.search", "zocrates.rerank", "zocrates.synthesize"} <= names
    phase = next(s for s in spans.get_finished_spans() if s.name == "zocrates.search")
    assert phase.attributes["zocrates.role"] == "search"
    dump = json.dumps([dict(s.attributes or {}) for s in spans.get_finished_spans()], default=str)
    assert "randomized election timeouts" not in dump  # no prompts or tool arguments
    assert "Raft elects a leader" not in dump  # no paper text
    assert "sk-test-secret" not in dump
    index.close()


def test_two_apps_with_different_telemetry_do_not_switch_each_other(tmp_path: Path) -> None:
    """pydantic-ai's instrumentation switch is process-wide: an App whose config has it off,
    opened (or reloaded) after one that has it on, must not turn the other's spans off."""
    from pydantic_ai import Agent

    from zocrates_nb.app import App

    def instrumented() -> bool:
        return bool(Agent._instrument_default)

    gc.collect()  # Apps of earlier tests, unreachable now, want nothing any more
    Agent.instrument_all(False)
    try:
        on = App.open(tmp_path / "on", telemetry__otel=True)
        assert on.settings.telemetry.otel and instrumented()
        off = App.open(tmp_path / "off")
        assert not off.settings.telemetry.otel
        assert instrumented()  # the first App's spans go on
        assert "another App in this process has it on" in off.registry.telemetry_status
        (tmp_path / "on" / "zocrates_config.json").write_text(
            json.dumps({"telemetry": {"otel": False}})
        )
        on.close()
        on = App.open(tmp_path / "on")  # no App wants it any more: off
        assert not on.settings.telemetry.otel and not instrumented()
        on.close()
        off.close()
    finally:
        Agent.instrument_all(False)
