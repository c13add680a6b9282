"""The source registry (``sources.toml``): ``[defaults]`` and ``[[sources]]`` entries matched by path glob or
source id that set tenant, groups, label, authority, document, version, language, updated.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from admit.errors import ConfigError, unknown_name

__all__ = ["Registry", "SourceSettings", "load_registry", "settings_for"]

_REGISTRY_KEYS = {"match", "id", "tenant", "groups", "authority", "label", "document", "version", "language", "updated"}


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSettings:
    """What the registry (and the command line) say about one source."""

    source_id: str
    tenant: str
    groups: tuple[str, ...] = ()
    label: str = ""
    authority: float | None = None
    document: str = ""
    version: str | None = None
    language: str | None = None
    updated: datetime | None = None

    def key(self) -> str:
        """A stable digest of the settings (a change re-ingests the source)."""
        d = {
            "source_id": self.source_id,
            "tenant": self.tenant,
            "groups": list(self.groups),
            "label": self.label,
            "authority": self.authority,
            "document": self.document,
            "version": self.version,
            "language": self.language,
            "updated": self.updated.isoformat() if self.updated else None,
        }
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True, kw_only=True)
class Registry:
    """A parsed ``sources.toml``: defaults and entries matched by path glob or source id."""

    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Settings for every source."""
    entries: tuple[Mapping[str, Any], ...] = ()
    """``[[sources]]`` entries, applied in file order (later wins)."""
    source: str = ""
    """Where it was loaded from."""

    def matching(self, rel_path: str, source_id: str) -> list[Mapping[str, Any]]:
        """The entries that apply to a file (glob on the relative path, or the exact source id)."""
        out = []
        for e in self.entries:
            pat = e.get("match")
            if (pat and (fnmatch.fnmatchcase(rel_path, pat) or fnmatch.fnmatchcase(source_id, pat))) or (
                not pat and e.get("id") == source_id
            ):
                out.append(e)
        return out


def _check_registry_table(t: Any, where: str) -> dict[str, Any]:
    if not isinstance(t, Mapping):
        raise ConfigError(f"{where}: must be a table, got {type(t).__name__} {t!r}.")
    unknown = sorted(set(t) - _REGISTRY_KEYS)
    if unknown:  # the first one, named with the closest known key (the one message of every surface)
        raise ConfigError(f"{where}: {unknown_name('key', str(unknown[0]), _REGISTRY_KEYS)}.")
    d = dict(t)
    for key in ("match", "id", "tenant", "label", "document", "language"):
        if key in d and (not isinstance(d[key], str) or not d[key].strip()):
            raise ConfigError(f"{where}: `{key}` must be a non-empty string, got {d[key]!r}.")
    if "authority" in d:
        a = d["authority"]
        if isinstance(a, bool) or not isinstance(a, int | float) or not 0.0 <= float(a) <= 1.0:
            raise ConfigError(f"{where}: authority must be a number between 0 and 1, got {a!r}.")
        d["authority"] = float(a)
    if "groups" in d:
        g = d["groups"]
        if isinstance(g, str):
            g = [x for x in g.split(",") if x.strip()]
        if not isinstance(g, list) or not all(isinstance(x, str) for x in g):
            raise ConfigError(f"{where}: groups must be a list of strings, got {d['groups']!r}.")
        d["groups"] = tuple(x.strip() for x in g)
    if "updated" in d:
        u = d["updated"]
        if isinstance(u, str):
            try:
                u = datetime.fromisoformat(u)
            except ValueError as exc:
                raise ConfigError(f"{where}: updated must be an ISO date, got {u!r}.") from exc
        elif isinstance(u, date) and not isinstance(u, datetime):  # TOML dates without time
            u = datetime(u.year, u.month, u.day)
        elif not isinstance(u, datetime):  # a TOML time of day (12:00:00), a number, ...
            raise ConfigError(f"{where}: updated must be a date or date-time (2026-01-31), got {u!r}.")
        d["updated"] = u if u.tzinfo else u.replace(tzinfo=UTC)
    if "version" in d:
        v = d["version"]
        if isinstance(v, bool) or not isinstance(v, str | int | float) or not str(v).strip():
            raise ConfigError(f"{where}: version must be a string or a number, got {v!r}.")
        d["version"] = str(v)
    return d


def load_registry(path: str | Path | None) -> Registry:
    """Load a ``sources.toml`` registry (``None``: an empty one)."""
    if path is None:
        return Registry()
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"Source registry {str(path)!r} does not exist.")
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Source registry {p} is not valid TOML: {exc}") from exc
    unknown = set(data) - {"defaults", "sources"}
    if unknown:
        raise ConfigError(f"Source registry {p}: unknown table(s) {sorted(unknown)}; use [defaults] and [[sources]].")
    defaults = _check_registry_table(data.get("defaults", {}), f"{p} [defaults]")
    for key in ("match", "id"):
        if key in defaults:
            raise ConfigError(f"{p} [defaults]: `{key}` belongs in a [[sources]] entry, not in [defaults].")
    entries_raw = data.get("sources", [])
    if not isinstance(entries_raw, list):
        raise ConfigError(f"Source registry {p}: `sources` must be an array of tables ([[sources]]).")
    entries = []
    for i, e in enumerate(entries_raw):
        d = _check_registry_table(e, f"{p} [[sources]] #{i + 1}")
        if "match" not in d and "id" not in d:
            raise ConfigError(f"{p} [[sources]] #{i + 1}: give `match` (a path glob) or `id` (a source id).")
        entries.append(d)
    return Registry(defaults=defaults, entries=tuple(entries), source=str(p))


def settings_for(
    registry: Registry, rel: str, default_id: str, overrides: Mapping[str, Any], front: Mapping[str, str]
) -> SourceSettings:
    merged: dict[str, Any] = {**registry.defaults, **{k: v for k, v in overrides.items() if v is not None}}
    for k in ("version", "language", "document"):
        if front.get(k) and k not in merged:
            merged[k] = front[k]
    source_id = default_id
    for e in registry.matching(rel, default_id):
        merged.update({k: v for k, v in e.items() if k != "match"})
    source_id = str(merged.pop("id", source_id))
    tenant = merged.get("tenant")
    if not tenant:
        raise ConfigError(
            f"No tenant for {rel!r}: pass --access tenant:T (tenant= in Python) or set `tenant` in the registry's "
            "[defaults] or a [[sources]] entry."
        )
    return SourceSettings(
        source_id=source_id,
        tenant=str(tenant),
        groups=tuple(merged.get("groups") or ()),
        label=str(merged.get("label") or ""),
        authority=merged.get("authority"),
        document=str(merged.get("document") or source_id),
        version=merged.get("version"),
        language=merged.get("language"),
        updated=merged.get("updated"),
    )
