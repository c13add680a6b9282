"""Backends: tokenizers, embedders, rerankers and LLMs, each behind a small Protocol."""
