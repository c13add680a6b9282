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


class _Clock:
    """A clock the test moves by hand (progress lines are due by time; no test reads the real one)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_progress_is_a_line_every_interval() -> None:
    import io

    out, clock = io.StringIO(), _Clock()
    p = IngestProgress(total_bytes=400, enabled=True, stream=out, interval=5.0, clock=clock)
    p.file("a.md", 100)
    p.found(10)
    clock.now = 4.9
    p.done(4)
    assert out.getvalue() == ""  # not yet due
    clock.now = 5.0
    p.done(1)
    first = out.getvalue().splitlines()
    assert first == ["ingest: 5/~40 chunks (12%), 1 files read, 1.0 chunks/s, ETA 0:00:35, now a.md"]
    clock.now = 6.0
    p.file("b.md", 300)
    p.found(30)
    assert len(out.getvalue().splitlines()) == 1  # one line per interval, however many updates
    clock.now = 10.0
    p.done(35)
    clock.now = 12.5
    p.stop()
    lines = out.getvalue().splitlines()
    assert lines[1] == "ingest: 40/40 chunks (100%), 2 files read, 4.0 chunks/s, ETA 0:00:00, now b.md"
    assert lines[2] == "ingest: 40/40 chunks (100%), 2 files, 3.2 chunks/s, ETA 0:00:00, done in 0:00:12"
    assert p.lines_written == 3


def test_a_run_shorter_than_the_interval_writes_a_line_only_when_asked() -> None:
    import io

    for final, expected in ((False, 0), (True, 1)):
        out, clock = io.StringIO(), _Clock()
        p = IngestProgress(total_bytes=10, enabled=True, final=final, stream=out, interval=5.0, clock=clock)
        p.file("a.md", 10)
        p.found(2)
        p.done(2)
        p.stop()
        assert len(out.getvalue().splitlines()) == expected
    quiet = io.StringIO()
    off = IngestProgress(total_bytes=10, enabled=False, final=True, stream=quiet, interval=0.0)
    off.found(1)
    off.done(1)
    off.stop()
    assert quiet.getvalue() == ""


def test_cli_ingest_writes_progress_lines_when_stderr_is_a_file(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    docs = _small_files(tmp_path / "docs", 4)
    err = tmp_path / "stderr.log"
    cmd = [sys.executable, "-c", "from admit.cli import main; main()", "ingest", str(docs)]
    cmd += ["--kb", str(tmp_path / "kb.sqlite"), "--embedder", "fake", "--access", "tenant:t", "--progress"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    with err.open("w") as fh:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=fh, text=True, timeout=300, env=env, check=False)
    assert res.returncode == 0
    log = err.read_text("utf-8")
    assert "\x1b[" not in log and "━" not in log  # plain lines, no bar drawn into the file
    last = log.splitlines()[-1]
    assert last.startswith("ingest: 4/4 chunks (100%), 4 files, ") and "done in" in last
    assert "4 files seen" in res.stdout


def test_each_distinct_text_is_encoded_once_and_longest_first(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    boiler = "Copyright the authors. Licensed under the MIT license."
    for i in range(6):  # every page ends with the same paragraph under the same heading
        body = f"Topic {i} " + "word " * (5 + 20 * i)
        (docs / f"p{i}.md").write_text(f"# Guide\n\n## Part {i}\n\n{body}\n\n## Legal\n\n{boiler}\n", "utf-8")
    # each page its own authority: the registry says they are different sources, so the legal paragraph is
    # stored with each (not once, as copies of one source's text are: admit.kb.copies) and embedded once
    reg = tmp_path / "sources.toml"
    reg.write_text("".join(f'[[sources]]\nmatch = "p{i}.md"\nauthority = 0.{i + 2}\n\n' for i in range(6)), "utf-8")
    emb = CountingEmbedder()
    seen: list[str] = []
    inner = emb.embed

    def spy(texts: Sequence[str]) -> np.ndarray:
        seen.extend(texts)
        return inner(texts)

    emb.embed = spy  # type: ignore[method-assign]
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=emb) as kb:
        rep = kb.ingest([docs], tenant="acme", batch_size=64, registry=reg)
        vectors = _vectors(kb)
    assert rep.chunks_embedded == 12 and not rep.errors
    assert len(seen) == len(set(seen)) == 7  # six topics and the one legal paragraph, each encoded once
    assert [len(t) for t in seen] == sorted((len(t) for t in seen), reverse=True)
    legal = [v for cid, v in vectors.items() if cid.endswith("#legal")]
    assert len(legal) == 6 and all(np.array_equal(v, legal[0]) for v in legal)
