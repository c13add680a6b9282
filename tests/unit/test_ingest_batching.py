"""Ingest embeds in batches gathered across files and reports progress per chunk (counted, never timed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.backends.embedders import FakeEmbedder
from admit.cli import main
from admit.kb import KnowledgeBase
from admit.kb._progress import IngestProgress


class CountingEmbedder(FakeEmbedder):
    """FakeEmbedder that remembers the size of every call."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim=dim)
        self.sizes: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.sizes.append(len(texts))
        return super().embed(texts)


def _small_files(root: Path, n: int) -> Path:
    root.mkdir()
    for i in range(n):
        (root / f"note{i:02d}.md").write_text(
            f"# Note {i}\n\nA short note about topic {i} and nothing else.\n", "utf-8"
        )
    return root


def _vectors(kb: KnowledgeBase) -> dict[str, np.ndarray]:
    return {
        r.id: np.asarray(r.embedding) for s in kb.sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)
    }


def test_small_files_share_one_embedding_call(tmp_path: Path) -> None:
    docs = _small_files(tmp_path / "docs", 12)
    emb = CountingEmbedder()
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=emb) as kb:
        rep = kb.ingest([docs], tenant="acme", batch_size=64)
        assert rep.sources_added == 12 and rep.chunks_embedded == 12 and rep.chunks_written == 12
        assert kb.count() == 12
    assert emb.sizes == [12]  # one call for twelve one-chunk files, not twelve calls


def test_batches_never_exceed_the_batch_size_and_vectors_do_not_depend_on_it(tmp_path: Path) -> None:
    docs = _small_files(tmp_path / "docs", 9)
    big = tmp_path / "docs" / "guide.md"
    big.write_text(
        "# Guide\n\n" + "\n\n".join(f"## Part {i}\n\n" + f"Step {i} explains a setting. " * 40 for i in range(6)),
        "utf-8",
    )
    stored = []
    for size in (1, 4, 64):
        emb = CountingEmbedder()
        with KnowledgeBase(tmp_path / f"kb{size}.sqlite", embedder=emb) as kb:
            rep = kb.ingest([docs], tenant="acme", batch_size=size)
            assert not rep.errors
            stored.append(_vectors(kb))
        assert max(emb.sizes) <= size
        assert sum(emb.sizes) >= rep.chunks_embedded
    assert stored[0].keys() == stored[1].keys() == stored[2].keys()
    for cid in stored[0]:
        assert np.array_equal(stored[0][cid], stored[2][cid])
        assert np.array_equal(stored[1][cid], stored[2][cid])


def test_reingest_of_unchanged_files_embeds_nothing(tmp_path: Path) -> None:
    docs = _small_files(tmp_path / "docs", 5)
    emb = CountingEmbedder()
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=emb) as kb:
        kb.ingest([docs], tenant="acme")
        (docs / "note03.md").write_text("# Note 3\n\nRewritten.\n", "utf-8")
        emb.sizes.clear()
        rep = kb.ingest([docs], tenant="acme")
    assert rep.sources_unchanged == 4 and rep.sources_updated == 1 and rep.chunks_embedded == 1
    assert emb.sizes == [1]


def test_progress_estimates_the_total_from_the_bytes_read() -> None:
    p = IngestProgress(total_bytes=1000, enabled=False)
    assert p.estimate() == 0
    p.file("a.md", 100)
    p.found(5)
    assert p.estimate() == 50  # 5 chunks per 100 bytes, 900 bytes to go
    p.done(5)
    p.file("b.md", 900)
    p.found(20)
    assert p.estimate() == 25  # every byte read: the count is exact
    p.done(20)
    p.stop()
    assert p.chunks_done == 25


def test_cli_ingest_shows_chunks_and_an_eta_on_stderr(tmp_path: Path) -> None:
    docs = _small_files(tmp_path / "docs", 3)
    args = ["ingest", str(docs), "--kb", str(tmp_path / "kb.sqlite"), "--embedder", "fake", "--tenant", "acme"]
    res = CliRunner().invoke(main, [*args, "--progress"])  # asked for: CliRunner's stderr is not a terminal
    assert res.exit_code == 0, res.output
    assert "3/3 chunks" in res.stderr
    assert "ETA" in res.stderr
    assert "3 files seen" in res.stdout
