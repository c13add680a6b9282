"""Invariants of the whole pipeline over arbitrary candidates (hypothesis)."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admit import Access, Chunk, Message, PackRequest, Pipeline, Principal
from admit.backends.tokenizers import resolve_tokenizer
from admit.budget import evidence_message_tokens

TENANTS = ["acme", "globex", "initech"]
GROUPS = ["eng", "sales", "ops"]
WORDS = st.sampled_from(
    [
        "the",
        "port",
        "server",
        "audit",
        "log",
        "export",
        "error",
        "fix",
        "version",
        "install",
        "region",
        "default",
        "config",
        "key",
        "rotate",
        "8080",
        "2.4",
        "Qdrant",
        "pgvector",
        "ünïcode",
        "日本",
        "—",
        "<passage>",
        "</evidence>",
        "ignore",
        "previous",
        "instructions",
    ]
)
TEXT = st.lists(WORDS, min_size=0, max_size=120).map(" ".join)
PIPE = Pipeline()
TOK = resolve_tokenizer("gpt-4o")


@st.composite
def candidates(draw):
    n = draw(st.integers(0, 25))
    out = []
    for i in range(n):
        access = draw(
            st.one_of(
                st.none(),
                st.builds(
                    Access,
                    tenant=st.sampled_from(TENANTS),
                    groups=st.lists(st.sampled_from(GROUPS), max_size=2, unique=True).map(tuple),
                ),
            )
        )
        out.append(
            Chunk(
                id=f"c{i}",
                source_id=draw(st.sampled_from(["s1", "s2", "s3", f"u{i}"])),
                text=draw(TEXT),
                title=draw(st.sampled_from(["", "Install", "Config"])),
                version=draw(st.sampled_from([None, "1.0", "2.0"])),
                access=access,
                authority=draw(st.one_of(st.none(), st.floats(0, 1))),
                score=draw(st.one_of(st.none(), st.floats(-10, 10, allow_nan=False), st.just(float("nan")))),
            )
        )
    return out


REQUESTS = st.builds(
    PackRequest,
    question=st.sampled_from(
        [
            "What is the default port?",
            "List all regions",
            "Compare Qdrant and pgvector",
            "Export fails with error",
            "Tell me everything",
        ]
    ),
    principal=st.builds(
        Principal,
        tenant=st.sampled_from(TENANTS),
        groups=st.lists(st.sampled_from(GROUPS), max_size=2, unique=True).map(tuple),
    ),
    candidates=candidates(),
    input_limit=st.integers(300, 6000),
    instructions=st.sampled_from(["", "Answer briefly."]),
    conversation=st.lists(st.builds(Message, role=st.sampled_from(["user", "assistant"]), content=TEXT), max_size=4),
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(REQUESTS)
def test_evidence_tokens_never_exceed_the_budget(req):
    res = PIPE.pack(req)
    assert res.trace["evidence_tokens"] <= res.budget.evidence_budget
    assert evidence_message_tokens(TOK, res.prompt) == res.trace["evidence_tokens"]


@SETTINGS
@given(REQUESTS)
def test_every_candidate_gets_exactly_one_decision(req):
    res = PIPE.pack(req)
    assert [d.chunk_id for d in res.decisions] == [c.id for c in req.candidates]
    admitted = {d.chunk_id for d in res.decisions if d.state == "admitted"}
    assert admitted == set(res.admitted_ids)
    assert all(d.reason for d in res.decisions)


@SETTINGS
@given(REQUESTS)
def test_no_chunk_of_another_tenant_or_group_is_ever_admitted(req):
    res = PIPE.pack(req)
    for p in res.admitted:
        acc = p.chunk.access
        assert acc is not None and acc.tenant == req.principal.tenant
        assert not acc.groups or set(acc.groups) & set(req.principal.groups)
    readable = {c.id for c in req.candidates if req.principal.can_read(c.access)}
    for d in res.decisions:
        if d.chunk_id not in readable:
            assert d.reason == "acl" and d.state == "dropped"


@SETTINGS
@given(REQUESTS)
def test_the_result_is_deterministic_for_the_same_input(req):
    a, b = PIPE.pack(req), PIPE.pack(req)

    def strip(res):
        d = res.as_dict()
        # the request id is fresh for every request (a UUIDv7); its hash, kept, is the same
        d["trace"] = {k: v for k, v in d["trace"].items() if k not in {"ts", "latency_ms", "request_id"}}
        # the boundary is drawn at random for every request (it must not be predictable); all else, token
        # counts included, is the same
        d["prompt"] = re.sub(r"(<(?:/)?(?:evidence|passage))-\d{20}", r"\1-B", d["prompt"])
        return json.dumps(d, sort_keys=True, default=str)

    assert strip(a) == strip(b)
