"""Plug-in catalogues: names to ``module:attribute`` references, the built-ins and an entry-point group's alike.

One mechanism for every kind of plug-in (strategies, stores): the built-ins are listed as references and loaded
through the same door as the entry points of third-party packages (the way ``llm`` loads its own plug-ins).
Listing the names imports nothing; :meth:`Catalogue.load` imports one reference, once. A plug-in cannot take a
built-in's name (a warning says so and the built-in stays).
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from importlib.metadata import entry_points

__all__ = ["Catalogue", "import_ref"]

logger = logging.getLogger(__name__)


def import_ref(ref: str) -> object:
    """The object a ``module:attribute.path`` reference names (the module alone without ``:``)."""
    module, _, attr = ref.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Catalogue:
    """The plug-ins of one kind: ``builtins`` (name -> reference) and the entry points of ``group``.

    Args:
        kind: What the plug-ins are, for messages (``strategy``, ``store``).
        group: The entry-point group (``admit.strategies``).
        builtins: The shipped plug-ins, in the order :meth:`names` lists them.
        reserved: Names no plug-in may take besides the built-ins' (``none``).
    """

    def __init__(
        self, kind: str, group: str, builtins: Mapping[str, str], *, reserved: frozenset[str] = frozenset()
    ) -> None:
        self.kind, self.group, self.builtins, self.reserved = kind, group, dict(builtins), reserved
        self._lock = threading.Lock()
        self._refs: dict[str, str] | None = None
        self._loaded: dict[str, object] = {}

    def refs(self) -> dict[str, str]:
        """Every name and its reference: the built-ins first, then the plug-ins (read once)."""
        with self._lock:
            if self._refs is None:
                found = dict(self.builtins)
                for ep in entry_points(group=self.group):
                    if ep.name in self.builtins or ep.name in self.reserved:
                        logger.warning("%s plug-in %r (%s) is ignored: the name is taken", self.kind, ep.name, ep.value)
                        continue
                    found.setdefault(ep.name, ep.value)
                self._refs = found
            return self._refs

    def names(self) -> tuple[str, ...]:
        """Every name (imports nothing)."""
        return tuple(self.refs())

    def load(self, name: str) -> object:
        """The object ``name`` refers to, imported once.

        Raises:
            KeyError: No plug-in has that name.
            Exception: What importing it raised (the caller decides whether a broken plug-in is fatal).
        """
        ref = self.refs()[name]
        with self._lock:
            if name in self._loaded:
                return self._loaded[name]
        obj = import_ref(ref)
        with self._lock:
            self._loaded[name] = obj
        return obj

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` is shipped."""
        return name in self.builtins

    def reset(self) -> None:
        """Forget what was read and loaded (the entry points are read again next time)."""
        with self._lock:
            self._refs = None
            self._loaded = {}
