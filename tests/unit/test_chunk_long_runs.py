"""Issue 47, item 6 (the chunker): a run of text without spaces is split at the chunk's token limit, and a page
costs token counting linear in its size (each sentence and word counted once, each full chunk once more).

Before, a run without spaces became one chunk of any size (20 MB with a limit of 350 tokens), and a long
paragraph without sentence ends counted the whole growing chunk again for every word it added.
"""

from __future__ import annotations

import random
import string

from admit.backends.tokenizers import resolve_tokenizer
from admit.kb.chunking import chunk_document
from admit.kb.parse import parse_document

LIMIT = 350
_TOK = resolve_tokenizer("cl100k_base")


class CountingTokenizer:
    """The real cl100k tokenizer, adding up how many characters it was asked to count."""

    name = "cl100k_base"
    tokens_per_message = 3
    reply_priming = 3

    def __init__(self) -> None:
        self.chars = 0

    def encode(self, text: str) -> list[int]:
        self.chars += len(text)
        return _TOK.encode(text)

    def count(self, text: str) -> int:
        self.chars += len(text)
        return _TOK.count(text)


def _run(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _words(n: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n:
        w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 9)))
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def test_a_run_without_spaces_is_split_at_the_token_limit() -> None:
    run = _run(120_000)
    doc = parse_document(f"# Blob\n\nBefore the blob.\n\n{run}\n\nAfter the blob.\n", "markdown", fallback_title="t")
    chunks = chunk_document(doc, max_tokens=LIMIT)
    counts = [_TOK.count(c.text) for c in chunks]
    assert len(chunks) > 100
    assert max(counts) <= LIMIT
    assert sum(counts[1:-1]) / len(counts[1:-1]) > 0.8 * LIMIT  # full chunks, not slivers
    joined = "".join(c.text for c in chunks)
    assert run in joined.replace("Before the blob.", "").replace("After the blob.", "").replace("\n", "").replace(
        " ", ""
    )
    assert len({c.section_path for c in chunks}) == len(chunks)


def test_a_long_word_among_words_keeps_the_text_and_the_order() -> None:
    blob = _run(9_000, seed=3)
    text = f"First words here {blob} and the words after it go on for a while"
    chunks = chunk_document(parse_document(f"# T\n\n{text}\n", "markdown", fallback_title="t"), max_tokens=64)
    assert all(_TOK.count(c.text) <= 64 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")
    assert chunks[0].text.startswith("First words here")
    assert chunks[-1].text.endswith("go on for a while")


def test_token_counting_is_linear_in_the_page() -> None:
    for body in (_run(200_000), _words(200_000)):
        tok = CountingTokenizer()
        chunks = chunk_document(
            parse_document(f"# Page\n\n{body}\n", "markdown", fallback_title="t"), tokenizer=tok, max_tokens=LIMIT
        )
        assert all(_TOK.count(c.text) <= LIMIT for c in chunks)
        # each character counted a bounded number of times (the paragraph, its word or window, its chunk)
        assert tok.chars <= 12 * len(body), tok.chars / len(body)
