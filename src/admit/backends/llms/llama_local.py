"""A local GGUF model run in-process by llama.cpp (``llama-cpp-python``, extra ``admit[llama]``).

JSON-schema constrained output goes through llama.cpp's grammar (``response_format={"type": "json_object",
"schema": ...}``), so the model cannot produce anything the schema does not allow. Calls are serialised (a
``Llama`` instance is not thread-safe). ``timeout`` cannot interrupt an in-process generation: bound the
work with ``max_tokens`` instead; a call that ran past its timeout is reported as a timeout afterwards.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Unpack

from admit.backends.llms.base import CompleteOptions, LLMReply
from admit.backends.llms.spec import LLMSpec
from admit.errors import BackendError, BackendTimeout, ConfigError, MissingExtraError
from admit.types import Message

__all__ = ["SPEC", "LlamaLocalLLM"]

logger = logging.getLogger(__name__)


class LlamaLocalLLM:
    """``LlamaLocalLLM("/models/qwen2.5-0.5b-instruct-q4_k_m.gguf")``: a GGUF file the user supplies."""

    name = "llama"

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        chat_format: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """Load the model.

        Args:
            model_path: Path to a ``.gguf`` file.
            n_ctx: Context window (prompt + completion tokens).
            n_threads: CPU threads (default: llama.cpp's choice).
            seed: Sampling seed (temperature 0 is greedy anyway).
            chat_format: Override the chat template named in the GGUF metadata.
            timeout: Default timeout, checked after the call (see the module docstring).
        """
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"GGUF model not found: {str(path)!r}; give the path to a .gguf file.")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingExtraError("llama-cpp-python", "llama") from exc
        kwargs: dict[str, Any] = {"model_path": str(path), "n_ctx": int(n_ctx), "seed": int(seed), "verbose": False}
        if n_threads is not None:
            kwargs["n_threads"] = int(n_threads)
        if chat_format is not None:
            kwargs["chat_format"] = chat_format
        try:
            self._llama = Llama(**kwargs)
        except Exception as exc:  # llama.cpp raises ValueError/RuntimeError on a bad file
            raise ConfigError(f"Could not load GGUF model {str(path)!r}: {exc}") from exc
        self.model = path.stem
        self.model_path = str(path)
        self.n_ctx = int(n_ctx)
        self.timeout = timeout
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        """Describe the backend."""
        return f"LlamaLocalLLM(model_path={self.model_path!r}, n_ctx={self.n_ctx})"

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the model's own tokenizer."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def complete(self, messages: Sequence[Message], **opts: Unpack[CompleteOptions]) -> LLMReply:
        """Return one chat completion, grammar-constrained to ``json_schema`` when given."""
        json_schema, max_tokens = opts.get("json_schema"), opts.get("max_tokens", 512)
        temperature, timeout = opts.get("temperature", 0.0), opts.get("timeout")
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
        }
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": dict(json_schema)}
        t0 = time.perf_counter()
        try:
            with self._lock:
                out: Any = self._llama.create_chat_completion(**kwargs)
        except ValueError as exc:  # e.g. prompt longer than n_ctx
            raise BackendError(f"llama.cpp ({self.model}): {exc}") from exc
        except Exception as exc:
            raise BackendError(f"llama.cpp ({self.model}) failed: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - t0
        limit = timeout or self.timeout
        if limit is not None and latency > limit:
            raise BackendTimeout(f"llama.cpp ({self.model}) took {latency:.1f}s, over the {limit:.1f}s timeout.")
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return LLMReply(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            model=self.model,
            finish_reason=choice.get("finish_reason"),
            structured="json_object_schema" if json_schema is not None else "prompt",
        )


SPEC = LLMSpec(
    name="llama", build=LlamaLocalLLM, usage="llama:/path/model.gguf", summary="a GGUF via llama.cpp", needs_target=True
)
"""The ``llama`` backend's spec (``build(target, **kwargs)`` is the constructor: the target is the model path)."""
