"""Model configuration: validation naming keys, overrides, roles, thinking, hot reload, costs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

from zocrates_nb.agents.models import (
    OFFLINE_DISPLAY,
    ModelConfigError,
    ModelRegistry,
    cost_usd,
    describe_model_error,
    doctor_info,
    is_local_url,
    ollama_can_think,
    redact,
    resolve_model,
    role_spec,
    thinking_setting,
)
from zocrates_nb.config import ROLES, ConfigError, ConfigWatcher, load_settings

SECRET = "sk-zoc-cfg-0123456789abcdefSECRET"


def write(home: Path, data: dict[str, Any]) -> None:
    path = home / "zocrates_config.json"
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(json.dumps(data))
    if path.stat().st_mtime_ns == before:  # coarse clocks: make the edit visible
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ZOCRATES_") and name != "ZOCRATES_HOME":
            monkeypatch.delenv(name)


def test_no_model_configured_means_the_offline_engine_everywhere(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    for role in ROLES:
        resolved = registry.resolve(role)
        assert resolved.model is None and resolved.is_offline and not resolved.is_cloud
        assert resolved.display_name == OFFLINE_DISPLAY
    info = registry.doctor_info()
    assert info["any_cloud"] is False and info["offline"] is True
    assert "nothing leaves this machine" in info["summary"]


def test_roles_inherit_the_base_unless_pinned(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "models": {
                "base": {"model": "openai:gpt-5.2", "api_key_env": "MY_OPENAI"},
                "search": {"model": "ollama:qwen3", "thinking": "off"},
                "verifier": "offline",
                "synthesizer": {"thinking": "xhigh"},
            }
        },
    )
    s = load_settings(tmp_path)
    coord, search, synth, verifier, online_search, online_synth = (role_spec(s, r) for r in ROLES)
    assert (coord.model_string, coord.config_key, coord.api_key_env) == (
        "openai:gpt-5.2",
        "models.base",
        "MY_OPENAI",
    )
    assert (coord.thinking, coord.thinking_explicit) == ("medium", False)  # role default
    assert (search.model_string, search.config_key, search.thinking) == (
        "ollama:qwen3",
        "models.search",
        "off",
    )
    assert search.api_key_env is None and not search.is_cloud  # a pinned role does not inherit
    assert (synth.model_string, synth.thinking, synth.thinking_explicit) == (
        "openai:gpt-5.2",
        "xhigh",
        True,
    )
    assert verifier.offline and not verifier.is_cloud
    # Discovery's roles inherit the base like the others, with their own thinking defaults.
    for spec, level in ((online_search, "low"), (online_synth, "high")):
        assert (spec.model_string, spec.config_key, spec.thinking) == (
            "openai:gpt-5.2", "models.base", level)  # fmt: skip
    info = doctor_info(s)
    assert info["any_cloud"] is True and info["roles"]["verifier"]["cloud"] is False
    assert "https://api.openai.com/v1" in info["summary"]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"models": {"base": "gpt-4o"}}, "models.base.model"),
        (
            {"models": {"search": {"model": "openai:x", "thinking": "lots"}}},
            "models.search.thinking",
        ),
        ({"models": {"synthesizer": 42}}, "models.synthesizer"),
        ({"models": {"coordinatr": "openai:gpt-5.2"}}, "models.coordinatr"),
        (
            {"models": {"base": {"model": "openai:x", "base_url": "ftp://host"}}},
            "models.base.base_url",
        ),
        ({"models": {"verifier": {"base_url": "http://localhost:8000/v1"}}}, "models.verifier"),
        ({"models": {"timeout": 0}}, "models.timeout"),
        ({"telemetry": {"otel": "sometimes"}}, "telemetry.otel"),
        ({"sessions": {"compaction": {"keep_last": 0}}}, "sessions.compaction.keep_last"),
    ],
)
def test_validation_errors_name_the_bad_key(
    tmp_path: Path, config: dict[str, Any], key: str
) -> None:
    write(tmp_path, config)
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert f"{key}:" in str(e.value)


def test_a_key_pasted_into_the_config_is_refused_and_never_echoed(tmp_path: Path) -> None:
    write(tmp_path, {"models": {"base": {"model": "openai:gpt-5.2", "api_key": SECRET}}})
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert "models.base.api_key" in str(e.value) and "api_key_env" in str(e.value)
    assert SECRET not in str(e.value) and e.value.__cause__ is None  # no chained echo either
    write(tmp_path, {"models": {"base": {"model": "openai:gpt-5.2", "api_key_env": SECRET}}})
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert "models.base.api_key_env" in str(e.value) and SECRET not in str(e.value)


def test_thinking_words_are_normalised(tmp_path: Path) -> None:
    for word, level in [("none", "off"), ("False", "off"), ("disabled", "off"), (False, "off")]:
        write(tmp_path, {"models": {"base": "openai:o4-mini", "search": {"thinking": word}}})
        assert role_spec(load_settings(tmp_path), "search").thinking == level
    write(tmp_path, {"models": {"base": {"model": "openai:o4-mini", "thinking": True}}})
    assert role_spec(load_settings(tmp_path), "verifier").thinking == "on"


def test_environment_overrides_the_file_and_arguments_override_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"models": {"base": "openai:gpt-5.2", "search": "ollama:qwen3"}})
    monkeypatch.setenv("ZOCRATES_MODEL", "anthropic:claude-sonnet-4-5")
    monkeypatch.setenv("ZOCRATES_SEARCH_MODEL", "ollama:llama3.2")
    s = load_settings(tmp_path)
    assert role_spec(s, "coordinator").model_string == "anthropic:claude-sonnet-4-5"
    assert role_spec(s, "search").model_string == "ollama:llama3.2"
    s = load_settings(tmp_path, {"models.base": "openai:o4-mini"})  # e.g. --model
    assert role_spec(s, "coordinator").model_string == "openai:o4-mini"
    monkeypatch.setenv("ZOCRATES_MODEL", "not-a-model-string")
    with pytest.raises(ConfigError, match=r"models\.base\.model: .*\(set by ZOCRATES_MODEL\)"):
        load_settings(tmp_path)


def test_an_edited_config_takes_effect_at_the_next_resolve(tmp_path: Path) -> None:
    url = "http://127.0.0.1:8000/v1"
    write(tmp_path, {"models": {"base": {"model": "openai:model-a", "base_url": url}}})
    registry = ModelRegistry(tmp_path)
    first = registry.resolve("coordinator")
    assert first.display_name == f"openai:model-a @ {url}"
    assert registry.resolve("coordinator") is first  # unchanged file: cached, no rebuild
    generation = registry.generation

    write(tmp_path, {"models": {"base": {"model": "openai:model-b", "base_url": url}}})
    second = registry.resolve("coordinator")
    assert second.display_name == f"openai:model-b @ {url}" and registry.generation > generation

    write(tmp_path, {"models": {"base": "gpt-without-provider"}})  # a broken edit: clear error
    with pytest.raises(ConfigError, match=r"models\.base\.model"):
        registry.resolve("coordinator")
    assert registry.doctor_info()["ok"] is False
    (tmp_path / "zocrates_config.json").unlink()  # back to no file: the offline engine
    assert registry.resolve("coordinator").is_offline


def test_config_watcher_checks_the_file_cheaply(tmp_path: Path) -> None:
    watcher = ConfigWatcher(tmp_path)
    assert watcher.current().models.base.model is None
    write(tmp_path, {"models": {"base": "ollama:qwen3"}})
    start = time.perf_counter()
    for _ in range(200):
        settings = watcher.current()
    per_call = (time.perf_counter() - start) / 200
    assert settings.models.base.model == "ollama:qwen3"
    assert per_call < 0.005  # a stat, not a re-parse, when nothing changed
    assert watcher.generation == 2


def _spec(model: str, **endpoint: Any) -> Any:
    from zocrates_nb.config import Settings

    return Settings.model_validate({"models": {"base": {"model": model, **endpoint}}})


@pytest.mark.parametrize(
    ("model", "endpoint", "role", "can_think", "expected"),
    [
        ("openai:gpt-5.2", {}, "synthesizer", None, {"thinking": "high"}),
        ("openai:gpt-5.2", {"thinking": "minimal"}, "search", None, {"thinking": "minimal"}),
        ("openai:gpt-5.2", {}, "verifier", None, {"thinking": False}),
        ("anthropic:claude-sonnet-4-5", {}, "coordinator", None, {"thinking": "medium"}),
        (
            "anthropic:claude-sonnet-4-5",
            {"thinking": "on"},
            "coordinator",
            None,
            {"thinking": True},
        ),
        # OpenAI-compatible cloud servers: minimal → low, above high → high.
        (
            "openai:qwen",
            {"base_url": "https://api.together.xyz/v1", "thinking": "minimal"},
            "search",
            None,
            {"thinking": "low"},
        ),
        (
            "openai:qwen",
            {"base_url": "https://gw.example.com/v1", "thinking": "max"},
            "search",
            None,
            {"thinking": "high"},
        ),
        # Local servers: only when the model can think, or the config asks explicitly.
        ("openai:qwen", {"base_url": "http://localhost:8000/v1"}, "synthesizer", None, {}),
        (
            "openai:qwen",
            {"base_url": "http://10.0.0.5:8000/v1", "thinking": "high"},
            "synthesizer",
            None,
            {"thinking": "high"},
        ),
        ("ollama:qwen3", {}, "coordinator", True, {"thinking": "medium"}),
        ("ollama:qwen3", {}, "coordinator", False, {}),
        ("ollama:qwen3", {}, "coordinator", None, {}),
        ("ollama:qwen3", {"thinking": "minimal"}, "search", True, {"thinking": "low"}),
        ("ollama:qwen3", {"thinking": "off"}, "search", True, {"thinking": False}),
        ("offline", {}, "synthesizer", None, {}),
    ],
)
def test_thinking_is_mapped_per_provider(
    model: str, endpoint: dict[str, Any], role: str, can_think: bool | None, expected: Any
) -> None:
    spec = role_spec(_spec(model, **endpoint), role)
    assert thinking_setting(spec, can_think=can_think) == expected


def test_cloud_or_local() -> None:
    for url in [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8000",
        "http://[::1]:8000/v1",
        "http://192.168.1.20:8000/v1",
        "http://gpu-box.local:8080",
        "http://0.0.0.0:1",
    ]:
        assert is_local_url(url), url
    for url in ["https://api.openai.com/v1", "https://8.8.8.8/v1", "https://ollama.com", None]:
        assert not is_local_url(url), url
    cloud = {
        m: role_spec(_spec(m), "search").is_cloud
        for m in [
            "ollama:qwen3",
            "ollama:gpt-oss:120b-cloud",
            "litellm:ollama/qwen3",
            "litellm:mistral/mistral-large-latest",
            "openai:gpt-5.2",
            "offline",
        ]
    }
    assert cloud == {
        "ollama:qwen3": False,
        "ollama:gpt-oss:120b-cloud": True,  # ollama forwards -cloud models to ollama.com
        "litellm:ollama/qwen3": False,
        "litellm:mistral/mistral-large-latest": True,
        "openai:gpt-5.2": True,
        "offline": False,
    }


def test_keys_come_from_the_environment_and_are_never_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZOC_KEY_FOR_TEST", SECRET)
    write(
        tmp_path,
        {
            "models": {
                "base": {"model": "anthropic:claude-sonnet-4-5", "api_key_env": "ZOC_KEY_FOR_TEST"}
            }
        },
    )
    registry = ModelRegistry(tmp_path)
    resolved = registry.resolve("synthesizer")
    assert resolved.model is not None and resolved.is_cloud
    texts = [
        repr(resolved),
        str(resolved),
        repr(resolved.model),
        repr(registry.settings),
        registry.settings.model_dump_json(),
        json.dumps(registry.doctor_info()),
    ]
    assert all(SECRET not in t for t in texts)
    assert registry.doctor_info()["roles"]["search"]["api_key"] == "set"
    assert redact(f"the server said: bad key {SECRET}!") == "the server said: bad key ***!"

    monkeypatch.delenv("ZOC_KEY_FOR_TEST")
    with pytest.raises(ModelConfigError) as e:
        resolve_model(load_settings(tmp_path), "coordinator")
    assert "models.base" in str(e.value) and "ZOC_KEY_FOR_TEST" in str(e.value)
    assert describe_model_error(e.value) == str(e.value)


def test_unknown_providers_and_missing_packages_are_config_errors(tmp_path: Path) -> None:
    write(tmp_path, {"models": {"base": "nosuchprovider:model-x"}})
    with pytest.raises(ModelConfigError, match=r"models\.base: unknown model provider"):
        resolve_model(load_settings(tmp_path), "coordinator")
    if importlib.util.find_spec("groq") is not None:
        return  # the groq SDK is installed here: nothing is missing
    write(tmp_path, {"models": {"base": "groq:llama-3.3-70b-versatile"}})
    with pytest.raises(ModelConfigError) as e:
        resolve_model(load_settings(tmp_path), "search")
    assert "models.base" in str(e.value) and "litellm:groq/llama-3.3-70b-versatile" in str(e.value)


def test_token_costs_come_from_litellms_local_map() -> None:
    from zocrates_nb.agents.litellm_model import _litellm

    table = _litellm().model_cost

    def expected(name: str, i: int, o: int) -> float:
        entry = table[name]
        return float(entry["input_cost_per_token"] * i + entry["output_cost_per_token"] * o)

    assert cost_usd("openai:gpt-4o", 1200, 300) == pytest.approx(expected("gpt-4o", 1200, 300))
    assert cost_usd("anthropic:claude-sonnet-4-5", 1000, 1000) == pytest.approx(
        expected("claude-sonnet-4-5", 1000, 1000)
    )
    mistral = "mistral/mistral-large-latest"
    assert cost_usd(f"litellm:{mistral}", 10, 10) == pytest.approx(expected(mistral, 10, 10))
    assert cost_usd("openai:no-such-model-zz", 10, 10) is None
    assert cost_usd(None, 10, 10) is None and cost_usd("offline", 10, 10) is None


def test_an_unreachable_ollama_probe_is_unsure_and_quick() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    assert ollama_can_think(f"http://127.0.0.1:{port}/v1", "qwen3") is None
    assert time.monotonic() - start < 3


def test_telemetry_switch(tmp_path: Path) -> None:
    try:
        write(tmp_path, {"telemetry": {"otel": True}})
        registry = ModelRegistry(tmp_path)
        registry.resolve("coordinator")
        instrument = Agent._instrument_default
        assert isinstance(instrument, InstrumentationSettings)
        assert instrument.include_content is False  # no prompts or paper text in spans
        assert "instrumentation is on" in registry.telemetry_status
        write(tmp_path, {"telemetry": {"otel": False}})
        registry.resolve("coordinator")
        assert Agent._instrument_default is False
        assert "off" in registry.telemetry_status
    finally:
        Agent.instrument_all(False)


def test_the_offline_default_contacts_no_network(tmp_path: Path) -> None:
    """In a fresh interpreter, with every socket connection recorded: nothing connects."""
    script = textwrap.dedent(
        f"""
        import sys
        attempts = []
        sys.addaudithook(lambda ev, args: attempts.append(args) if ev == "socket.connect" else None)
        from pathlib import Path
        from zocrates_nb.agents.models import ModelRegistry, cost_usd
        registry = ModelRegistry(Path({str(tmp_path)!r}))
        roles = ("coordinator", "search", "synthesizer", "verifier")
        resolved = [registry.resolve(r) for r in roles]
        assert all(r.model is None for r in resolved)
        info = registry.doctor_info()
        assert info["any_cloud"] is False
        assert cost_usd(resolved[0].model_string, 100, 100) is None
        print("connections:", attempts)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZOCRATES_")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "connections: []"


def test_an_openai_route_model_never_imports_litellm() -> None:
    """Resolving an `openai:` model, asking through it and pricing its request import no
    LiteLLM (seconds at import); the cost is still priced, from the packaged table."""
    from zocrates_nb.devtools.scripted_openai import ScriptedOpenAI, text

    code = textwrap.dedent("""
        import asyncio, json, sys
        from pydantic_ai import Agent
        from zocrates_nb.agents.models import cost_usd, resolve_model
        from zocrates_nb.config import Settings
        from zocrates_nb.devtools.scripted_openai import model_config
        settings = Settings.model_validate(model_config(sys.argv[1], "openai:gpt-4o"))
        rm = resolve_model(settings, "synthesizer")
        out = asyncio.run(Agent(rm.model).run("Say hello."))
        cost = cost_usd(rm.model_string, out.usage().input_tokens, out.usage().output_tokens)
        print(json.dumps({"text": out.output, "cost": cost, "litellm": "litellm" in sys.modules}))
    """)
    with ScriptedOpenAI([text("Hello.")]) as llm:
        out = subprocess.run([sys.executable, "-c", code, llm.url], capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["text"] == "Hello." and seen["cost"] and not seen["litellm"], seen
