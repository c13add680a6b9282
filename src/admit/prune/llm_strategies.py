"""Build the LLM pruners by name: ``graded``, ``select``, ``budget_select``, ``anchors``.

:func:`admit.prune.resolve_pruner` calls :func:`build` for these names.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from admit.backends.llms import LLM, PriceTable, environment_llm_spec, openai_spec, resolve_llm
from admit.errors import ConfigError
from admit.prune.base import Pruner
from admit.prune.cache import PruneCache

__all__ = ["LLM_STRATEGIES", "build", "build_llm"]

logger = logging.getLogger(__name__)

LLM_STRATEGIES = ("graded", "select", "budget_select", "anchors")
_FOREIGN = {"embedder", "scorer"}  # options meant for other strategies (the pipeline passes one set to all)


def build_llm(
    llm: str | LLM | None = None,
    *,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key_env: str | None = None,
    llm_timeout: float | None = None,
    strategy: str = "graded",
) -> LLM:
    """Return the grader model: ``llm`` (instance or spec), else ``llm_model``/``llm_base_url`` as an
    ``openai:`` spec, else the spec of the environment (:func:`~admit.backends.llms.environment_llm_spec`)."""
    if llm is not None:
        return resolve_llm(llm)
    spec = openai_spec(llm_model, llm_base_url) if llm_model else environment_llm_spec(base_url=llm_base_url)
    if spec is None:
        raise ConfigError(
            f"strategy {strategy!r} needs an LLM: on the command line --llm-base-url URL --llm-model MODEL; in "
            "Python llm= (an LLM or a spec like openai:MODEL@URL) or llm_model= (and llm_base_url=); or set "
            "ADMIT_LLM_MODEL / ADMIT_LLM_BASE_URL."
        )
    kwargs: dict[str, Any] = {}
    if llm_api_key_env:
        kwargs["api_key_env"] = llm_api_key_env
    if llm_timeout is not None:
        kwargs["timeout"] = float(llm_timeout)
    return resolve_llm(spec, **kwargs)


def build(
    name: str,
    *,
    llm: str | LLM | None = None,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key_env: str | None = None,
    llm_timeout: float | None = None,
    reranker: Any = None,
    cache: PruneCache | str | Path | bool | None = None,
    price_table: PriceTable | dict[str, Any] | None = None,
    window: int | None = None,
    **kwargs: Any,
) -> Pruner:
    """Build an LLM pruner.

    Args:
        name: ``graded``, ``select``, ``budget_select`` or ``anchors``.
        llm: An :class:`~admit.backends.llms.LLM` or a spec (``openai:MODEL@URL``, ``llama:PATH``, ``fake``).
        llm_base_url: OpenAI-compatible endpoint, when ``llm`` is not given.
        llm_model: Model name, when ``llm`` is not given.
        llm_api_key_env: NAME of the environment variable holding the API key (default ``ADMIT_LLM_API_KEY``).
        llm_timeout: Per-call timeout in seconds.
        reranker: For ``anchors``: the reranker that scores anchors with the chunks (spec or instance).
        cache: A :class:`PruneCache`, a path for an on-disk cache, ``True`` for an in-memory one.
        price_table: A :class:`PriceTable` or ``{model: {"prompt": x, "completion": y}}``.
        window: ``max_prompt_tokens`` per call (longer lists are split into windows).
        **kwargs: Options of the strategy (``tokenizer``, ``concurrency``, ``second_pass``, ``m``, ``n``, ...).
    """
    if name not in LLM_STRATEGIES:
        raise ConfigError(f"Unknown LLM pruning strategy {name!r}; known: {', '.join(LLM_STRATEGIES)}.")
    dropped = sorted(set(kwargs) & _FOREIGN)
    if dropped:
        logger.debug("%s: ignoring options for other strategies: %s", name, dropped)
    opts = {k: v for k, v in kwargs.items() if k not in _FOREIGN}
    model = build_llm(
        llm,
        llm_base_url=llm_base_url,
        llm_model=llm_model,
        llm_api_key_env=llm_api_key_env,
        llm_timeout=llm_timeout,
        strategy=name,
    )
    if cache is True:
        cache = PruneCache()
    elif isinstance(cache, str | Path):
        cache = PruneCache(path=cache)
    elif cache is False:
        cache = None
    prices = price_table if isinstance(price_table, PriceTable) or price_table is None else PriceTable(price_table)
    if name == "anchors":
        from admit.prune.anchors import AnchorsPruner

        opts.pop("tokenizer", None)
        try:
            return AnchorsPruner(model, reranker=reranker, cache=cache, price_table=prices, **opts)
        except TypeError as exc:
            raise ConfigError(f"anchors: {exc}") from exc
    if window is not None:
        opts["max_prompt_tokens"] = int(window)
    if name == "graded":
        from admit.prune.graded import GradedPruner as cls
    elif name == "select":
        from admit.prune.select import SelectPruner as cls  # type: ignore[assignment]
    else:
        from admit.prune.budget_select import BudgetSelectPruner as cls  # type: ignore[assignment]
    try:
        return cls(model, cache=cache, price_table=prices, **opts)
    except TypeError as exc:
        raise ConfigError(f"{name}: {exc}") from exc
