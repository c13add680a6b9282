"""What the LLM strategies (``graded``, ``select``, ``budget_select``, ``anchors``) share in their specs: the
grader model from :class:`~admit.prune.spec.PrunerResources`, the cache and price table, the parameters every
windowed LLM pruner reads, and the evaluation cache identity (LLM model, endpoint, prompt version).

Each strategy module declares its own ``SPEC`` with :func:`llm_spec`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from admit.backends.llms import LLM, PriceTable, default_llm_spec, openai_spec, resolve_llm
from admit.errors import ConfigError
from admit.prune.base import Pruner
from admit.prune.cache import PruneCache
from admit.prune.checks import Check, boolean, int_at_least, one_of, optional
from admit.prune.spec import PrunerResources, StrategySpec, _defining_module

__all__ = ["LLM_PARAMS", "build_llm", "llm_spec", "llm_spec_parts"]

LLM_PARAMS: Mapping[str, Check] = {
    "max_prompt_tokens": int_at_least(256),
    "window_anchors": int_at_least(0),
    "max_chunk_tokens": int_at_least(1),
    "max_tokens": optional(int_at_least(1)),
    "on_missing": one_of("reask", "on_error"),
    "second_pass": boolean,
}
"""The parameters every windowed LLM pruner (``graded``, ``select``, ``budget_select``) reads."""

_LLM_MODULES = ("admit.prune._llm_common", "admit.prune._parsing", "admit.prune.llm_strategies")


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
    ``openai:`` spec, else the process's default endpoint (:func:`~admit.backends.llms.configure_llm`)."""
    if llm is not None:
        return resolve_llm(llm)
    spec = openai_spec(llm_model, llm_base_url) if llm_model else default_llm_spec(base_url=llm_base_url)
    if spec is None:
        raise ConfigError(
            f"strategy {strategy!r} needs an LLM: on the command line --llm-base-url URL --llm-model MODEL; in "
            "Python llm= (an LLM or a spec like openai:MODEL@URL) or llm_model= (and llm_base_url=); or set "
            "ADMIT_LLM_MODEL / ADMIT_LLM_BASE_URL for the command line and the service."
        )
    kwargs: dict[str, Any] = {}
    if llm_api_key_env:
        kwargs["api_key_env"] = llm_api_key_env
    if llm_timeout is not None:
        kwargs["timeout"] = float(llm_timeout)
    return resolve_llm(spec, **kwargs)


def llm_spec_parts(name: str, res: PrunerResources) -> tuple[LLM, PruneCache | None, PriceTable | None]:
    """The grader model, the cache and the price table of an LLM strategy, from the resources."""
    model = build_llm(
        res.llm,
        llm_base_url=res.llm_base_url,
        llm_model=res.llm_model,
        llm_api_key_env=res.llm_api_key_env,
        llm_timeout=res.llm_timeout,
        strategy=name,
    )
    cache: PruneCache | None
    if res.cache is True:
        cache = PruneCache()
    elif isinstance(res.cache, str | Path):
        cache = PruneCache(path=res.cache)
    elif isinstance(res.cache, PruneCache):
        cache = res.cache
    else:
        cache = None
    p = res.price_table
    prices = p if isinstance(p, PriceTable) or p is None else PriceTable(dict(p))
    return model, cache, prices


def _identity(res: PrunerResources) -> tuple[str, ...]:
    from admit.prune._llm_common import PROMPT_VERSION

    llm = res.llm if isinstance(res.llm, str) else getattr(res.llm, "name", "")
    return (str(llm or ""), str(res.llm_model or ""), str(res.llm_base_url or ""), PROMPT_VERSION)


def llm_spec(
    name: str,
    make: Callable[..., Pruner],
    *,
    params: Mapping[str, Check],
    windowed: bool = True,
    extra: Callable[[PrunerResources], Mapping[str, Any]] | None = None,
    default_grid: Mapping[str, Sequence[Any]],
    color: str,
    summary: str,
) -> StrategySpec:
    """The spec of an LLM strategy whose pruner is ``make(llm, cache=, price_table=, **options)``.

    ``windowed`` pruners take ``max_prompt_tokens`` from :attr:`PrunerResources.window`; ``extra`` adds
    constructor arguments taken from the resources (``anchors``: the reranker).
    """

    def build(res: PrunerResources) -> Pruner:
        model, cache, prices = llm_spec_parts(name, res)
        opts = {**(extra(res) if extra is not None else {}), **res.options_for(name)}
        if windowed and res.window is not None:
            opts["max_prompt_tokens"] = int(res.window)
        try:
            return make(model, cache=cache, price_table=prices, **opts)
        except TypeError as exc:
            raise ConfigError(f"{name}: {exc}") from exc

    return StrategySpec(
        name=name,
        build=build,
        params=params,
        shows_text_to_llm=True,
        source_modules=(_defining_module(name, make), *_LLM_MODULES),  # the pruner's own module, not a guess
        identity=_identity,
        default_grid=default_grid,
        color=color,
        summary=summary,
    )
