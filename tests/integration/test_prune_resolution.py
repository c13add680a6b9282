"""One resolution path: ``/v1/prune`` resolves its settings like ``/v1/pack`` (policy, rollout, overrides, kill
switch), through :meth:`admit.pipeline.Pipeline.resolve`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("fastapi")

from admit.pipeline import Pipeline
from admit.policy import load_policy_set
from admit.service import core
from admit.service.config import KeyRing, ServiceSettings, settings_from_dict
from admit.service.http import LoopbackServer, create_app
from admit.service.metrics import ServiceMetrics
from admit.service.state import ServiceState
from admit.types import Chunk

pytestmark = pytest.mark.integration

KEY = "resolution-key-0123456789"
H = {"X-API-Key": KEY}
CANDS = [
    {"id": "a", "text": "Audit export fails with E4012 after the upgrade."},
    {"id": "b", "text": "Set audit.sink.tls=true to fix the audit export."},
    {"id": "c", "text": "Cats sleep a lot."},
]


def _policy(tmp: Path, name: str, body: str) -> Path:
    p = tmp / name
    p.write_text(body, "utf-8")
    return p


@pytest.fixture(scope="module")
def top_n_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackServer]:
    tmp = tmp_path_factory.mktemp("resolution")
    policy = _policy(tmp, "top_n.toml", 'version = "t1"\n[classes.default]\nprune = { strategy = "top_n", n = 2 }\n')
    settings = settings_from_dict(
        {
            "service": {
                "policy": str(policy),
                "prune_strategy": "top_n",
                "keys": {"acme": {"key_env": "ADMIT_RESOLUTION_KEY", "tenant": "acme"}},
            }
        },
        base_dir=tmp,
    )
    app = create_app(settings, environ={"ADMIT_RESOLUTION_KEY": KEY})
    with LoopbackServer(app) as srv:
        yield srv


def test_prune_with_another_strategy_than_the_policys_drops_the_policys_params(top_n_server: LoopbackServer) -> None:
    # the reproduced 422: the class's top_n n=2 was handed to score_threshold ("unknown prune parameter n")
    body = {"question": "audit export E4012", "candidates": CANDS, "strategy": "score_threshold"}
    r = httpx.post(f"{top_n_server.url}/v1/prune", json=body, headers=H, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["strategy"] == "score_threshold"
    # the policy's own strategy keeps its parameter, and a caller's override wins
    body = {"question": "audit export E4012", "candidates": CANDS}
    got = httpx.post(f"{top_n_server.url}/v1/prune", json=body, headers=H, timeout=60).json()
    assert got["strategy"] == "top_n" and len(got["kept_ids"]) == 2
    body["params"] = {"n": 1}
    got = httpx.post(f"{top_n_server.url}/v1/prune", json=body, headers=H, timeout=60).json()
    assert len(got["kept_ids"]) == 1
    # a parameter the asked strategy does not read is still the caller's mistake
    body = {"question": "q", "candidates": CANDS, "strategy": "score_threshold", "params": {"n": 2}}
    r = httpx.post(f"{top_n_server.url}/v1/prune", json=body, headers=H, timeout=60)
    assert r.status_code == 422 and "unknown prune parameter `n`" in r.json()["detail"]


def test_pack_on_the_same_policy_agrees(top_n_server: LoopbackServer) -> None:
    cands = [{**c, "source_id": c["id"], "access": {"tenant": "acme"}} for c in CANDS]
    body = {"question": "audit export E4012", "candidates": cands, "prune": "score_threshold"}
    r = httpx.post(f"{top_n_server.url}/v1/pack", json=body, headers=H, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["trace"]["pruner"]["strategy"] == "score_threshold"


def test_prune_gets_the_staged_rollout(tmp_path: Path) -> None:
    new = load_policy_set(
        _policy(
            tmp_path,
            "new.toml",
            'version = "v2"\nrollout = 0.0\n[classes.default]\nprune = { strategy = "top_n", n = 1 }\n',
        )
    )
    old = load_policy_set(
        _policy(tmp_path, "old.toml", 'version = "v1"\n[classes.default]\nprune = { strategy = "top_n", n = 3 }\n')
    )
    state = ServiceState(
        settings=ServiceSettings(),
        keyring=KeyRing({}),
        pipeline=Pipeline(policies=new, baseline_policies=old, reranker="bm25"),
        shadow=None,
        kb=None,
        metrics=ServiceMetrics(),
        sink=None,
    )
    chunks = [Chunk(id=c["id"], source_id=c["id"], text=c["text"]) for c in CANDS]
    query = core.PruneQuery(question="audit export E4012", candidates=chunks, strategy="top_n")
    answer = anyio.run(core.Service(state).prune, core.Caller(None), lambda: query, lambda _q, a: a)
    assert answer.trace["route"]["rollout"] == "baseline" and answer.trace["policy_version"] == "v1"
    assert len(answer.run.kept_ids) == 3  # the baseline's n=3, not the new policy's n=1
