"""The embedder catalogue: every embedder by name, the built-ins and third-party ones through one door.

Built-in embedders are listed in :data:`BUILTIN_EMBEDDERS` as ``module:ATTRIBUTE`` references to their
:class:`~admit.backends.embedders.spec.EmbedderSpec`; a third-party package adds one with an entry point in the
``admit.embedders`` group (``my_embedder = "my_package.embed:SPEC"``). Listing the names imports nothing; a
lookup imports the embedder's module once.
"""

from __future__ import annotations

from admit._plugins import SpecCatalogue
from admit.backends.embedders.spec import EmbedderSpec

__all__ = [
    "BUILTIN_EMBEDDERS",
    "DEFAULT_EMBEDDER",
    "EMBEDDER_ALIASES",
    "ENTRY_POINT_GROUP",
    "embedder_names",
    "find_embedder",
    "get_embedder",
    "reload_embedders",
    "split_embedder_name",
]

ENTRY_POINT_GROUP = "admit.embedders"
"""The entry-point group third-party embedders register in."""

BUILTIN_EMBEDDERS: dict[str, str] = {
    "minilm": "admit.backends.embedders.minilm:SPEC",
    "e5": "admit.backends.embedders.e5:SPEC",
    "minilm-torch": "admit.backends.embedders.minilm_torch:SPEC",
    "fake": "admit.backends.embedders.fake:SPEC",
}
"""The shipped embedders, in the order help texts list them."""

EMBEDDER_ALIASES: dict[str, str] = {
    "default": "minilm",
    "all-minilm-l6-v2": "minilm",
    "sentence-transformers/all-minilm-l6-v2": "minilm",
    "minilm:torch": "minilm-torch",
    "multilingual-e5-small": "e5",
}
"""Other spellings of an embedder name (compared in lower case)."""

DEFAULT_EMBEDDER = "minilm"
"""The embedder when none is named."""

_CATALOGUE: SpecCatalogue[EmbedderSpec] = SpecCatalogue(
    "embedder", ENTRY_POINT_GROUP, BUILTIN_EMBEDDERS, EmbedderSpec, reserved=frozenset(EMBEDDER_ALIASES)
)


def split_embedder_name(text: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME:OPTION`` as ``(name, option)``, aliases resolved (``minilm:torch`` is ``minilm-torch``)."""
    low = text.strip().lower()
    if low in EMBEDDER_ALIASES:
        return EMBEDDER_ALIASES[low], None
    name, sep, option = low.partition(":")
    return EMBEDDER_ALIASES.get(name, name), option if sep else None


def embedder_names() -> tuple[str, ...]:
    """Every embedder name: the built-ins first, then the plug-ins (imports nothing; aliases not included)."""
    return _CATALOGUE.names()


def find_embedder(name: str) -> EmbedderSpec | None:
    """The spec of ``name`` (an alias resolved), or ``None`` when no embedder has that name."""
    return _CATALOGUE.find(split_embedder_name(name)[0])


def get_embedder(name: str) -> EmbedderSpec:
    """The spec of ``name`` (an alias resolved).

    Raises:
        ConfigError: No embedder has that name (the message lists the known ones).
    """
    return _CATALOGUE.get(split_embedder_name(name)[0])


def reload_embedders() -> None:
    """Forget what was loaded; the next lookup reads the entry points again."""
    _CATALOGUE.reset()
