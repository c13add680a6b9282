"""``admit ingest``: Markdown, HTML and text into a knowledge base."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from admit._clean import clean_terminal
from admit.cli._common import (
    access_option,
    echo_json,
    engine_option,
    handle_errors,
    json_option,
    open_kb,
    stdout_console,
)

if TYPE_CHECKING:
    from admit.answerability.adaptation import Adaptation
    from admit.kb import KnowledgeBase
    from admit.kb.ingest_types import IngestReport

__all__ = ["ingest_cmd"]


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--kb", "kb_path", required=True, envvar="ADMIT_KB", help="Knowledge base file or store URL.")
@access_option()
@click.option("--tenant", default=None, hidden=True, help="Deprecated: use --access tenant:T.")
@click.option("--groups", default=None, hidden=True, help="Deprecated: use --access tenant:T,group:G.")
@click.option("--authority", type=float, default=None, help="Default authority 0..1.")
@click.option("--label", default=None, help="Default access label shown in evidence envelopes.")
@click.option(
    "--registry",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="sources.toml registry: tenant, groups, authority, version, ... per source.",
)
@click.option("--embedder", default=None, help="minilm (default) or fake[:dim] for tests.")
@click.option("--max-tokens", type=int, default=350, show_default=True, help="Largest chunk, in cl100k tokens.")
@click.option(
    "--max-file-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Largest file read, in MiB (default 64); a larger one is reported as an error and the rest is ingested.",
)
@click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="GLOB",
    help="Leave out files whose path under the folder (or a folder above them) matches GLOB; repeatable. "
    "A built site's source copies, assets, search and index pages are left out without it.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show progress on stderr: a bar on a terminal, else a line every few seconds (default: on; a run "
    "shorter than that writes no line unless --progress is given).",
)
@engine_option(
    "local: this process; ray: parse, chunk, embed and write on Ray Data workers (a server store: "
    'postgresql:// or qdrant://; pip install "admit[ray]").'
)
@click.option("--workers", type=int, default=2, show_default=True, help="Ray workers (--engine ray).")
@click.option(
    "--adapt",
    "adapt",
    is_flag=True,
    help="Then fit the answerability thresholds to this knowledge base (`admit adapt`; minutes for ~1,000 chunks).",
)
@json_option("the ingest report")
@handle_errors
def ingest_cmd(
    paths: tuple[str, ...],
    kb_path: str,
    access: Any,
    tenant: str | None,
    groups: str | None,
    authority: float | None,
    label: str | None,
    registry: str | None,
    embedder: str | None,
    max_tokens: int,
    max_file_mb: float | None,
    exclude: tuple[str, ...],
    progress: bool | None,
    engine: str,
    workers: int,
    adapt: bool,
    as_json: bool,
) -> None:
    """Ingest Markdown, HTML and text files (and folders) into a knowledge base.

    A built documentation site (Sphinx, MkDocs, Docusaurus, Hugo, DocBook, AsciiDoc, Javadoc) is ingested as its
    documentation: each page's main content without navigation, sidebars or permalink signs, titles without the
    site's suffix (its version kept as the source's version); source copies, assets, search and index pages are
    left out, one report line per kind.

    Re-ingesting replaces changed chunks, keeps the ids (and embeddings) of unchanged ones and removes the chunks
    of files gone from an ingested folder.
    """
    from admit.kb import IngestOptions, KnowledgeBase

    group_list: list[str] | None = None
    if access is not None:
        if tenant is not None or groups is not None:
            raise click.UsageError("--access replaces --tenant and --groups; give only --access.")
        tenant, group_list = access.tenant, list(access.groups)
    elif groups is not None:
        group_list = [g.strip() for g in groups.split(",") if g.strip()]
    # on by default: a bar on a terminal, lines in a log (only when a line falls due, so a short run writes none)
    shown: bool | Literal["auto"] = "auto" if progress is None else progress
    new_file = _new_kb_file(kb_path)
    options = IngestOptions(
        tenant=tenant,
        groups=tuple(group_list) if group_list is not None else None,
        authority=authority,
        label=label,
        registry=registry,
        max_tokens=max_tokens,
        exclude=exclude,
    )
    if max_file_mb:
        options = IngestOptions.of(options, max_file_bytes=max(int(max_file_mb * 2**20), 1))
    kb = open_kb(kb_path, embedder)
    assert isinstance(kb, KnowledgeBase)
    kb.max_tokens = max_tokens
    total = 0
    adapted: Adaptation | None = None
    stale = ""
    try:
        if engine == "ray":
            from admit.kb.ray_ingest import ingest_with_ray

            rep = ingest_with_ray(kb, list(paths), options, workers=workers, progress=shown)
        else:
            rep = kb.ingest(list(paths), options, progress=shown)
        total = kb.count()
        adapted = _adapt_after(kb, quiet=as_json) if adapt and total and not rep.errors else None
        now = kb.adaptation() if adapted is None else None
        stale = now.stale if now is not None else ""
    finally:
        kb.close()
        if new_file is not None and total == 0:  # a failed first ingest leaves no empty knowledge base behind
            for p in (new_file, *(new_file.with_name(new_file.name + s) for s in ("-wal", "-shm", "-journal"))):
                p.unlink(missing_ok=True)
    if as_json:
        extra: dict[str, Any] = {"adaptation": adapted.as_dict()} if adapted is not None else {}
        if stale:
            extra["adaptation_stale"] = stale
        echo_json({**rep.as_dict(), "files_seen": rep.files_seen, "kb_chunks": total, **extra})
        _exit_on_errors(rep)
        return
    for line in _lost_lines(rep):
        click.echo(clean_terminal(line), err=True)
    stdout_console().print(_summary(rep, kb_path, total), highlight=False, markup=False)
    if adapted is not None:
        from admit.cli.adapt import summary

        stdout_console().print(summary(adapted), highlight=False, markup=False)
    if stale:
        click.echo(f"  answerability adaptation stale: {stale}; run `admit adapt --kb {kb_path}`", err=True)
    for path, err in rep.errors:
        click.echo(clean_terminal(f"  error: {path}: {err}"), err=True)
    for path, cause in rep.refusals:
        click.echo(clean_terminal(f"  refused: {path}: {cause}"), err=True)
    if rep.skipped:
        click.echo(clean_terminal(f"  {rep.skipped_line()}"), err=True)
    _exit_on_errors(rep)


def _adapt_after(kb: KnowledgeBase, *, quiet: bool) -> Adaptation:
    from admit.cli.adapt import run_adapt

    return run_adapt(kb, quiet=quiet)


def _summary(rep: IngestReport, kb_path: str, total: int) -> str:
    """The report's counts, each once: the files seen split into what became of each, then the chunks."""
    seen = rep.files_seen
    return (
        f"ingest into {kb_path} in {rep.seconds:.1f} s: {seen} file{'' if seen == 1 else 's'} seen\n"
        f"  files:   {rep.sources_added} added, {rep.sources_updated} updated, {rep.sources_unchanged} unchanged, "
        f"{len(rep.errors)} failed, {len(rep.skipped)} skipped (format), {len(rep.refused_links)} refused (link); "
        f"{rep.sources_removed} removed (gone since the last ingest)\n"
        + "".join(f"  {line}\n" for line in rep.left_out_lines())
        + f"  chunks:  {rep.chunks_added} added, {rep.chunks_changed} changed, {rep.chunks_unchanged} unchanged, "
        f"{rep.chunks_removed} removed; {rep.chunks_written} written, {rep.chunks_embedded} embedded"
        + (f"; {rep.chunks_copies} stored once as copies of others (also_at)" if rep.chunks_copies else "")
        + f"\n  the knowledge base now holds {total} chunks"
    )


SHOWN_PATHS = 10
"""Paths named on a report line before ``... and N more``."""


def _named(paths: tuple[str, ...]) -> str:
    more = f" ... and {len(paths) - SHOWN_PATHS} more (--json lists them all)" if len(paths) > SHOWN_PATHS else ""
    return ", ".join(paths[:SHOWN_PATHS]) + more


def _lost_lines(rep: IngestReport) -> list[str]:
    """What the run read but could not store: pages that gave no chunk, pages the extraction guard kept whole."""
    out = []
    if rep.no_chunk:
        n = len(rep.no_chunk)
        out.append(
            f"  {n} page{'' if n == 1 else 's'} gave no chunk (no text found; nothing stored): {_named(rep.no_chunk)}"
        )
    if rep.copies_only:
        n = len(rep.copies_only)
        out.append(
            f"  {n} page{'' if n == 1 else 's'} stored only as copies (every chunk is another page's, whose also_at "
            f"names {'it' if n == 1 else 'them'}): {_named(rep.copies_only)}"
        )
    if rep.guarded:
        n = len(rep.guarded)
        out.append(
            f"  {n} page{'' if n == 1 else 's'} kept whole (the main content found was far below the page's text): "
            f"{_named(rep.guarded)}"
        )
    return out


def _new_kb_file(kb_path: str) -> Path | None:
    """The knowledge base file this run would create (``None``: a store URL, or a file that exists)."""
    if "://" in kb_path or kb_path == ":memory:":
        return None
    path = Path(kb_path).expanduser()
    return None if path.exists() else path


def _exit_on_errors(rep: IngestReport) -> None:
    """A file that failed to ingest is a runtime failure, and so is a folder where most pages gave no chunk (a
    site whose text was not found): exit 1 after the report, one line each."""
    for folder, empty, pages in rep.mostly_empty:
        click.echo(
            clean_terminal(
                f"error: {empty} of {pages} pages under {folder} gave no chunk: their text was not found, "
                "nothing of them is stored."
            ),
            err=True,
        )
    if rep.errors:
        n, ok = len(rep.errors), rep.sources_added + rep.sources_updated + rep.sources_unchanged
        rest = f"; {ok} other(s) ingested." if ok else "; no file was ingested."
        click.echo(f"error: {n} of {rep.files} file(s) failed to ingest{rest}", err=True)
    if rep.errors or rep.mostly_empty:
        sys.exit(1)
