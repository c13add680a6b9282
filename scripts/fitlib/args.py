"""Typed fit arguments: each model's ``FitArgs`` dataclass is its command line.

A field is a flag (``per_file`` -> ``--per-file``) with the field's default; its ``help``, ``choices`` and
``required`` come from :func:`arg`. Booleans are ``store_true`` switches, ``list[int] | None`` fields repeatable
flags. The scripts parse with :meth:`FitArgs.parse` and hand the typed value to the library.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Sequence
from typing import Any, Self

__all__ = ["FitArgs", "arg"]


def arg(default: Any = dataclasses.MISSING, help: str | None = None, **extra: Any) -> Any:
    """A field of a :class:`FitArgs` with its flag's help (``choices=``, ``required=True`` pass through)."""
    meta = {"help": help, **extra}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FitArgs:
    """Base of the per-model argument types."""

    @classmethod
    def parser(cls, description: str | None = None, *, raw: bool = False) -> argparse.ArgumentParser:
        """The command line of the fields, in field order."""
        fmt = argparse.RawDescriptionHelpFormatter if raw else argparse.HelpFormatter
        ap = argparse.ArgumentParser(description=description, formatter_class=fmt)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            flag = "--" + f.name.replace("_", "-")
            kw: dict[str, Any] = {k: v for k, v in f.metadata.items() if v is not None}
            tp = hints[f.name]
            if f.default is not dataclasses.MISSING:
                kw["default"] = f.default
            if tp is bool:
                ap.add_argument(flag, action="store_true", **kw)
            elif _is_int_list(tp):
                ap.add_argument(flag, type=int, action="append", **kw)
            else:
                ap.add_argument(flag, type=tp, **kw)
        return ap

    @classmethod
    def parse(cls, argv: Sequence[str] | None = None, description: str | None = None, *, raw: bool = False) -> Self:
        """Parse a command line into the typed arguments."""
        ns = cls.parser(description, raw=raw).parse_args(argv)
        return cls(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(cls)})

    def as_dict(self) -> dict[str, Any]:
        """The arguments by name, in flag order (what a fit log records)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _is_int_list(tp: Any) -> bool:
    """Whether a field's type is ``list[int] | None``."""
    if isinstance(tp, types.UnionType):
        return any(_is_int_list(t) for t in typing.get_args(tp) if t is not type(None))
    return typing.get_origin(tp) is list and typing.get_args(tp) == (int,)
