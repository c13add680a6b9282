"""Tenant isolation under load: randomized multi-tenant corpora, >= 10,000 library requests (sequential and
concurrent) and 2,000 HTTP requests, with a canary in every chunk.

Every chunk carries a unique canary ``CNRY<tenant>G<group>C<n>Z`` in its file name (so in its id and source
id), its title and its text. After every request each string the caller can see, and each string the
operator records, is searched for canaries: admitted passages, the rendered prompt, the full trace record
(with ``ADMIT_TRACE_CONTENT=true``, so the prompt and question are in it), error messages, and ``/metrics``.
A canary the principal may not read is a leak. Questions name other tenants' topic words on purpose, so an
unfiltered retriever would rank foreign chunks first.

Counts (asserted): library 4,000 sequential + 6,000 concurrent (8 threads) = 10,000, over the embedded KB
(SQLite + BM25 + a hashing embedder, the real cl100k/o200k tokenizers) and the bring-your-own-candidates
pipeline; HTTP 2,000 over loopback (8 client threads, three API keys).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.errors import AdmitError, AuthorizationError
from admit.kb import KnowledgeBase
from admit.pipeline import PackRequest, Pipeline
from admit.trace import MemorySink
from admit.types import Access, Chunk, Principal

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

TENANTS = ["acme", "globex", "initech", "umbrella"]
GROUPS = ["all", "eng", "sales", "hr"]  # "all": no group restriction
SHARED_WORDS = ["quota", "backup", "deploy", "token", "login", "port", "export", "audit", "disk", "error"]
TOPIC = {t: [f"{t}{w}" for w in ("widget", "ledger", "pipeline", "roster")] for t in TENANTS}
CANARY = re.compile(r"CNRY(\d)G(\d)C(\d+)Z")
SEQUENTIAL = 4_000
CONCURRENT = 6_000
HTTP_REQUESTS = 2_000


@dataclass(frozen=True, slots=True)
class Doc:
    tenant: int
    group: int
    n: int

    @property
    def canary(self) -> str:
        return f"CNRY{self.tenant}G{self.group}C{self.n}Z"

    def access(self) -> Access:
        g = GROUPS[self.group]
        return Access(tenant=TENANTS[self.tenant], groups=() if g == "all" else (g,))


def readable(p: Principal, tenant: int, group: int) -> bool:
    if p.tenant != TENANTS[tenant]:
        return False
    g = GROUPS[group]
    return g == "all" or g in p.groups


def leaks(p: Principal, *texts: str) -> list[str]:
    """Canaries in ``texts`` the principal may not read."""
    out = []
    for t in texts:
        for m in CANARY.finditer(t):
            if not readable(p, int(m.group(1)), int(m.group(2))):
                out.append(m.group(0))
    return out


def make_docs(rng: random.Random, per_tenant: int = 48) -> list[Doc]:
    return [Doc(t, rng.randrange(len(GROUPS)), n) for t in range(len(TENANTS)) for n in range(per_tenant)]


def doc_text(d: Doc, rng: random.Random) -> str:
    words = rng.sample(SHARED_WORDS, 4) + rng.sample(TOPIC[TENANTS[d.tenant]], 2)
    return (
        f"# Note {d.canary}\n\n"
        f"The {words[0]} and {words[1]} settings for {words[4]} are described here. "
        f"Secret code {d.canary} unlocks the {words[2]} {words[3]} of the {words[5]}.\n"
    )


def random_principal(rng: random.Random) -> Principal:
    r = rng.random()
    tenant = "nobody" if r < 0.05 else rng.choice(TENANTS)
    groups = tuple(rng.sample(GROUPS[1:], rng.randrange(0, 3)))
    return Principal(tenant=tenant, groups=groups)


def random_question(rng: random.Random) -> str:
    words = [*rng.sample(SHARED_WORDS, 2), rng.choice(TOPIC[rng.choice(TENANTS)])]
    rng.shuffle(words)
    return "What about " + " ".join(words) + "?"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, _trace_content: None) -> Iterator[dict[str, Any]]:
    rng = random.Random(20240611)
    docs = make_docs(rng)
    root = tmp_path_factory.mktemp("iso")
    kb = KnowledgeBase(root / "kb.sqlite", embedder="fake")
    texts: dict[str, str] = {}
    for d in docs:
        folder = root / "src" / f"{d.tenant}-{d.group}"
        folder.mkdir(parents=True, exist_ok=True)
        text = doc_text(d, rng)
        texts[d.canary] = text
        (folder / f"{d.canary}.md").write_text(text, "utf-8")
    for t in range(len(TENANTS)):
        for g in range(len(GROUPS)):
            folder = root / "src" / f"{t}-{g}"
            if folder.is_dir():
                grp = [] if GROUPS[g] == "all" else [GROUPS[g]]
                kb.ingest([folder], tenant=TENANTS[t], groups=grp)
    assert kb.count() == len(docs)
    chunks = [
        Chunk(id=f"p{i}", source_id=f"s{i}", title=f"Note {d.canary}", text=texts[d.canary], access=d.access())
        for i, d in enumerate(docs)
    ]
    sink = MemorySink()
    yield {
        "kb": kb,
        "docs": docs,
        "chunks": chunks,
        "root": root,
        "pipe": Pipeline(sink=sink, trace_content=True),
        "sink": sink,
    }
    kb.close()


@pytest.fixture(autouse=True, scope="module")
def _trace_content() -> Iterator[None]:
    # read once, when a pipeline (or the service's) is built: set before the module's fixtures build them
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADMIT_TRACE_CONTENT", "true")
        yield


def one_request(world: dict[str, Any], seed: int) -> tuple[str, int]:
    """Run one random library request; return its kind and the number of admitted passages. Raise on a leak."""
    rng = random.Random(seed)
    p = random_principal(rng)
    q = random_question(rng)
    kind = rng.choices(["kb", "pack", "error"], weights=[55, 40, 5])[0]
    model = rng.choice(["gpt-4o", "cl100k_base"])
    try:
        if kind == "kb":
            res = world["kb"].search(q, p, prune=rng.choice([False, "top_n"]), model=model, k=rng.randint(1, 30))
        elif kind == "pack":
            cands = rng.sample(world["chunks"], rng.randint(1, 16))
            res = world["pipe"].pack(PackRequest(question=q, principal=p, candidates=cands, model=model, prune="none"))
            for c, d in zip(cands, res.decisions, strict=True):
                assert c.id == d.chunk_id
                if not p.can_read(c.access):
                    assert d.state == "dropped"
                    assert d.reason == "acl"
        else:
            bad = rng.choice([Principal(tenant="", groups=("eng",)), None])
            if rng.random() < 0.5:
                world["kb"].search(q, bad)
            else:
                res = world["pipe"].pack(PackRequest(question=q, principal=bad, candidates=world["chunks"][:5]))
                # a principal without a tenant reads nothing (fail closed) even where it is not refused outright
                assert bad is not None
                assert not res.admitted
                assert not res.prompt
                return "error", 0
            raise AssertionError("an unauthenticated request was answered")
    except AuthorizationError as exc:
        assert kind == "error"
        assert not CANARY.search(str(exc)), str(exc)
        return "error", 0
    except AdmitError as exc:  # any other refusal must not leak either
        found = leaks(p, str(exc))
        assert not found, f"error message leaks {found}"
        return "refused", 0
    trace_json = json.dumps(res.trace, default=str)
    surfaces = [res.prompt, trace_json, *(json.dumps(a.as_dict(), default=str) for a in res.admitted)]
    found = leaks(p, *surfaces)
    assert not found, f"principal {p} saw {found[:5]} ({kind}, question {q!r})"
    for a in res.admitted:
        assert p.can_read(a.chunk.access)
    if kind == "kb":
        # the KB never even hands a foreign chunk to the pipeline
        assert all(not leaks(p, cid) for cid in res.trace["candidate_ids"])
    return kind, len(res.admitted)


def test_library_sequential_and_concurrent(world: dict[str, Any]) -> None:
    kinds: Counter[str] = Counter()
    admitted = 0
    for seed in range(SEQUENTIAL):
        k, n = one_request(world, seed)
        kinds[k] += 1
        admitted += n
    with ThreadPoolExecutor(max_workers=8) as ex:
        for k, n in ex.map(lambda s: one_request(world, s), range(SEQUENTIAL, SEQUENTIAL + CONCURRENT)):
            kinds[k] += 1
            admitted += n
    assert sum(kinds.values()) == SEQUENTIAL + CONCURRENT >= 10_000
    assert kinds["kb"] > 4000
    assert kinds["pack"] > 3000
    assert kinds["error"] > 200
    assert admitted > 10_000  # the test admitted plenty: a leak had every chance to show
    # every trace record written by the sink is clean too (they were checked per request; check the sink's copy)
    records = world["sink"].records
    assert len(records) >= kinds["pack"]
    for rec in records:  # one request's record never mixes two tenants' content
        assert len({m.group(1) for m in CANARY.finditer(json.dumps(rec, default=str))}) <= 1


def test_group_change_takes_effect_on_the_next_request(world: dict[str, Any]) -> None:
    kb: KnowledgeBase = world["kb"]
    root: Path = world["root"]
    folder = root / "moving"
    folder.mkdir(exist_ok=True)
    canary = "MOVINGCODE41"  # not a CNRY canary: its ACL changes during the test
    (folder / f"{canary}.md").write_text(f"# Moving\n\nThe acmewidget rotation code is {canary}.\n", "utf-8")
    sales = Principal(tenant="acme", groups=("sales",))
    eng = Principal(tenant="acme", groups=("eng",))
    q = "acmewidget rotation code"
    kb.ingest([folder], tenant="acme", groups=["sales"])
    assert canary in kb.search(q, sales, prune=False).prompt
    assert canary not in kb.search(q, eng, prune=False).prompt
    kb.ingest([folder], tenant="acme", groups=["eng"])  # the ACL changes: sales loses it, eng gains it
    assert canary not in kb.search(q, sales, prune=False).prompt
    assert canary in kb.search(q, eng, prune=False).prompt
    # a principal losing a group loses the group's chunks on its next request
    assert canary not in kb.search(q, Principal(tenant="acme"), prune=False).prompt


def test_principal_change_takes_effect_on_the_next_pack(world: dict[str, Any]) -> None:
    pipe: Pipeline = world["pipe"]
    c = Chunk(id="x", source_id="x", text="Payroll code CNRY0G3C777Z.", access=Access(tenant="acme", groups=("hr",)))
    q = "payroll code"
    assert pipe.pack(
        PackRequest(question=q, principal=Principal(tenant="acme", groups=("hr",)), candidates=[c])
    ).admitted
    assert not pipe.pack(PackRequest(question=q, principal=Principal(tenant="acme"), candidates=[c])).admitted
    assert not pipe.pack(
        PackRequest(question=q, principal=Principal(tenant="globex", groups=("hr",)), candidates=[c])
    ).admitted


# ---------------------------------------------------------------- HTTP


KEYS = {
    "acme_eng": ("key-acme-eng-000000", "acme", ["eng"]),
    "acme_plain": ("key-acme-plain-0000", "acme", []),
    "globex_sales": ("key-globex-sales-00", "globex", ["sales"]),
}


@pytest.fixture(scope="module")
def live(world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("fastapi")
    from admit.service.config import settings_from_dict
    from admit.service.http import LoopbackServer, create_app

    tmp = tmp_path_factory.mktemp("iso-http")
    cfg = settings_from_dict(
        {
            "service": {
                "keys": {
                    label: {"key_sha256": hashlib.sha256(k.encode()).hexdigest(), "tenant": t, "groups": g}
                    for label, (k, t, g) in KEYS.items()
                },
                "prune_strategy": "top_n",
                "trace_file": str(tmp / "trace.jsonl"),
                "limits": {"max_text_chars": 2_000, "request_timeout_s": 30},
            }
        },
        base_dir=tmp,
    )
    app = create_app(cfg, kb=world["kb"])
    with LoopbackServer(app) as srv:
        yield srv, app, tmp / "trace.jsonl"


def test_http_isolation(world: dict[str, Any], live: Any) -> None:
    import httpx

    srv, _, trace_file = live
    local = threading.local()
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def client() -> httpx.Client:
        if not hasattr(local, "c"):
            local.c = httpx.Client(base_url=srv.url, timeout=120)
        return local.c

    def one(seed: int) -> None:
        rng = random.Random(10_000_000 + seed)
        label = rng.choice(list(KEYS))
        key, tenant, groups = KEYS[label]
        p = Principal(tenant=tenant, groups=tuple(groups))
        q = random_question(rng)
        r = rng.random()
        if r < 0.6:
            resp = client().post(
                "/v1/search",
                json={"query": q, "top_k": rng.randint(1, 20), "prune": rng.random() < 0.3},
                headers={"X-API-Key": key},
            )
        elif r < 0.9:
            cands = rng.sample(world["chunks"], rng.randint(1, 10))
            body = {
                "question": q,
                "candidates": [
                    {
                        "id": c.id,
                        "source_id": c.source_id,
                        "title": c.title,
                        "text": c.text,
                        "access": {"tenant": c.access.tenant, "groups": list(c.access.groups)},  # type: ignore[union-attr]
                    }
                    for c in cands
                ],
            }
            resp = client().post("/v1/pack", json=body, headers={"X-API-Key": key})
            if resp.status_code == 200:
                mine = {c.id for c in cands if p.can_read(c.access)}
                assert set(resp.json()["trace"]["accepted_chunk_ids"]) <= mine
        elif r < 0.95:
            resp = client().post("/v1/search", json={"query": q + "x" * 3000}, headers={"X-API-Key": key})
            assert resp.status_code == 413
        else:
            resp = client().post("/v1/search", json={"query": q}, headers={"X-API-Key": key + "-revoked"})
            assert resp.status_code == 401
        found = leaks(p, resp.text)
        assert not found, f"{label} saw {found[:5]} via {resp.request.url.path}"
        assert resp.status_code < 500, resp.text
        with lock:
            statuses[resp.status_code] += 1

    with ThreadPoolExecutor(max_workers=8) as ex:
        list(ex.map(one, range(HTTP_REQUESTS)))
    assert sum(statuses.values()) == HTTP_REQUESTS
    assert statuses[200] > HTTP_REQUESTS * 0.8
    import httpx as _h

    metrics = _h.get(f"{srv.url}/metrics", timeout=120).text
    assert not CANARY.search(metrics), "a metric label carries document content"
    assert not re.search(r"acme|globex|initech|umbrella", metrics), "a metric label carries a tenant name"
    # the operator's trace file holds one record per request; none mixes tenants' content
    lines = trace_file.read_text("utf-8").splitlines()
    assert len(lines) >= statuses[200]
    tenants_per_record = [{int(m.group(1)) for m in CANARY.finditer(ln)} for ln in lines]
    # pack records list the caller's own candidate ids (neutral p<n>) and the prompt: one tenant at most
    assert all(len(t) <= 1 for t in tenants_per_record)


def test_http_key_revocation_and_acl_change_take_effect_on_the_next_request(world: dict[str, Any], live: Any) -> None:
    import httpx

    from admit.service.config import KeyRing, settings_from_dict

    srv, app, _ = live
    key, _, _ = KEYS["acme_eng"]
    h = {"X-API-Key": key}
    root: Path = world["root"]
    folder = root / "moving-http"
    folder.mkdir(exist_ok=True)
    canary = "MOVINGCODE42"  # not a CNRY canary: its ACL changes during the test
    (folder / f"{canary}.md").write_text(f"# Vault\n\nThe acmeledger vault code is {canary}.\n", "utf-8")
    q = {"query": "acmeledger vault code", "top_k": 5}
    with httpx.Client(base_url=srv.url, timeout=120) as c:
        world["kb"].ingest([folder], tenant="acme", groups=["eng"])
        assert canary in c.post("/v1/search", json=q, headers=h).text
        world["kb"].ingest([folder], tenant="acme", groups=["hr"])
        assert canary not in c.post("/v1/search", json=q, headers=h).text
        # rotate the key ring: the old key is refused on the very next request
        state = app.state.admit
        old = state.keyring
        new = settings_from_dict(
            {
                "service": {
                    "keys": {"other": {"key_sha256": hashlib.sha256(b"new-key-123").hexdigest(), "tenant": "acme"}}
                }
            }
        )
        state.keyring = KeyRing(new.keys)
        try:
            assert c.post("/v1/search", json=q, headers=h).status_code == 401
            assert c.post("/v1/search", json=q, headers={"X-API-Key": "new-key-123"}).status_code == 200
        finally:
            state.keyring = old
