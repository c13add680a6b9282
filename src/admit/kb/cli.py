"""``admit ingest`` and ``admit search``: the embedded knowledge base from the command line."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import click

from admit.backends.tokenizers import resolve_tokenizer
from admit.cli import handle_errors
from admit.errors import ConfigError

__all__ = ["ingest_cmd", "search_cmd"]


def _open_kb(kb: str, embedder: str | None) -> object:
    from admit.kb import KnowledgeBase

    try:
        return KnowledgeBase(kb, embedder=embedder)
    except (ImportError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc


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

    kb = _open_kb(kb_path, embedder)
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
    if rep.refused_links:
        click.echo(
            f"  refused {len(rep.refused_links)} symlink(s) whose target lies outside the ingested folder", err=True
        )


def _parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ConfigError(f"--updated-after {value!r} is not an ISO date (e.g. 2026-01-31).") from exc
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


@click.command("search")
@click.argument("question")
@click.option("--kb", "kb_path", required=True, envvar="ADMIT_KB", help="Knowledge base file or store URL.")
@click.option("--principal", required=True, envvar="ADMIT_PRINCIPAL", help="tenant:T[,group:G...]")
@click.option("--prune/--no-prune", default=None, help="Prune with setwise / not at all (default: the policy's).")
@click.option("--strategy", default=None, help="A pruning strategy by name (overrides --prune).")
@click.option("--model", default="gpt-4o", show_default=True, help="Target model (its tokenizer counts the budget).")
@click.option("--input-limit", type=int, default=16_000, show_default=True, help="Target model input limit.")
@click.option("--policy", "policy_path", type=click.Path(exists=True, dir_okay=False), envvar="ADMIT_POLICY")
@click.option("-k", "--candidates", type=int, default=None, help="Candidates to retrieve (default: the policy's).")
@click.option("--language", "languages", multiple=True, help="Only chunks in this language (repeatable).")
@click.option("--updated-after", default=None, help="Only chunks modified on or after this ISO date.")
@click.option("--embedder", default=None, help="Override the embedder the KB was built with.")
@click.option("--trace-file", type=click.Path(dir_okay=False), envvar="ADMIT_TRACE_FILE")
@click.option("--show-prompt", is_flag=True, help="Also print the rendered evidence block.")
@click.option("--json", "as_json", is_flag=True, help="JSON output for tools.")
@handle_errors
def search_cmd(
    question: str,
    kb_path: str,
    principal: str,
    prune: bool | None,
    strategy: str | None,
    model: str,
    input_limit: int,
    policy_path: str | None,
    candidates: int | None,
    languages: tuple[str, ...],
    updated_after: str | None,
    embedder: str | None,
    trace_file: str | None,
    show_prompt: bool,
    as_json: bool,
) -> None:
    """Retrieve, rerank, dedupe, prune and pack evidence for QUESTION from a knowledge base."""
    from pathlib import Path

    from admit.kb import KnowledgeBase, SearchFilters, parse_principal
    from admit.report_text import render_human

    if "://" not in kb_path and kb_path != ":memory:" and not Path(kb_path).expanduser().is_file():
        raise ConfigError(f"Knowledge base {kb_path!r} does not exist; create it with `admit ingest ... --kb`.")
    who = parse_principal(principal)
    filters = SearchFilters(languages=tuple(languages) or None, updated_after=_parse_date(updated_after))
    kb = _open_kb(kb_path, embedder)
    assert isinstance(kb, KnowledgeBase)
    try:
        pipeline = None
        if trace_file:
            from admit.pipeline import Pipeline
            from admit.trace import JsonlSink

            pipeline = Pipeline(
                policies=policy_path, sink=JsonlSink(trace_file), pruner_options={"embedder": kb.cached_embedder}
            )
        # load the models before the request, so the trace's latencies are the request's own
        t_load = time.perf_counter()
        warm = getattr(kb.embedder, "warm_up", None)
        if callable(warm):
            warm()
        resolve_tokenizer(model)
        load_ms = (time.perf_counter() - t_load) * 1000
        res = kb.search(
            question,
            who,
            prune=strategy if strategy else prune,
            model=model,
            input_limit=input_limit,
            policy=policy_path,
            pipeline=pipeline,
            filters=filters,
            k=candidates,
        )
    finally:
        kb.close()
    if as_json:
        click.echo(json.dumps(res.as_dict(), ensure_ascii=False, indent=2, default=str))
        return
    r = res.trace.get("retrieval", {})
    lat = res.trace.get("latency_ms", {})
    click.echo(
        f"retrieved {r.get('returned')} of k={r.get('k')} readable chunks for tenant {who.tenant} "
        f"(lexical {r.get('lexical')}, vector {r.get('vector')}, both {r.get('both')}) in "
        f"{lat.get('embed_query', 0) + lat.get('retrieve', 0):.1f} ms"
    )
    click.echo(render_human(res))
    click.echo(f"model load (before the request): {load_ms:.0f} ms")
    click.echo("latency ms: " + ", ".join(f"{k} {v:.1f}" for k, v in lat.items() if isinstance(v, int | float)))
    if show_prompt:
        click.echo("\n" + res.prompt)
