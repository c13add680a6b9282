"""OpenAI encodings load through bpe-openai's Rust tokenizer alone, and count exactly as the package does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from admit.backends.tokenizers import resolve_tokenizer

TEXTS = [
    "",
    "hello world",
    "What does error E4012 mean and how do I fix it?",
    "lone surrogate \ud800 inside",
    "Ünïcödé façade 東京タワー 😀🚀 " * 30,
    "<|endoftext|> is plain text in a document",
    "line one\nline two\n\n  indented\tTabbed\r\n",
    "x" * 5000,
]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_same_ids_and_counts_as_the_package(encoding: str) -> None:
    import bpe_openai

    ours = resolve_tokenizer(encoding)
    theirs = bpe_openai.get_encoding(encoding)
    for text in TEXTS:
        assert ours.encode(text) == list(theirs.encode_ordinary(text)), text[:40]
        assert ours.count(text) == len(theirs.encode_ordinary(text)), text[:40]


def test_loading_an_encoding_does_not_import_the_package() -> None:
    code = (
        "import sys\n"
        "from admit.backends.tokenizers import resolve_tokenizer\n"
        "assert resolve_tokenizer('gpt-4o').count('hello world') == 2\n"
        "print('bpe_openai' in sys.modules)\n"
        "import bpe_openai\n"  # the full package still imports afterwards, reusing the loaded extension
        "assert bpe_openai.get_encoding('o200k_base').encode_ordinary('hello world') == [24912, 2375]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
