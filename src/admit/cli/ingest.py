"""``admit ingest``: Markdown, HTML and text into a knowledge base."""

from __future__ import annotations

import json

import click

from admit.cli._common import handle_errors, open_kb

__all__ = ["ingest_cmd"]


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--kb", "kb_path", required=True, envvar="ADMIT_KB", help="Knowledge base file or store URL.")
@click.option("--tenant", default=None, help="Default tenant (the registry may override per source).")
@click.option("--groups", default=None, help="Default groups, comma-separated (empty: the whole tenant).")
@click.option("--authority", type=float, default=None, help="Default authority 0..1.")
@click.option("--label", default=None, help="Default access label shown in evidence envelopes.")
@click.option("--registry", type=click.Path(exists=True, dir_okay=False), default=None, help="sources.toml registry.")
@click.option("--embedder", default=None, help="minilm (default) or fake[:dim] for tests.")
@click.option("--max-tokens", type=int, default=350, show_default=True, help="Largest chunk, in cl100k tokens.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the ingest report as JSON.")
@handle_errors
def ingest_cmd(
    paths: tuple[str, ...],
    kb_path: str,
    tenant: str | None,
    groups: str | None,
    authority: float | None,
    label: str | None,
    registry: str | None,
    embedder: str | None,
    max_tokens: int,
    progress: bool,
    as_json: bool,
) -> None:
    """Ingest Markdown, HTML and text files (and folders) into a knowledge base."""
    from admit.kb import KnowledgeBase

    kb = open_kb(kb_path, embedder)
    assert isinstance(kb, KnowledgeBase)
    kb.max_tokens = max_tokens
    try:
        rep = kb.ingest(
            list(paths),
            tenant=tenant,
            groups=None if groups is None else [g.strip() for g in groups.split(",") if g.strip()],
            authority=authority,
            label=label,
            registry=registry,
            progress=progress,
        )
        total = kb.count()
    finally:
        kb.close()
    if as_json:
        click.echo(json.dumps({**rep.as_dict(), "kb_chunks": total}, indent=2))
        return
    click.echo(
        f"ingested {rep.files} files into {kb_path}: sources +{rep.sources_added} ~{rep.sources_updated} "
        f"={rep.sources_unchanged} -{rep.sources_removed}; chunks +{rep.chunks_added} ~{rep.chunks_changed} "
        f"={rep.chunks_unchanged} -{rep.chunks_removed} ({rep.chunks_embedded} embedded); "
        f"{total} chunks in the knowledge base; {rep.seconds:.1f}s"
    )
    for path, err in rep.errors:
        click.echo(f"  error: {path}: {err}", err=True)
    if rep.skipped:
        click.echo(f"  skipped {len(rep.skipped)} file(s) of unsupported formats", err=True)
