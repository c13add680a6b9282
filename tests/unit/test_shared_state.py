"""Shared caches: keyed by identity, bounded, thread-safe where threads share them."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from admit.backends.embedders import CachedEmbedder
from admit.backends.embedders.fake import FakeEmbedder
from admit.backends.tokenizers import resolve_tokenizer
from admit.backends.tokenizers.base import cached_count, clear_count_cache, count_key, seed_counts


class Named:
    """A tokenizer that counts characters (or words), whatever its name says."""

    tokens_per_message = 3
    reply_priming = 3
    line_additive = False

    def __init__(self, name: str, per_char: bool) -> None:
        self.name = name
        self.per_char = per_char

    def count(self, text: str) -> int:
        return len(text) if self.per_char else len(text.split())

    def encode(self, text: str) -> list[int]:
        return list(range(self.count(text)))


def test_two_tokenizers_with_one_name_do_not_share_counts() -> None:
    clear_count_cache()
    chars, words = Named("custom", per_char=True), Named("custom", per_char=False)
    assert count_key(chars) != count_key(words)
    assert cached_count(chars, "two words") == 9
    assert cached_count(words, "two words") == 2  # not the 9 remembered for the other "custom"


def test_the_shipped_encodings_share_counts_by_encoding_and_take_seeds() -> None:
    clear_count_cache()
    a, b = resolve_tokenizer("gpt-4o"), resolve_tokenizer("o200k_base")
    assert count_key(a) == count_key(b) == ("bpe", "o200k_base")
    seed_counts("o200k_base", [("a seeded line", 42)])
    assert cached_count(b, "a seeded line") == 42  # the seed, not a count
    clear_count_cache()
    assert cached_count(b, "a seeded line") == 3


class SlowCounting(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=8)
        self.seen: list[str] = []
        self.inside = 0
        self.overlap = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.inside += 1
        self.overlap |= self.inside > 1
        try:
            self.seen.extend(texts)
            return super().embed(texts)
        finally:
            self.inside -= 1


def test_cached_embedder_is_safe_to_share_between_threads() -> None:
    inner = SlowCounting()
    cache = CachedEmbedder(inner, max_items=1000)
    texts = [f"text {i}" for i in range(50)]
    barrier = threading.Barrier(8)
    out: list[np.ndarray] = []

    def work() -> None:
        barrier.wait()
        out.append(cache.embed(texts))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 8 and all(np.array_equal(o, out[0]) for o in out)
    assert sorted(inner.seen) == sorted(texts)  # each text computed once, not once per thread
    assert not inner.overlap and len(cache) == 50


def test_knowledge_base_pipelines_are_bounded_and_keyed_by_identity() -> None:
    from admit.kb import KnowledgeBase
    from admit.policy import load_policy_set

    kb = KnowledgeBase(":memory:", embedder=FakeEmbedder(dim=384))
    try:
        assert kb._pipeline(None) is kb._pipeline(None)
        a, b = load_policy_set(None), load_policy_set(None)
        assert kb._pipeline(a) is not kb._pipeline(b)  # equal-looking policy sets, two objects
        assert kb._pipeline(a).policies is a
        for _ in range(20):
            kb._pipeline(load_policy_set(None))
        assert len(kb._pipelines) <= 8
    finally:
        kb.close()
