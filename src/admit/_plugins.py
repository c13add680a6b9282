"""Plug-in catalogues: names to ``module:attribute`` references, the built-ins and an entry-point group's alike.

One mechanism for every kind of plug-in (strategies, stores, rerankers, embedders, LLMs): the built-ins are listed
as references and loaded through the same door as the entry points of third-party packages (the way ``llm`` loads
its own plug-ins). Listing the names imports nothing; :meth:`Catalogue.load` imports one reference, once. A
plug-in cannot take a built-in's name (a warning says so and the built-in stays). :class:`SpecCatalogue` adds what
every catalogue of specs shares: each reference names a spec (or a function making one) of one type, a broken
plug-in is left out with a warning, and an unknown name is one :class:`~admit.errors.ConfigError` listing the
known ones.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from admit.errors import ConfigError, InvalidType, InvalidValue

__all__ = ["Catalogue", "SpecCatalogue", "defining_module", "import_ref"]

S = TypeVar("S")

logger = logging.getLogger(__name__)


def import_ref(ref: str) -> object:
    """The object a ``module:attribute.path`` reference names (the module alone without ``:``)."""
    module, _, attr = ref.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


_NOT_A_SOURCE = ("__main__", "builtins")


def defining_module(kind: str, name: str, fn: Callable[..., object], *, not_sources: tuple[str, ...] = ()) -> str:
    """The module that defines ``fn`` (a plug-in's own module, whose source the evaluation cache key reads).

    Raises:
        ConfigError: ``fn`` is defined where its source says nothing about the plug-in (``__main__``, a builtin,
            one of ``not_sources``): the spec must name its source modules.
    """
    module = getattr(fn, "__module__", None)
    bad = (*_NOT_A_SOURCE, *not_sources)
    if not isinstance(module, str) or module in bad or importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"{kind} {name!r}: give source_modules (the modules whose code decides its results); its builder "
            f"is defined in {module!r}, which does not tell admit eval when its code changed."
        )
    return module


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


class SpecCatalogue(Generic[S]):
    """A catalogue whose entries are specs of one type (``StrategySpec``, ``RerankerSpec`` ...), each named as it
    is listed.

    A reference may name the spec or a function returning it. A built-in that is not in this build (a missing
    optional dependency) is left out quietly, a plug-in that fails to load with a warning; a built-in that is
    broken otherwise raises (a bug of admit's, not of the install).

    Args:
        what: The kind for messages (``pruning strategy``, ``reranker``).
        group: The entry-point group (``admit.rerankers``).
        builtins: The shipped specs, ``name -> "module:ATTRIBUTE"``, in the order help texts list them.
        spec_type: The type every entry must be.
        reserved: Names no plug-in may take besides the built-ins' and the aliases.
        aliases: Other spellings of a name (``minilm`` for ``dense``): looked up as the name, never listed.
    """

    def __init__(
        self,
        what: str,
        group: str,
        builtins: Mapping[str, str],
        spec_type: type[S],
        *,
        reserved: frozenset[str] = frozenset(),
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.what, self.spec_type, self.aliases = what, spec_type, dict(aliases or {})
        self.plugins = Catalogue(what, group, builtins, reserved=reserved | frozenset(self.aliases))
        self._lock = threading.Lock()
        self._specs: dict[str, S | None] = {}

    def names(self) -> tuple[str, ...]:
        """Every name: the built-ins first, then the plug-ins (imports nothing)."""
        return self.plugins.names()

    def find(self, name: str) -> S | None:
        """The spec of ``name`` (or of the name it is an alias of), or ``None`` when none has that name (or it
        failed to load)."""
        name = self.aliases.get(name, name)
        if name not in self.plugins.refs():
            return None
        with self._lock:
            if name in self._specs:
                return self._specs[name]
        spec = self._load(name)
        with self._lock:
            self._specs[name] = spec
        return spec

    def get(self, name: str) -> S:
        """The spec of ``name``.

        Raises:
            ConfigError: None has that name, or it failed to load (the message lists the known ones).
        """
        spec = self.find(name)
        if spec is None:
            known = ", ".join(self.names())
            if self.aliases.get(name, name) in self.plugins.refs():
                what = self.what[:1].upper() + self.what[1:]
                raise ConfigError(f"{what} {name!r} is not available here (it failed to load); known: {known}.")
            raise ConfigError(f"Unknown {self.what} {name!r}; known: {known}.")
        return spec

    def help(self) -> str:
        """Every name with its spec's ``summary``, for a help text (imports the modules)."""
        lines = ((getattr(s, "name", ""), getattr(s, "summary", "")) for s in self.specs())
        return "; ".join(f"{name} ({summary})" if summary else name for name, summary in lines)

    def specs(self) -> tuple[S, ...]:
        """The specs of every name that loads, in :meth:`names` order."""
        return tuple(s for n in self.names() if (s := self.find(n)) is not None)

    def reset(self) -> None:
        """Forget what was read and loaded (the entry points are read again next time)."""
        self.plugins.reset()
        with self._lock:
            self._specs = {}

    def _load(self, name: str) -> S | None:
        builtin = self.plugins.is_builtin(name)
        try:
            obj = self.plugins.load(name)
            made = obj() if callable(obj) and not isinstance(obj, self.spec_type) else obj
            if not isinstance(made, self.spec_type):
                raise InvalidType(f"expected a {self.spec_type.__name__}, got {type(made).__name__}")
            if getattr(made, "name", None) != name:
                raise InvalidValue(f"the spec is named {getattr(made, 'name', None)!r}")
            return made
        except ModuleNotFoundError as exc:
            if builtin:
                logger.info("%s %r is not available in this build: %s", self.what, name, exc)
            else:
                logger.warning("%s plug-in %r failed to load: %s", self.what, name, exc)
            return None
        except Exception as exc:
            if builtin:
                raise
            logger.warning("%s plug-in %r failed to load: %s: %s", self.what, name, type(exc).__name__, exc)
            return None
