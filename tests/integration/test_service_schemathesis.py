"""Schemathesis against the live server's /openapi.json: no generated request may get a 5xx.

Fixed seed (``derandomize``) and a bounded number of examples per operation keep it reproducible and short.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from admit.service.config import settings_from_dict  # noqa: E402
from admit.service.http import LoopbackServer, create_app  # noqa: E402
from admit.testing.kb import memory_kb  # noqa: E402
from admit.types import Access, Chunk  # noqa: E402

pytestmark = pytest.mark.integration

KEY = "schemathesis-key-42"
CORPUS = [
    Chunk(
        id=f"doc{i}#1",
        source_id=f"doc{i}",
        title=f"Doc {i}",
        text=f"Section {i}: audit export port {8000 + i}.",
        access=Access(tenant="acme"),
    )
    for i in range(6)
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackServer]:
    tmp = tmp_path_factory.mktemp("st")
    cfg = settings_from_dict(
        {
            "service": {
                "keys": {"acme": {"key_sha256": hashlib.sha256(KEY.encode()).hexdigest(), "tenant": "acme"}},
                "prune_strategy": "top_n",
                "limits": {
                    "max_body_bytes": 200_000,
                    "max_candidates": 50,
                    "max_text_chars": 20_000,
                    "request_timeout_s": 20,
                },
            }
        },
        base_dir=tmp,
    )
    with LoopbackServer(create_app(cfg, kb=memory_kb(CORPUS))) as srv:
        yield srv


@pytest.fixture(scope="module")
def api_schema(live: LoopbackServer) -> object:
    return schemathesis.openapi.from_url(f"{live.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors(case: schemathesis.Case, live: LoopbackServer) -> None:
    case.call_and_validate(base_url=live.url, headers={"X-API-Key": KEY}, checks=[not_a_server_error], timeout=120)


def test_schema_names_every_operation(live: LoopbackServer) -> None:
    import httpx

    spec = httpx.get(f"{live.url}/openapi.json").json()
    ops = {(m.upper(), p) for p, item in spec["paths"].items() for m in item}
    assert {("POST", "/v1/pack"), ("POST", "/v1/search"), ("POST", "/v1/prune"), ("GET", "/healthz")} <= ops


def test_fuzzing_reached_the_handlers(live: LoopbackServer) -> None:
    """The generated calls were authorized and got past validation at least sometimes (not all 401/422)."""
    import httpx

    text = httpx.get(f"{live.url}/metrics").text
    ok = [ln for ln in text.splitlines() if ln.startswith("admit_http_requests_total{") and 'status="200"' in ln]
    assert any('route="/v1/search"' in ln for ln in ok), text
    assert any('route="/v1/prune"' in ln for ln in ok), text
    assert not any('status="5' in ln for ln in text.splitlines() if ln.startswith("admit_http_requests_total{"))
