"""The embedder catalogue: every embedder by name, the built-ins and third-party ones through one door.

Built-in embedders are listed in :data:`BUILTIN_EMBEDDERS` as ``module:ATTRIBUTE`` references to their
:class:`~admit.backends.embedders.spec.EmbedderSpec`; a third-party package adds one with an entry point in the
``admit.embedders`` group (``my_embedder = "my_package.embed:SPEC"``). :data:`EMBEDDERS` finds them: listing the
names imports nothing, a lookup imports the embedder's module once.
"""

from __future__ import annotations

from admit._plugins import SpecCatalogue
from admit.backends.embedders.spec import EmbedderSpec

__all__ = ["BUILTIN_EMBEDDERS", "DEFAULT_EMBEDDER", "EMBEDDERS", "split_embedder_name"]

BUILTIN_EMBEDDERS: dict[str, str] = {
    "minilm": "admit.backends.embedders.minilm:SPEC",
    "e5": "admit.backends.embedders.e5:SPEC",
    "minilm-torch": "admit.backends.embedders.minilm_torch:SPEC",
    "fake": "admit.backends.embedders.fake:SPEC",
}
"""The shipped embedders, in the order help texts list them."""

DEFAULT_EMBEDDER = "minilm"
"""The embedder when none is named."""

EMBEDDERS: SpecCatalogue[EmbedderSpec] = SpecCatalogue(
    "embedder",
    "admit.embedders",
    BUILTIN_EMBEDDERS,
    EmbedderSpec,
    aliases={
        "default": "minilm",
        "all-minilm-l6-v2": "minilm",
        "sentence-transformers/all-minilm-l6-v2": "minilm",
        "minilm:torch": "minilm-torch",
        "multilingual-e5-small": "e5",
    },
)
"""The embedders (entry-point group ``admit.embedders``); names compare in lower case."""


def split_embedder_name(text: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME:OPTION`` as ``(name, option)`` in lower case (``minilm:torch``, an alias, stays whole)."""
    low = text.strip().lower()
    if low in EMBEDDERS.aliases:
        return low, None
    name, sep, option = low.partition(":")
    return name, option if sep else None
