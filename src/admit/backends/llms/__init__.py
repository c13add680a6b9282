"""LLM backends for the LLM pruners: any OpenAI-compatible endpoint, a local llama.cpp GGUF, a scripted fake, and
any a third-party package registers (:mod:`admit.backends.llms.catalogue`).

``resolve_llm`` accepts an instance or a spec string:

* ``openai:MODEL`` (api.openai.com) or ``openai:MODEL@BASE_URL`` (any OpenAI-compatible server);
* ``llama:/path/to/model.gguf`` (in-process llama.cpp, extra ``admit[llama]``);
* ``fake`` (the scripted test model, answers ``{}``).
"""

from __future__ import annotations

import threading
from typing import Any

from admit.backends.llms.base import LLM, LLMReply, StructuredMode
from admit.backends.llms.catalogue import LLMS, llm_usage
from admit.backends.llms.fake import FakeLLM
from admit.backends.llms.pricing import DEFAULT_PRICES, Price, PriceTable
from admit.backends.llms.spec import LLMSpec
from admit.errors import ConfigError

__all__ = [
    "DEFAULT_PRICES",
    "LLM",
    "LLMS",
    "FakeLLM",
    "LLMReply",
    "LLMSpec",
    "Price",
    "PriceTable",
    "StructuredMode",
    "configure_llm",
    "default_llm_spec",
    "openai_spec",
    "resolve_llm",
]


def openai_spec(model: str, base_url: str | None = None) -> str:
    """The ``openai:`` spec of a model on an OpenAI-compatible server (``None``: api.openai.com)."""
    return f"openai:{model}@{base_url}" if base_url else f"openai:{model}"


_ENDPOINT: dict[str, str | None] = {"model": None, "base_url": None}
_ENDPOINT_LOCK = threading.Lock()


def configure_llm(*, model: str | None = None, base_url: str | None = None) -> None:
    """Set the endpoint an LLM strategy uses in this process when it is given neither an LLM nor a model
    (``None``: none). The command line sets it from ``admit --llm-model`` / ``--llm-base-url``, which read
    ``ADMIT_LLM_MODEL`` / ``ADMIT_LLM_BASE_URL``; the library reads no environment variable for it."""
    with _ENDPOINT_LOCK:
        _ENDPOINT.update(model=model or None, base_url=base_url or None)


def default_llm_spec(*, base_url: str | None = None) -> str | None:
    """The ``openai:`` spec of the endpoint :func:`configure_llm` set (``base_url``, when given, replaces its
    base URL), or ``None`` when no model was set."""
    with _ENDPOINT_LOCK:
        model, configured_url = _ENDPOINT["model"], _ENDPOINT["base_url"]
    return openai_spec(model, base_url or configured_url) if model else None


def resolve_llm(spec: str | LLM, **kwargs: Any) -> LLM:
    """Return an LLM for a spec string (``SCHEME:TARGET`` or ``SCHEME``, the scheme from the catalogue) or the
    instance itself.

    ``kwargs`` go to the backend's constructor (``api_key_env=``, ``timeout=``, ``n_ctx=``, ...).

    Raises:
        ConfigError: An unknown scheme (the message says how the known ones are written), or not an LLM.
    """
    if not isinstance(spec, str):
        if not isinstance(spec, LLM):
            raise ConfigError(f"{spec!r} is not an LLM: it needs `name`, `model` and `complete(messages, ...)`.")
        return spec
    scheme, _, target = spec.strip().partition(":")
    found = LLMS.find(scheme)
    if found is None:
        raise ConfigError(f"Unknown LLM spec {spec!r}; use {llm_usage()}.")
    return found.make(target, kwargs)
