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

DEFAULT_EMBEDDER = "minilm"
"""The embedder when none is named."""

EMBEDDERS: SpecCatalogue[EmbedderSpec] = SpecCatalogue(
    "embedder",
    "admit.embedders",
    {  # the shipped embedders, in the order help texts list them
        "minilm": "admit.backends.embedders.minilm:SPEC",
        "e5": "admit.backends.embedders.e5:SPEC",
        "minilm-torch": "admit.backends.embedders.minilm_torch:SPEC",
        "fake": "admit.backends.embedders.fake:SPEC",
    },
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

BUILTIN_EMBEDDERS: dict[str, str] = EMBEDDERS.plugins.builtins
"""The shipped embedders: name -> ``module:SPEC``."""


def split_embedder_name(text: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME:OPTION`` as ``(name, option)`` in lower case (``minilm:torch``, an alias, stays whole)."""
    low = text.strip().lower()
    if low in EMBEDDERS.aliases:
        return low, None
    name, sep, option = low.partition(":")
    return name, option if sep else None
