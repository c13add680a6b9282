"""Service settings, the key ring, model-name checks, trace summaries and per-app metrics."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("prometheus_client")

from admit.errors import ConfigError, RequestError
from admit.service.config import KeyRing, ServiceSettings, load_settings, settings_from_dict
from admit.service.http import resolve_model, trace_summary
from admit.service.metrics import ServiceMetrics
from admit.types import Principal

REPO = Path(__file__).resolve().parents[2]


def _sha(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def test_keyring_maps_env_and_sha256_keys_to_principals() -> None:
    s = settings_from_dict(
        {
            "service": {
                "keys": {
                    "a": {"key_env": "K_A", "tenant": "acme", "groups": ["support"]},
                    "b": {"key_sha256": _sha("bee").upper(), "tenant": "globex"},
                }
            }
        }
    )
    ring = KeyRing(s.keys, environ={"K_A": "alpha"})
    assert ring.lookup("alpha") == ("a", Principal(tenant="acme", groups=("support",)))
    assert ring.lookup("bee") == ("b", Principal(tenant="globex"))
    assert ring.lookup("alpha ") is None
    assert ring.lookup("") is None
    assert ring.lookup(None) is None
    assert ring.lookup("\udcff") is None  # unpaired surrogates from a header cannot crash the lookup


def test_key_env_not_set_is_a_config_error_naming_it() -> None:
    s = settings_from_dict({"service": {"keys": {"a": {"key_env": "NOPE_VAR", "tenant": "t"}}}})
    with pytest.raises(ConfigError, match="NOPE_VAR"):
        KeyRing(s.keys, environ={})


@pytest.mark.parametrize(
    ("key", "msg"),
    [
        ({"tenant": "t"}, "exactly one"),
        ({"key_env": "X", "key_sha256": _sha("x"), "tenant": "t"}, "exactly one"),
        ({"key_sha256": "abc", "tenant": "t"}, "64-character"),
        ({"key_env": "X"}, "tenant"),
    ],
)
def test_bad_key_entries_are_refused(key: dict[str, object], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        settings_from_dict({"service": {"keys": {"a": key}}})


def test_unknown_setting_and_bad_limit_are_refused() -> None:
    with pytest.raises(ConfigError, match="kill_swich"):
        settings_from_dict({"service": {"kill_swich": True}})
    with pytest.raises(ConfigError, match="max_candidates"):
        settings_from_dict({"service": {"limits": {"max_candidates": 0}}})
    with pytest.raises(ConfigError, match="prune_on_error"):
        settings_from_dict({"service": {"prune_on_error": "raise"}})


def test_example_config_loads_and_resolves_paths() -> None:
    s = load_settings(REPO / "examples" / "admit.toml")
    assert set(s.keys) == {"acme_support"}  # no working SRE key ships (issue 19, item 4)
    assert s.mcp_principal() == Principal(tenant="acme", groups=("support",))
    assert s.path(s.trace_file) == REPO / "examples" / "traces" / "admit.jsonl"
    assert s.limits.max_candidates == 200


def test_missing_or_invalid_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[service\n", "utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(bad)
    assert load_settings(None).keys == {}


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "../tok.json", "hf:bert", "tokenizer.json", "C:\\x", "~/.cache", "a\0b", "x" * 101]
)
def test_model_names_that_reach_the_filesystem_are_refused(name: str) -> None:
    with pytest.raises(RequestError) as err:
        resolve_model(name, ServiceSettings())
    assert err.value.field == "model"


def test_model_name_of_an_existing_relative_path_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tokdir").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RequestError, match="server path"):
        resolve_model("tokdir", ServiceSettings())


def test_model_names_pass_or_map() -> None:
    s = ServiceSettings(models={"llama3": "/models/llama3/tokenizer.json"})
    assert resolve_model("gpt-4o", s) == "gpt-4o"
    assert resolve_model("cl100k_base", s) == "cl100k_base"
    assert resolve_model("llama3", s) == "/models/llama3/tokenizer.json"


def test_trace_summary_drops_decisions_and_keeps_counts() -> None:
    rec = {
        "request_id": "r1",
        "query_class": "point_lookup",
        "route": {"cue": "what is the", "kill_switch": True},
        "policy_version": "v1",
        "evidence_budget": 100,
        "evidence_tokens": 40,
        "candidate_count": 3,
        "accepted_chunk_ids": ["a"],
        "dropped": {"pruned": 2},
        "decisions": [{"id": "a"}],
        "fallbacks": [{"kind": "scope_note", "detail": "x"}],
        "pruner": {"strategy": "top_n"},
        "latency_ms": {"total": 1.5, "prune": 0.2},
    }
    s = trace_summary(rec)
    assert "decisions" not in s
    assert s["kill_switch"] is True
    assert s["fallbacks"] == ["scope_note"]
    assert s["latency_ms"] == {"total": 1.5, "prune": 0.2}  # the record's one shape, not a bare float
    assert s["dropped"] == {"pruned": 2}


def test_metrics_registries_are_per_app() -> None:
    a, b = ServiceMetrics(), ServiceMetrics()
    a.requests.labels(route="/v1/pack", method="POST", status="200").inc()
    assert b'route="/v1/pack"' in a.render()
    assert b'route="/v1/pack"' not in b.render()


def test_tool_settings_refuse_a_bad_redaction_pattern() -> None:
    with pytest.raises(ConfigError, match="redaction pattern 'ticket'"):
        settings_from_dict({"service": {"tools": {"redact": {"ticket": "TCK-("}}}})
    s = settings_from_dict({"service": {"tools": {"max_rows": 5, "redact": {"ticket": "TCK-[0-9]+"}}}})
    assert s.tools.max_rows == 5 and s.tools.default_patterns


def test_a_configured_unknown_strategy_is_refused_at_build() -> None:
    from admit.service.state import build_state

    with pytest.raises(ConfigError, match="did you mean 'setwise'"):
        build_state(settings_from_dict({"service": {"prune_strategy": "setwse"}}))
