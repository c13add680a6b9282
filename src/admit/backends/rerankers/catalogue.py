"""The reranker catalogue: every reranker by name, the built-ins and third-party ones through one door.

Built-in rerankers are listed in :data:`BUILTIN_RERANKERS` as ``module:ATTRIBUTE`` references to their
:class:`~admit.backends.rerankers.spec.RerankerSpec`; a third-party package adds one with an entry point in the
``admit.rerankers`` group::

    # pyproject.toml of the plug-in
    [project.entry-points."admit.rerankers"]
    keyword = "my_package.keyword:SPEC"

:data:`RERANKERS` finds them: ``RERANKERS.names()`` imports nothing; ``RERANKERS.get(name)`` imports the
reranker's module once (a :class:`~admit.errors.ConfigError` listing the known names when none has it). A plug-in
cannot replace a built-in (a warning says so, and the built-in stays); one that fails to load is left out with a
warning.
"""

from __future__ import annotations

from admit._plugins import SpecCatalogue
from admit.backends.rerankers.spec import RerankerSpec

__all__ = ["BUILTIN_RERANKERS", "DEFAULT_RERANKER", "RERANKERS", "SCORING_RERANKER"]

BUILTIN_RERANKERS: dict[str, str] = {
    "retriever": "admit.backends.rerankers.lexical:RETRIEVER",
    "bm25": "admit.backends.rerankers.lexical:BM25",
    "dense": "admit.backends.rerankers.dense:DENSE",
    "hybrid": "admit.backends.rerankers.dense:HYBRID",
    "cross": "admit.backends.rerankers.cross:SPEC",
}
"""The shipped rerankers, in the order help texts list them."""

DEFAULT_RERANKER = "retriever"
"""The reranker when none is named (the library, the service, the adapters): the candidates' own scores."""

SCORING_RERANKER = "dense"
"""The reranker of the faces whose candidates carry no scores (``admit prune``, ``admit eval``); when it cannot
run here they use its spec's ``fallback``."""

RERANKERS: SpecCatalogue[RerankerSpec] = SpecCatalogue(
    "reranker", "admit.rerankers", BUILTIN_RERANKERS, RerankerSpec, aliases={"minilm": "dense"}
)
"""The rerankers (entry-point group ``admit.rerankers``; ``minilm`` is an alias of ``dense``)."""
