"""Issue 34 items 6 and 7 on the service: 404 and 405 name the route, ``"prune": "setwise"`` on /v1/search says
how to choose a strategy, one question limit (the CLI's and the library's) with one message, config typos with
did-you-mean naming their table, and a key mapped to a tenant the knowledge base lacks warns at start."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from admit.cli import main
from admit.errors import ConfigError, RequestError
from admit.pipeline import PackRequest, Pipeline
from admit.service.config import load_settings, settings_from_dict
from admit.service.http import create_app
from admit.testing.kb import memory_kb
from admit.types import MAX_QUESTION_CHARS, Access, Chunk, Principal

KEY = "strict-test-key-0123456789"
SHA = hashlib.sha256(KEY.encode()).hexdigest()
H = {"X-API-Key": KEY}
LONG = "why " * (MAX_QUESTION_CHARS // 4 + 10)
CORPUS = [Chunk(id="a#1", source_id="a", title="A", text="The port is 7420.", access=Access(tenant="acme"))]


def _client(**keys: Any) -> TestClient:
    settings = settings_from_dict(
        {"service": {"keys": keys or {"acme": {"key_sha256": SHA, "tenant": "acme"}}, "prune_strategy": "top_n"}}
    )
    return TestClient(create_app(settings, kb=memory_kb(CORPUS, embedder="fake")))


def test_404_and_405_name_the_route() -> None:
    with _client() as c:
        r = c.post("/v1/serch", json={"question": "x"}, headers=H)
        assert r.status_code == 404
        body = r.json()
        assert body["error"] == "not_found" and "Not Found" not in body["detail"]
        assert body["detail"].startswith("POST /v1/serch: no such route; did you mean /v1/search?")
        r = c.get("/v1/search", headers=H)
        assert r.status_code == 405
        assert r.json()["error"] == "method_not_allowed"
        assert r.json()["detail"] == "GET /v1/search: the route takes POST, not GET"


def test_prune_setwise_on_search_says_how_to_choose_a_strategy() -> None:
    with _client() as c:
        r = c.post("/v1/search", json={"question": "Which port?", "prune": "setwise"}, headers=H)
    assert r.status_code == 422 and r.json()["field"] == "prune"
    assert "valid boolean" not in r.json()["detail"] and "prune_strategy" in r.json()["detail"]


def test_one_question_limit_with_one_message_on_http_cli_and_library() -> None:
    with _client() as c:
        for route, body in [
            ("/v1/search", {"question": LONG}),
            ("/v1/prune", {"question": LONG, "candidates": [{"id": "a", "text": "t"}]}),
        ]:
            r = c.post(route, json=body, headers=H)
            assert r.status_code == 422, (route, r.text)
            assert r.json()["field"] == "question"
            assert f"over the {MAX_QUESTION_CHARS:,}-character limit of a question" in r.json()["detail"]
    res = CliRunner().invoke(main, ["policy", LONG])
    assert res.exit_code == 2 and f"over the {MAX_QUESTION_CHARS:,}-character limit" in res.stderr
    with pytest.raises(RequestError, match="character limit of a question"):
        Pipeline().pack(PackRequest(question=LONG, principal=Principal(tenant="acme"), candidates=CORPUS))
    ok = "w" * MAX_QUESTION_CHARS
    Pipeline().resolve(ok, request_id="r")  # at the limit: accepted


def test_config_typos_name_their_table_with_did_you_mean(tmp_path: Path) -> None:
    cases = {
        '[service]\nprune_stratgy = "setwise"\n': "[service]: unknown setting 'prune_stratgy'; did you mean",
        "[service.limits]\nmax_text_char = 3\n": "[service.limits]: unknown setting 'max_text_char'; did you mean",
        '[servce]\nprune_strategy = "setwise"\n': "unknown table 'servce'; did you mean 'service'?",
        'prune_strategy = "setwise"\n': "'prune_strategy' is a service setting: put it under [service]",
    }
    for text, expected in cases.items():
        path = tmp_path / "admit.toml"
        path.write_text(text, "utf-8")
        with pytest.raises(ConfigError) as exc:
            load_settings(path)
        assert expected in str(exc.value), str(exc.value)
        assert "Extra inputs are not permitted" not in str(exc.value)


def test_a_key_for_a_tenant_the_kb_lacks_warns_at_start() -> None:
    # a handler on the logger itself: an earlier test (a server's logging config, a CLI run) may have stopped
    # propagation to the root logger that caplog listens on, or disabled the logger
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    log, keep = logging.getLogger("admit.service.state"), _Keep(logging.WARNING)
    was_disabled, was_level = log.disabled, log.level
    log.disabled, log.level = False, logging.WARNING
    log.addHandler(keep)
    keys = {"acme": {"key_sha256": SHA, "tenant": "acme"}, "typo": {"key_sha256": "0" * 64, "tenant": "acmee"}}
    try:
        _client(**keys)
    finally:
        log.removeHandler(keep)
        log.disabled, log.level = was_disabled, was_level
    warned = [r.getMessage() for r in records if "acmee" in r.getMessage()]
    assert len(warned) == 1 and "'typo'" in warned[0] and "Did you mean tenant:acme?" in warned[0]
    assert not [r for r in records if "tenant 'acme'" in r.getMessage()]
