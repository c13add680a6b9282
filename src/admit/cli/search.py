"""``admit search``: retrieve, rerank, dedupe, prune and pack from a knowledge base."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import click

from admit.cli._common import (
    check_question,
    check_strategy,
    check_tenant,
    echo_json,
    handle_errors,
    json_option,
    logging_pipeline,
    open_kb,
    policy_option,
    principal_option,
    prune_option,
    stdout_console,
    trace_file_option,
)
from admit.cli._progress import progress_option, show_progress, status
from admit.cli._resources import SwitchCommand, llm_and_setwise_options, trace_content_option
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


def _explain_nothing(kb: Any, kb_path: str, principal: Any, *, filtered: bool) -> None:
    """No candidate at all: say why, instead of a silent "admitted 0 of 0".

    An empty knowledge base or a tenant it does not hold is a caller mistake (exit 2, naming the tenants it
    holds: their names only, never their content); a known tenant with nothing readable gets a hint on stderr.
    """
    if kb.count() == 0:
        raise ConfigError(f"The knowledge base {kb_path!r} holds no chunks; add documents with `admit ingest`.")
    check_tenant(kb, principal, kb_path=kb_path)
    why = "the --language/--updated-after filters" if filtered else f"the groups {list(principal.groups)}"
    click.echo(
        f"note: tenant {principal.tenant!r} has {kb.count(principal.tenant)} chunks, but none is readable with "
        f"{why}; check --principal tenant:{principal.tenant},group:G (chunk access is set at ingest).",
        err=True,
    )


@click.command("search", cls=SwitchCommand)
@click.argument("question")
@click.option("--kb", "kb_path", required=True, envvar="ADMIT_KB", help="Knowledge base file or store URL.")
@principal_option()
@prune_option(default_help="Default: the policy's (the shipped policy prunes nothing).")
@click.option("--no-prune", "no_prune", is_flag=True, help="Do not prune: the same as --prune none.")
@click.option("--strategy", default=None, hidden=True, help="Deprecated: use --prune STRATEGY.")
@click.option("--model", default="gpt-4o", show_default=True, help="Target model (its tokenizer counts the budget).")
@click.option("--input-limit", type=int, default=16_000, show_default=True, help="Target model input limit.")
@policy_option()
@click.option("-k", "--candidates", type=int, default=None, help="Candidates to retrieve (default: the policy's).")
@click.option("--language", "languages", multiple=True, help="Only chunks in this language (repeatable).")
@click.option("--updated-after", default=None, help="Only chunks modified on or after this ISO date.")
@click.option("--embedder", default=None, help="Override the embedder the KB was built with.")
@llm_and_setwise_options()
@trace_file_option()
@trace_content_option()
@click.option("--show-prompt", is_flag=True, help="Also print the rendered evidence block.")
@progress_option("what it is doing (opening, loading the model, searching)")
@json_option()
@handle_errors
def search_cmd(
    question: str,
    kb_path: str,
    principal: Any,
    prune: str | None,
    no_prune: bool,
    strategy: str | None,
    model: str,
    input_limit: int,
    policy_path: str | None,
    candidates: int | None,
    languages: tuple[str, ...],
    updated_after: str | None,
    embedder: str | None,
    pruner_options: dict[str, Any],
    trace_file: str | None,
    trace_content: bool,
    show_prompt: bool,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Retrieve, rerank, dedupe, prune and pack evidence for QUESTION from a knowledge base."""
    check_question(question)
    given = [n for n, v in (("--prune", prune), ("--strategy", strategy), ("--no-prune", no_prune or None)) if v]
    if len(given) > 1:
        raise click.UsageError(f"{' and '.join(given)} exclude each other; use --prune STRATEGY (or none).")
    if strategy is not None:
        prune = check_strategy(strategy)
    elif no_prune:
        prune = "none"
    filters_dates = _parse_date(updated_after)

    from admit.backends.tokenizers import resolve_tokenizer
    from admit.kb import KnowledgeBase, SearchFilters

    filters = SearchFilters(languages=tuple(languages) or None, updated_after=filters_dates)
    with status(show_progress(progress)) as st:
        st.update(f"opening the knowledge base {kb_path}")
        kb = open_kb(kb_path, embedder, must_exist=True)
        assert isinstance(kb, KnowledgeBase)
        try:
            pipeline = None
            if trace_file or trace_content or pruner_options:
                pipeline = logging_pipeline(
                    policy_path=policy_path,
                    trace_file=trace_file,
                    pruner_options={"embedder": kb.cached_embedder, **pruner_options},
                    trace_content=trace_content,
                )
            # load the models before the request, so the trace's latencies are the request's own
            st.update(f"loading the embedding model ({kb.embedder.name})")
            t_load = time.perf_counter()
            warm = getattr(kb.embedder, "warm_up", None)
            if callable(warm):
                warm()
            resolve_tokenizer(model)
            load_ms = (time.perf_counter() - t_load) * 1000
            st.update("searching: retrieve, rerank, dedupe, prune, pack")
            res = kb.search(
                question,
                principal,
                prune=prune,
                model=model,
                input_limit=input_limit,
                policy=policy_path,
                pipeline=pipeline,
                filters=filters,
                k=candidates,
            )
            if not res.trace.get("candidate_count"):
                _explain_nothing(kb, kb_path, principal, filtered=bool(languages or updated_after))
        finally:
            kb.close()
    if as_json:
        echo_json(res.as_dict())
        return
    from rich.markup import escape

    from admit.cli._human import print_result

    console = stdout_console()
    r = res.trace.get("retrieval", {})
    lat = res.trace.get("latency_ms", {})
    console.print(
        f"retrieved {r.get('returned')} of k={r.get('k')} readable chunks for tenant {escape(principal.tenant)} "
        f"(lexical {r.get('lexical')}, vector {r.get('vector')}, both {r.get('both')}) in "
        f"{lat.get('embed_query', 0) + lat.get('retrieve', 0):.1f} ms"
    )
    print_result(res, console)
    console.print(f"[dim]model load (before the request): {load_ms:.0f} ms[/]")
    console.print(
        "[dim]latency ms: " + ", ".join(f"{k} {v:.1f}" for k, v in lat.items() if isinstance(v, int | float)) + "[/]"
    )
    if show_prompt:
        from admit._clean import clean_terminal

        console.print("\n" + clean_terminal(res.prompt), markup=False, highlight=False)
