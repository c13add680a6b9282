"""``admit search``: retrieve, rerank, dedupe, prune and pack from a knowledge base."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import click

from admit.backends.tokenizers import resolve_tokenizer
from admit.cli._common import handle_errors, open_kb
from admit.errors import ConfigError

__all__ = ["search_cmd"]


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
    kb = open_kb(kb_path, embedder)
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
