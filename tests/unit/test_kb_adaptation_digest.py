"""Issue 48 review item: a search tells whether the stored adaptation changed by a small digest key, not by reading
the adaptation's stored form (tens of KB with its vocabulary) from the store's metadata; the parsed adaptation is kept
per knowledge base. On main (41326bb) every search read the whole stored form."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.answerability import adaptation as adaptation_mod
from admit.answerability.adaptation import DIGEST_KEY, META_KEY, Adaptation
from admit.backends.embedders import FakeEmbedder
from admit.kb import KnowledgeBase, parse_principal
from admit.types import Access, Chunk

WHO = parse_principal("tenant:t")


def _chunks(n: int) -> list[Chunk]:
    return [
        Chunk(id=f"a#{i}", source_id="a", text=f"the server listens on port {8000 + i}", access=Access(tenant="t"))
        for i in range(n)
    ]


def _adaptation(lo: float, chunks: int) -> Adaptation:
    vocab = frozenset([*(f"word{i}" for i in range(3000)), "server", "listen", "port"])  # a real one's size
    return Adaptation(
        thresholds={"lexical": (lo, lo)}, made="2026-12-07T04:00:00+00:00", chunks=chunks, vocabulary=vocab
    )


class _Reads:
    """Counts the metadata keys a store is asked for, and the adaptations parsed."""

    def __init__(self, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
        self.keys: list[str] = []
        self.parsed = 0
        get = kb.store.get_meta
        parse = Adaptation.from_json.__func__  # type: ignore[attr-defined]

        def get_meta(key: str) -> str | None:
            self.keys.append(key)
            return get(key)

        def from_json(cls: type[Adaptation], text: str) -> Adaptation:
            self.parsed += 1
            return parse(cls, text)  # type: ignore[no-any-return]

        monkeypatch.setattr(kb.store, "get_meta", get_meta)
        monkeypatch.setattr(adaptation_mod.Adaptation, "from_json", classmethod(from_json))


def test_an_unchanged_adaptation_is_neither_read_nor_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path, embedder=FakeEmbedder()) as kb:
        kb.add_chunks(_chunks(10))
        kb.save_adaptation(_adaptation(0.3, kb.count()), kb.fingerprint())
    with KnowledgeBase(path, embedder=FakeEmbedder()) as kb:
        reads = _Reads(kb, monkeypatch)
        first = kb.search("Which port does the server listen on?", WHO)
        assert first.trace["answer"]["adaptation"].startswith("thresholds adapted")
        assert reads.parsed == 1 and reads.keys.count(META_KEY) == 1
        for _ in range(3):
            kb.search("Which port does the server listen on?", WHO)
        assert reads.parsed == 1  # not parsed again
        assert reads.keys.count(META_KEY) == 1  # nor its stored form read again
        assert reads.keys.count(DIGEST_KEY) == 4  # the digest once per search


def test_a_changed_adaptation_is_seen_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path, embedder=FakeEmbedder()) as kb, KnowledgeBase(path, embedder=FakeEmbedder()) as other:
        kb.add_chunks(_chunks(10))
        kb.save_adaptation(_adaptation(0.3, kb.count()), kb.fingerprint())
        assert other.adaptation() is not None and other.adaptation().thresholds["lexical"] == (0.3, 0.3)  # type: ignore[union-attr]
        kb.save_adaptation(_adaptation(0.45, kb.count()), kb.fingerprint())  # another process adapts it again
        again = other.adaptation()
        assert again is not None and again.thresholds["lexical"] == (0.45, 0.45)
        kb.clear_adaptation()
        assert other.adaptation() is None


def test_a_knowledge_base_adapted_before_the_digest_still_reads_its_adaptation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kb.sqlite"
    ad = _adaptation(0.3, 10)
    with KnowledgeBase(path, embedder=FakeEmbedder()) as kb:
        kb.add_chunks(_chunks(10))
        kb.store.set_meta(META_KEY, ad.to_json())  # as an older version stored it: no digest
    with KnowledgeBase(path, embedder=FakeEmbedder()) as kb:
        reads = _Reads(kb, monkeypatch)
        assert kb.adaptation() == ad and kb.adaptation() == ad
        assert reads.parsed == 1  # read each time, parsed once
        kb.check_adaptation()  # any ingest: the digest is stored from then on
        assert kb.store.get_meta(DIGEST_KEY) == adaptation_mod.digest(ad.to_json())
        before = reads.keys.count(META_KEY)
        assert kb.adaptation() == ad
        assert reads.keys.count(META_KEY) == before
