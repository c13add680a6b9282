"""What an ingest run is told (:class:`IngestOptions`), plans (:class:`SourceJob`) and reports
(:class:`IngestReport`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from admit.errors import ConfigError
from admit.kb.chunking import DEFAULT_MAX_TOKENS
from admit.kb.registry import Registry, SourceSettings

__all__ = ["DEFAULT_MAX_FILE_BYTES", "IngestOptions", "IngestReport", "SourceJob", "SourceWriter"]

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest file an ingest run reads (64 MiB): a larger one is an error of its own, the rest is ingested."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestOptions:
    """How to ingest: the access defaults, the registry, the chunker and embedder settings, the file cap.

    One value from the command line (``admit ingest``) through :meth:`KnowledgeBase.ingest`,
    :func:`~admit.kb.ingest.ingest_paths` and the Ray engine's workers (:mod:`admit.kb.ray_ingest`).

    Example:
        >>> IngestOptions(tenant="acme", groups=("support",)).max_tokens
        512
    """

    tenant: str | None = None
    """Default tenant (the registry's entries override it)."""
    groups: tuple[str, ...] | None = None
    """Default groups (``None``: the registry's, else the whole tenant)."""
    authority: float | None = None
    """Default authority 0..1."""
    label: str | None = None
    """Default access label."""
    registry: Registry | str | Path | None = None
    """A :class:`~admit.kb.registry.Registry` or a ``sources.toml`` path."""
    tokenizer: str = "cl100k_base"
    """The tokenizer ``max_tokens`` counts in."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """The most tokens a chunk may have."""
    batch_size: int = 64
    """Texts embedded per call, gathered across files."""
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    """The largest file read; a larger one is reported as an error and skipped."""
    exclude: tuple[str, ...] = ()
    """Globs of files to leave out, matched against the path relative to the ingested folder (or a folder above
    it: ``releases`` leaves out ``releases/1.0.html``); reported as ``excluded`` in :attr:`IngestReport.left_out`."""

    def __post_init__(self) -> None:
        """Check the values (a caller's mistake is a :class:`~admit.errors.ConfigError` naming the field)."""
        if self.authority is not None and not 0.0 <= self.authority <= 1.0:
            raise ConfigError(f"authority must be between 0 and 1, got {self.authority}.")
        if self.max_tokens < 1:
            raise ConfigError(f"`max_tokens` must be at least 1, got {self.max_tokens}.")
        if self.batch_size < 1:
            raise ConfigError(f"`batch_size` must be at least 1, got {self.batch_size}.")
        if self.max_file_bytes < 1:
            raise ConfigError(f"`max_file_bytes` must be at least 1, got {self.max_file_bytes}.")
        if self.groups is not None:
            object.__setattr__(self, "groups", tuple(g for g in self.groups if g))
        if isinstance(self.exclude, str):
            object.__setattr__(self, "exclude", (self.exclude,))
        object.__setattr__(self, "exclude", tuple(g.strip().strip("/") for g in self.exclude if g.strip().strip("/")))

    @classmethod
    def of(cls, base: IngestOptions | None = None, **fields: Any) -> IngestOptions:
        """``base`` (default: the defaults) with ``fields`` set; a misspelled field is refused by name.

        Raises:
            ConfigError: A field :class:`IngestOptions` does not have (the closest one is suggested).
        """
        import dataclasses
        import difflib

        known = [f.name for f in dataclasses.fields(cls)]
        for name in fields:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"Unknown ingest option {name!r}{hint} Known: {', '.join(known)}.")
        return dataclasses.replace(base or cls(), **fields)

    def overrides(self) -> dict[str, Any]:
        """The access defaults the registry's settings are merged over."""
        out: dict[str, Any] = {"tenant": self.tenant, "authority": self.authority, "label": self.label}
        if self.groups is not None:
            out["groups"] = self.groups
        return out

    def as_json(self) -> dict[str, Any]:
        """What a worker process needs to write a planned source (no registry: the plan holds its settings)."""
        return {"tokenizer": self.tokenizer, "max_tokens": self.max_tokens, "batch_size": self.batch_size}


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestReport:
    """What one ingest run did. The counts add up: every file of a supported format ends as one source
    added, updated or unchanged, or one error (``files == sources_added + sources_updated + sources_unchanged +
    len(errors)``); ``chunks_added + chunks_changed + chunks_unchanged`` is the number of chunks those files have
    stored now; ``chunks_written`` those of the added and updated sources.

    A page that gives no chunk stores nothing: it is counted unchanged (as on every later run) and named in
    :attr:`no_chunk`; one whose chunks were all stored before and now gives none is updated (its chunks removed).
    A page whose every chunk is stored as another page's copy stores no source of its own either: it is counted
    unchanged and named in :attr:`copies_only` (the kept copies' ``also_at`` name it).
    """

    files: int = 0
    """Files of a supported format the run took up (read, or failed with an error of their own)."""
    sources_added: int = 0
    sources_updated: int = 0
    sources_unchanged: int = 0
    sources_removed: int = 0
    chunks_added: int = 0
    """Chunks with a new id."""
    chunks_changed: int = 0
    """Chunks whose id stayed but whose text changed."""
    chunks_unchanged: int = 0
    """Chunks kept as they were: all of an unchanged source's, and the unchanged ones of an updated source."""
    chunks_removed: int = 0
    """Chunks deleted (gone from an updated source, or of a removed source)."""
    chunks_embedded: int = 0
    """Chunks the embedder had to encode."""
    chunks_written: int = 0
    """Chunks this run stored: every chunk of an added or updated source (unchanged ones keep their embedding).

    ``chunks_added + chunks_changed + chunks_unchanged`` is the number of chunks the files read now have."""
    chunks_copies: int = 0
    """Chunks not stored because a copy of them is (another page's, or the same page's): the kept copy's
    ``also_at`` metadata names them (:mod:`admit.kb.copies`)."""
    skipped: tuple[str, ...] = ()
    """Files skipped (unsupported format)."""
    left_out: tuple[tuple[str, str], ...] = ()
    """``(path, kind)`` of files left out as not documentation: a built site's source copies, highlighted
    source, assets, search and index pages, and the ``--exclude`` matches (kinds:
    :data:`admit.kb.docsite.SKIP_KINDS`). Counted per kind in :attr:`left_out_counts`."""
    refused_links: tuple[str, ...] = ()
    """Files not read because of a link: symbolic links under an ingested folder whose target lies outside it
    or does not exist, files swapped for a link after the walk, and files with more than one hard link (see
    :mod:`admit.kb.files`); and paths that are no regular file (a FIFO, a socket, a device; a directory where a
    stored document was). Each one's cause is in :attr:`refusals`."""
    refusals: tuple[tuple[str, str], ...] = ()
    """``(path, cause)`` of each refused link or non-regular file, in the order of :attr:`refused_links`."""
    errors: tuple[tuple[str, str], ...] = ()
    """``(path, message)`` of files that could not be read."""
    no_chunk: tuple[str, ...] = ()
    """Files read without error that gave no chunk (no text found in them): nothing of them is stored."""
    copies_only: tuple[str, ...] = ()
    """Files new to the store whose every chunk is a copy of another page's (a man page that only repeats shared
    sections): their text is stored once with the other page, whose ``also_at`` names this one."""
    guarded: tuple[str, ...] = ()
    """Pages whose main content the parser's extraction guard found far below the page's visible text, so the
    page's whole text was kept instead (the parsed document's ``content_guard`` reason, or an ``extract_guard``
    mark); the reason is logged."""
    mostly_empty: tuple[tuple[str, int, int], ...] = ()
    """``(folder, pages that gave no chunk, pages)`` of each ingested folder where most pages gave no chunk: a
    site whose text the parser did not find (``admit ingest`` exits non-zero on it)."""
    kept_last_good: tuple[str, ...] = ()
    """Files that failed or were refused this run (an error, a refused link, over the size cap) whose earlier,
    good version stays in the store as it was: a version is replaced only by one that parsed."""
    seconds: float = 0.0
    """Wall time."""

    @property
    def files_seen(self) -> int:
        """Every file the walk met: taken up (:attr:`files`), skipped for its format, left out as not
        documentation, or refused for a link."""
        return self.files + len(self.skipped) + len(self.left_out) + len(self.refused_links)

    @property
    def left_out_counts(self) -> dict[str, int]:
        """Files left out per kind (``{"sphinx_sources": 37, "search_index_pages": 2}``)."""
        from admit.kb.docsite import count_kinds

        return count_kinds(self.left_out)

    def left_out_lines(self) -> list[str]:
        """One report line per kind left out: ``skipped 37 Sphinx source copies (_sources/)``."""
        from admit.kb.docsite import skip_line

        return [skip_line(k, n) for k, n in self.left_out_counts.items()]

    def skipped_line(self) -> str:
        """The report line for files of unsupported formats, naming their commonest suffixes:
        ``skipped 137 file(s) of unsupported formats (119 .c, 12 .pdf, 6 with no suffix)``; empty for none."""
        if not self.skipped:
            return ""
        from collections import Counter

        from admit.kb.files import document_name

        kinds = Counter(
            (name.rsplit(".", 1)[1].lower() if "." in name.lstrip(".") else "")
            for name in (document_name(p.replace("\\", "/").rsplit("/", 1)[-1]) for p in self.skipped)
        )
        named = [f"{n} .{k}" if k else f"{n} with no suffix" for k, n in kinds.most_common(4)]
        if len(kinds) > 4:
            named.append(f"{sum(n for _, n in kinds.most_common()[4:])} other")
        return f"skipped {len(self.skipped)} file(s) of unsupported formats ({', '.join(named)})"

    @property
    def chunks_per_second(self) -> float:
        """Written chunks per second."""
        return self.chunks_written / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["skipped"] = list(self.skipped)
        d["left_out"] = [{"path": p, "kind": k} for p, k in self.left_out]
        d["left_out_counts"] = self.left_out_counts
        d["left_out_lines"] = self.left_out_lines()
        d["refused_links"] = list(self.refused_links)
        d["refusals"] = [{"path": p, "cause": c} for p, c in self.refusals]
        d["errors"] = [{"path": p, "error": e} for p, e in self.errors]
        d["no_chunk"] = list(self.no_chunk)
        d["copies_only"] = list(self.copies_only)
        d["guarded"] = list(self.guarded)
        d["mostly_empty"] = [{"folder": f, "no_chunk": e, "pages": n} for f, e, n in self.mostly_empty]
        d["seconds"] = round(self.seconds, 3)
        d["chunks_per_second"] = round(self.chunks_per_second, 1)
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceJob:
    """One source an ingest run must (re)write: planned by :func:`ingest_paths`, written by :func:`write_source`
    here or by a :data:`SourceWriter` elsewhere (the Ray engine, :mod:`admit.kb.ray_ingest`)."""

    path: str
    """The file (absolute)."""
    fmt: str
    """Its parser (a :data:`FORMATS` value)."""
    settings: SourceSettings
    """What the registry and the command line say about it."""
    content_hash: str
    """Hash of the content planned on (a file changed since is refused, not half-written)."""
    ingest_key: str
    """Digest of content, settings, chunker and embedder."""
    new: bool
    """Whether the store had no version of the source."""
    drop: tuple[str, ...] = ()
    """Section paths of the chunks not stored, being copies of other chunks (:mod:`admit.kb.copies`)."""
    also_at: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Section path of a kept chunk -> the ids of its copies that are not stored (its ``also_at`` metadata)."""
    also_under: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Section path of a kept short chunk -> the section titles its copies were under (added to its title; its
    ``also_under`` metadata)."""


SourceWriter = Callable[[Sequence[SourceJob]], Iterable[tuple[SourceJob, "Mapping[str, int] | str"]]]
"""Writes planned sources; yields each job with its chunk counts (``chunks_added`` ..., ``chunks_written``) or an
error message. Each source is written whole (one ``replace_source``), so a run cut short leaves every source old
or new and re-running does the rest."""
