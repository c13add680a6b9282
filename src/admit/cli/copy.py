"""``admit copy``: move a knowledge base to another store, vectors included (no re-embedding)."""

from __future__ import annotations

import click

from admit.cli._common import echo_json, handle_errors, json_option, open_kb

__all__ = ["copy_cmd"]


@click.command("copy")
@click.argument("source")
@click.option("--kb", "target", required=True, envvar="ADMIT_KB", help="Target knowledge base file or store URL.")
@click.option(
    "--hnsw/--no-hnsw",
    default=False,
    help="Build pgvector's HNSW index on the target after the copy (searches then use it, with iterative scans).",
)
@json_option("the copy report")
@handle_errors
def copy_cmd(source: str, target: str, hnsw: bool, as_json: bool) -> None:
    """Copy the knowledge base SOURCE (a file or store URL) into --kb, with its stored vectors and ingest keys.

    Nothing is embedded again, and a later `admit ingest` into the target skips unchanged sources; a copy cut
    short finishes when run again. A store URL as SOURCE is opened with MiniLM's vector size.
    """
    from admit.errors import ConfigError
    from admit.kb.copy import copy_store

    src = open_kb(source, must_exist=True)
    try:
        dst = open_kb(target, src.embedder_spec)
        try:
            rep = copy_store(src.store, dst.store)
            if hnsw:
                create = getattr(dst.store, "create_hnsw_index", None)
                if create is None:
                    raise ConfigError("--hnsw needs a postgresql:// target.")
                create()
            total = dst.store.count()
        finally:
            dst.close()
    finally:
        src.close()
    out = {
        "sources_copied": rep.sources_copied,
        "sources_skipped": rep.sources_skipped,
        "chunks_copied": rep.chunks_copied,
        "kb_chunks": total,
    }
    if as_json:
        echo_json(out)
        return
    click.echo(
        f"copied {rep.sources_copied} sources ({rep.chunks_copied} chunks) into {target}; "
        f"{rep.sources_skipped} already there; the target now holds {total} chunks"
    )
