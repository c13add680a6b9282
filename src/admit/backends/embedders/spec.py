"""What an embedder declares about itself: :class:`EmbedderSpec`, one per name, beside the embedder.

:mod:`admit.backends.embedders.catalogue` collects the specs (the built-ins and third-party ones alike).

Example:
    >>> from admit.backends.embedders.fake import FakeEmbedder
    >>> spec = EmbedderSpec(name="tiny", build=lambda: FakeEmbedder(dim=8), summary="eight hashed dimensions")
    >>> spec.make().dim
    8
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from admit.backends._spec import BackendSpec
from admit.errors import ConfigError

if TYPE_CHECKING:
    from admit.backends.embedders.base import Embedder
    from admit.backends.embedders.defaults import EncoderConfig

__all__ = ["EmbedderSpec"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedderSpec(BackendSpec):
    """One embedder's facts, declared beside it (its module's ``SPEC``).

    Its ``build`` makes the embedder: ``build()``, or ``build(option)`` for ``NAME:OPTION`` when
    :attr:`takes_option`; with ``config=`` (an :class:`~admit.backends.embedders.defaults.EncoderConfig`) as well
    when :attr:`takes_config`.
    """

    kind: ClassVar[str] = "embedder"

    takes_option: bool = False
    """Whether ``NAME:OPTION`` is accepted (``fake:128``: the dimension); the option reaches ``build`` as text."""
    takes_config: bool = False
    """Whether ``build`` takes ``config=``, the :class:`~admit.backends.embedders.defaults.EncoderConfig` (folder,
    threads, encoder) of the embedder it makes (MiniLM); another embedder is made without it."""
    missing: Callable[[], str | None] | None = None
    """What this install lacks to run it (``None`` from the function: nothing), checked before it is built."""

    def make(self, option: str | None = None, config: EncoderConfig | None = None) -> Embedder:
        """The embedder (``option``: the part after ``NAME:``; ``config``: its configuration, where it takes one).

        Raises:
            ConfigError: An option it does not take, or a dependency this install lacks.
        """
        if option is not None and not self.takes_option:
            raise ConfigError(f"embedder {self.name!r} takes no option, got {self.name}:{option}.")
        why = self.missing() if self.missing is not None else None
        if why:
            raise ConfigError(f"embedder {self.name!r} is not available here: {why}.")
        args = (option,) if self.takes_option else ()
        kwargs = {"config": config} if self.takes_config and config is not None else {}
        made: Embedder = self.build(*args, **kwargs)
        return made
