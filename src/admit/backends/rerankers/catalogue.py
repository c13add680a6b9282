"""The reranker catalogue: every reranker by name, the built-ins and third-party ones through one door.

Built-in rerankers are listed in :data:`BUILTIN_RERANKERS` as ``module:ATTRIBUTE`` references to their
:class:`~admit.backends.rerankers.spec.RerankerSpec`; a third-party package adds one with an entry point in the
``admit.rerankers`` group::

    # pyproject.toml of the plug-in
    [project.entry-points."admit.rerankers"]
    keyword = "my_package.keyword:SPEC"

Listing the names imports nothing; looking a reranker up imports its module once. A plug-in cannot replace a
built-in (a warning says so, and the built-in stays); one that fails to load is left out with a warning.
"""

from __future__ import annotations

from admit._plugins import SpecCatalogue
from admit.backends.rerankers.spec import RerankerSpec

__all__ = [
    "BUILTIN_RERANKERS",
    "DEFAULT_RERANKER",
    "ENTRY_POINT_GROUP",
    "RERANKER_ALIASES",
    "SCORING_RERANKER",
    "find_reranker",
    "get_reranker",
    "reload_rerankers",
    "reranker_help",
    "reranker_names",
    "reranker_specs",
]

ENTRY_POINT_GROUP = "admit.rerankers"
"""The entry-point group third-party rerankers register in."""

BUILTIN_RERANKERS: dict[str, str] = {
    "retriever": "admit.backends.rerankers.lexical:RETRIEVER",
    "bm25": "admit.backends.rerankers.lexical:BM25",
    "dense": "admit.backends.rerankers.dense:DENSE",
    "hybrid": "admit.backends.rerankers.dense:HYBRID",
    "cross": "admit.backends.rerankers.cross:SPEC",
}
"""The shipped rerankers, in the order help texts list them."""

RERANKER_ALIASES: dict[str, str] = {"minilm": "dense"}
"""Other spellings of a reranker name (``minilm`` is ``dense``)."""

DEFAULT_RERANKER = "retriever"
"""The reranker when none is named (the library, the service, the adapters): the candidates' own scores."""

SCORING_RERANKER = "dense"
"""The reranker of the faces whose candidates carry no scores (``admit prune``, ``admit eval``); when it cannot
run here they use its spec's ``fallback``."""

_CATALOGUE: SpecCatalogue[RerankerSpec] = SpecCatalogue(
    "reranker", ENTRY_POINT_GROUP, BUILTIN_RERANKERS, RerankerSpec, reserved=frozenset(RERANKER_ALIASES)
)


def reranker_names() -> tuple[str, ...]:
    """Every reranker name: the built-ins first, then the plug-ins (imports nothing; aliases not included)."""
    return _CATALOGUE.names()


def find_reranker(name: str) -> RerankerSpec | None:
    """The spec of ``name`` (or of the name it is an alias of), or ``None`` when no reranker has that name."""
    return _CATALOGUE.find(RERANKER_ALIASES.get(name, name))


def get_reranker(name: str) -> RerankerSpec:
    """The spec of ``name`` (or of the name it is an alias of).

    Raises:
        ConfigError: No reranker has that name (the message lists the known ones).
    """
    return _CATALOGUE.get(RERANKER_ALIASES.get(name, name))


def reranker_specs() -> tuple[RerankerSpec, ...]:
    """The specs of every reranker that loads, in :func:`reranker_names` order."""
    return _CATALOGUE.specs()


def reranker_help() -> str:
    """Every reranker and its summary, for a ``--reranker`` help text (imports the rerankers' modules)."""
    return "; ".join(f"{s.name} ({s.summary})" if s.summary else s.name for s in reranker_specs())


def reload_rerankers() -> None:
    """Forget what was loaded; the next lookup reads the entry points again (tests, a freshly installed plug-in)."""
    _CATALOGUE.reset()
