"""Bad input: property tests over the library API, the CLI's JSON and the HTTP API.

Huge and empty texts, duplicate ids, NaN/inf scores, invalid UTF-8 (and lone surrogates), deep JSON,
negative limits: every one gets a clear error (an :class:`~admit.errors.AdmitError`, a non-zero exit with an
``error:`` line, a 4xx with a JSON body), never an unexpected exception, a traceback or a 500; and a failed
ingest leaves the knowledge base as it was.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admit.cli import main as cli_main
from admit.errors import AdmitError, RequestError
from admit.pipeline import PackRequest, Pipeline
from admit.schema import parse_pack_request
from admit.types import Access, Chunk, Principal

ACME = Access(tenant="acme")
PIPE = Pipeline()
HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

text_st = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=50),
    st.text(
        alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=5
    ),  # lone surrogates
    st.just(""),
    st.just("   \n\t "),
    st.just("word " * 20_000),
    st.just("\x00\x01\x1b[31m\u202e\ufeff"),
)
score_st = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.just(float("nan")))


@st.composite
def chunks_st(draw: Any) -> list[Chunk]:
    n = draw(st.integers(min_value=0, max_value=12))
    ids = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "", "a#1", "\ud800"]), min_size=n, max_size=n))
    out = []
    for i in range(n):
        access = draw(st.sampled_from([ACME, None, Access(tenant=""), Access(tenant="acme", groups=("x",))]))
        out.append(
            Chunk(
                id=ids[i] if draw(st.booleans()) else f"u{i}",
                source_id=draw(st.sampled_from(["s", "", "t"])),
                text=draw(text_st),
                title=draw(st.sampled_from(["", "T", "\u202e"])),
                access=access,
                score=draw(score_st),
                authority=draw(st.one_of(st.none(), st.floats(allow_nan=True))),
            )
        )
    return out


@HYP
@given(
    question=text_st,
    cands=chunks_st(),
    input_limit=st.integers(min_value=-10, max_value=2_000_000),
    model=st.sampled_from(["gpt-4o", "cl100k_base", "o200k_base", "nope-model", "", "../../etc/passwd"]),
    prune=st.sampled_from([None, "none", "top_n", "score_threshold", "bogus"]),
    principal=st.sampled_from([Principal(tenant="acme"), Principal(tenant="acme", groups=("x",)), None]),
)
def test_library_pack_fails_only_with_admit_errors(
    question: str, cands: list[Chunk], input_limit: int, model: str, prune: str | None, principal: Principal | None
) -> None:
    req = PackRequest(
        question=question, principal=principal, candidates=cands, model=model, input_limit=input_limit, prune=prune
    )
    try:
        res = PIPE.pack(req)
    except AdmitError as exc:
        assert str(exc)
        assert "Traceback" not in str(exc)
        return
    # a request that succeeds is well formed: one decision per candidate, admitted ones readable and non-empty
    assert len(res.decisions) == len(cands)
    assert len({d.chunk_id for d in res.decisions}) == len(cands)
    for p in res.admitted:
        assert principal is not None and principal.can_read(p.chunk.access)
        assert p.chunk.text.strip()
    json.dumps(res.as_dict(), default=str)  # the result is serialisable
    for d in res.trace["decisions"]:
        assert "score" not in d or math.isfinite(d["score"])


def test_duplicate_ids_are_a_request_error() -> None:
    c = Chunk(id="a", source_id="s", text="x", access=ACME)
    with pytest.raises(RequestError, match="Duplicate candidate id"):
        PIPE.pack(PackRequest(question="q?", principal=Principal(tenant="acme"), candidates=[c, c]))


# JSON values of any shape (the CLI's and the HTTP API's input)
json_st = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
    ),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=30,
)


def _request_like(draw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "question": draw(st.one_of(st.text(max_size=40), json_st)),
        "principal": draw(st.one_of(st.just({"tenant": "acme"}), json_st)),
        "candidates": draw(
            st.one_of(
                st.lists(
                    st.fixed_dictionaries(
                        {"id": st.sampled_from(["a", "b", "a"]), "text": st.text(max_size=40)},
                        optional={"score": st.floats(allow_nan=True), "access": json_st, "source_id": json_st},
                    ),
                    max_size=5,
                ),
                json_st,
            )
        ),
    }
    for k in ("input_limit", "model", "prune", "conversation", "prune_params"):
        if draw(st.booleans()):
            base[k] = draw(json_st)
    return base


@HYP
@given(data=st.one_of(json_st, st.composite(_request_like)()))
def test_schema_parses_or_raises_a_request_error(data: Any) -> None:
    try:
        req = parse_pack_request(data)
    except RequestError as exc:
        assert str(exc)
        return
    assert isinstance(req, PackRequest)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(data=st.one_of(json_st, st.composite(_request_like)()))
def test_cli_pack_on_any_json_exits_cleanly(data: Any) -> None:
    raw = json.dumps(data, allow_nan=True).encode("utf-8")
    r = CliRunner().invoke(cli_main, ["pack", "-"], input=raw)
    assert r.exit_code in (0, 1, 2), r.output
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), repr(r.exception)
    if r.exit_code:
        assert "error:" in r.output


BAD_BYTES = {
    "invalid_utf8": b'{"question": "\xff\xfe caf\xe9", "principal": {"tenant": "acme"}, "candidates": []}',
    "deep_json": b"[" * 200_000 + b"]" * 200_000,
    "deep_object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "nan_score": b'{"question": "q", "principal": {"tenant": "acme"}, "candidates": [{"id": "a", "source_id": "s", '
    b'"text": "t", "score": NaN}]}',
    "empty": b"",
    "not_json": b"hello",
    "negative_limit": b'{"question": "q", "principal": {"tenant": "acme"}, "input_limit": -5, "candidates": []}',
    "huge_number": b'{"question": "q", "principal": {"tenant": "acme"}, "input_limit": 1'
    + b"0" * 5000
    + b', "candidates": []}',
    "duplicate_ids": b'{"question": "q", "principal": {"tenant": "acme"}, "candidates": [{"id": "a", "source_id": "s", '
    b'"text": "t"}, {"id": "a", "source_id": "s", "text": "u"}]}',
    "empty_question": b'{"question": "  ", "principal": {"tenant": "acme"}, "candidates": []}',
    "bom": b'\xef\xbb\xbf{"question": "q"}',
}


_CLI_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=_CLI_XFAIL[n])) if n in _CLI_XFAIL else n
        for n in sorted(BAD_BYTES)
    ],
)
def test_cli_subprocess_bad_bytes_give_an_error_line_not_a_traceback(name: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", "pack", "-"],
        input=BAD_BYTES[name],
        capture_output=True,
        timeout=120,
        check=False,
    )
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode in (1, 2), (r.returncode, err[-500:])
    assert "Traceback" not in err, err[-2000:]
    assert err.startswith("error:"), err[:300]
    assert len(err) < 2000


# ---------------------------------------------------------------- HTTP

KEY = "bad-input-key-0123456"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from admit.service.config import settings_from_dict
    from admit.service.http import LoopbackServer, create_app
    from admit.testing.kb import memory_kb

    cfg = settings_from_dict(
        {
            "service": {
                "keys": {"acme": {"key_sha256": hashlib.sha256(KEY.encode()).hexdigest(), "tenant": "acme"}},
                "prune_strategy": "top_n",
                "limits": {"max_body_bytes": 1_000_000, "max_text_chars": 20_000, "request_timeout_s": 30},
            }
        },
        base_dir=tmp_path_factory.mktemp("bad"),
    )
    kb = memory_kb([Chunk(id="d#1", source_id="d", text="The port is 8080.", access=ACME)])
    with LoopbackServer(create_app(cfg, kb=kb)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        yield c


H = {"X-API-Key": KEY, "Content-Type": "application/json"}
HTTP_BAD: dict[str, tuple[str, bytes]] = {
    "invalid_utf8": ("/v1/search", b'{"query": "\xff\xfe caf\xe9"}'),
    "deep_json": ("/v1/pack", b"[" * 100_000 + b"]" * 100_000),
    "deep_object": ("/v1/search", b'{"query":' * 20_000 + b'"x"' + b"}" * 20_000),
    "nan_score": (
        "/v1/pack",
        b'{"question": "q", "candidates": [{"id": "a", "source_id": "s", "text": "t", "score": NaN}]}',
    ),
    "infinity_score": ("/v1/prune", b'{"question": "q", "candidates": [{"id": "a", "text": "t", "score": Infinity}]}'),
    "empty": ("/v1/search", b""),
    "not_json": ("/v1/search", b"hello"),
    "negative_top_k": ("/v1/search", b'{"query": "port", "top_k": -1}'),
    "negative_input_limit": ("/v1/pack", b'{"question": "q", "input_limit": -5, "candidates": []}'),
    "huge_int": ("/v1/search", b'{"query": "port", "top_k": 1' + b"0" * 4000 + b"}"),
    "duplicate_ids_pack": (
        "/v1/pack",
        b'{"question": "q", "candidates": [{"id": "a", "source_id": "s", "text": "t"}, '
        b'{"id": "a", "source_id": "s", "text": "u"}]}',
    ),
    "duplicate_ids_prune": (
        "/v1/prune",
        b'{"question": "q", "candidates": [{"id": "a", "text": "t"}, {"id": "a", "text": "u"}]}',
    ),
    "empty_text_prune": ("/v1/prune", b'{"question": "q", "candidates": [{"id": "a", "text": ""}]}'),
    "huge_query": ("/v1/search", json.dumps({"query": "x" * 200_000}).encode()),
    "too_big_body": ("/v1/pack", b'{"question": "' + b"x" * 1_100_000 + b'"}'),
    "principal_in_body": ("/v1/pack", b'{"question": "q", "principal": {"tenant": "globex"}, "candidates": []}'),
    "wrong_types": ("/v1/search", b'{"query": ["a"], "top_k": "many", "prune": "maybe"}'),
    "model_path": ("/v1/pack", b'{"question": "q", "model": "/etc/passwd", "candidates": []}'),
    "surrogate_escape": ("/v1/search", b'{"query": "\\ud800\\udfff\\ud800"}'),
}


@pytest.mark.parametrize("name", sorted(HTTP_BAD))
def test_http_bad_input_is_a_4xx_with_a_json_error(live: Any, name: str) -> None:
    path, body = HTTP_BAD[name]
    r = live.post(path, content=body, headers=H)
    assert 400 <= r.status_code < 500 or (name in {"empty_text_prune", "surrogate_escape"} and r.status_code == 200), (
        r.status_code,
        r.text[:300],
    )
    assert "Traceback" not in r.text
    if r.status_code >= 400:
        err = r.json()
        assert err["detail"]
        assert len(r.text) < 5000


@pytest.mark.parametrize("name", ["invalid_utf8", "deep_json"])
def test_http_unparseable_body_uses_the_service_error_shape(live: Any, name: str) -> None:
    path, body = HTTP_BAD[name]
    r = live.post(path, content=body, headers=H)
    assert set(r.json()) == {"error", "kind", "detail", "field"}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    data=st.one_of(json_st, st.composite(_request_like)()),
    path=st.sampled_from(["/v1/pack", "/v1/prune", "/v1/search"]),
)
def test_http_any_json_is_never_a_5xx(live: Any, data: Any, path: str) -> None:
    r = live.post(path, content=json.dumps(data, allow_nan=True).encode(), headers=H)
    assert r.status_code < 500, r.text[:300]
    assert "Traceback" not in r.text


# ---------------------------------------------------------------- KB: nothing partially written


class ExplodingEmbedder:
    """Embeds ``ok_calls`` batches, then raises (a crash in the middle of an ingest)."""

    def __init__(self, inner: Any, ok_calls: int) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.name = inner.name
        self.left = ok_calls

    def embed(self, texts: Any) -> Any:
        if self.left <= 0:
            raise RuntimeError("embedder crashed")
        self.left -= 1
        return self.inner.embed(texts)


def _snapshot(kb: Any) -> dict[str, tuple[str, ...]]:
    out = {}
    for s in kb.sources():
        out[s.source_id] = tuple(sorted(r.text for r in kb.store.get_source_chunks(s.source_id, s.tenant)))
    return out


def test_failed_ingest_leaves_the_kb_as_it_was(tmp_path: Path) -> None:
    pytest.importorskip("sqlean")
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"doc{i}.md").write_text(
            f"# Doc {i}\n\nVersion one of document {i}.\n\n## Part\n\nMore {i}.\n", "utf-8"
        )
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path, embedder=FakeEmbedder(dim=32)) as kb:
        kb.ingest([docs], tenant="acme")
        before = _snapshot(kb)
        count = kb.count()
    for i in range(6):
        (docs / f"doc{i}.md").write_text(f"# Doc {i}\n\nVersion TWO of document {i}.\n\n## Part\n\nNew {i}.\n", "utf-8")
    with KnowledgeBase(path, embedder=ExplodingEmbedder(FakeEmbedder(dim=32), ok_calls=3)) as kb:
        with pytest.raises(Exception, match="embedder crashed"):
            # texts are batched across files: 2 per batch is one file's two chunks, so one call per file
            kb.ingest([docs], tenant="acme", batch_size=2)
        after = _snapshot(kb)
        assert kb.count() == count
    # every source is either wholly old or wholly new: never a mix of versions inside one source
    assert set(after) == set(before)
    for sid, texts in after.items():
        joined = " ".join(texts)
        assert not ("one" in joined and "TWO" in joined), (sid, texts)
    assert sum(1 for t in after.values() if "TWO" in " ".join(t)) == 3
    # ingest again with a working embedder: everything is new
    with KnowledgeBase(path, embedder=FakeEmbedder(dim=32)) as kb:
        kb.ingest([docs], tenant="acme")
        assert all("TWO" in " ".join(t) for t in _snapshot(kb).values())


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x00bad utf-8 \xe9", b"", b"\x00" * 100, ("# T\n\n" + "word " * 50_000).encode()],
    ids=["invalid_utf8", "empty", "nul", "huge"],
)
def test_ingest_of_odd_files_is_clean(tmp_path: Path, content: bytes) -> None:
    pytest.importorskip("sqlean")
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase

    f = tmp_path / "odd.md"
    f.write_bytes(content)
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=32)) as kb:
        try:
            kb.ingest([f], tenant="acme")
        except AdmitError:
            assert kb.count() == 0
            return
        for s in kb.sources():
            for r in kb.store.get_source_chunks(s.source_id, s.tenant):
                assert r.text.strip()
                r.text.encode("utf-8")  # stored text is valid UTF-8


def test_ingest_of_a_missing_path_changes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("sqlean")
    from admit.backends.embedders import FakeEmbedder
    from admit.errors import ConfigError
    from admit.kb import KnowledgeBase

    good = tmp_path / "good.md"
    good.write_text("# Good\n\nText.\n", "utf-8")
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=32)) as kb:
        with pytest.raises(ConfigError, match="does not exist"):
            kb.ingest([good, tmp_path / "missing.md"], tenant="acme")
        assert kb.count() == 0
