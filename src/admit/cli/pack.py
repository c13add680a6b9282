"""``admit pack``, ``admit schema`` and ``admit policy``: the pipeline on a request, its schema, its routing."""

from __future__ import annotations

import json

import click

from admit.cli._common import handle_errors, read_json

__all__ = ["pack_cmd", "policy_cmd", "schema_cmd"]


@click.command("pack")
@click.argument("request", type=click.Path(allow_dash=True))
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(exists=True, dir_okay=False),
    envvar="ADMIT_POLICY",
    help="Policy TOML (default: the shipped one).",
)
@click.option("--prune", "strategy", default=None, help="Pruning strategy (setwise, top_n, ..., none).")
@click.option("--reranker", default=None, help="retriever (default), bm25, dense, hybrid.")
@click.option(
    "--trace-file",
    type=click.Path(dir_okay=False),
    envvar="ADMIT_TRACE_FILE",
    help="Append the trace record to this JSONL file.",
)
@click.option("--human", is_flag=True, help="Readable output instead of JSON.")
@handle_errors
def pack_cmd(
    request: str,
    policy_path: str | None,
    strategy: str | None,
    reranker: str | None,
    trace_file: str | None,
    human: bool,
) -> None:
    """Admit evidence for REQUEST (a JSON file, or - for stdin) and print the result as JSON."""
    from admit.pipeline import Pipeline
    from admit.schema import parse_pack_request
    from admit.trace import JsonlSink

    req = parse_pack_request(read_json(request))
    if strategy is not None:
        from dataclasses import replace

        req = replace(req, prune=strategy)
    pipe = Pipeline(policies=policy_path, reranker=reranker, sink=JsonlSink(trace_file) if trace_file else None)
    res = pipe.pack(req)
    if human:
        from admit.report_text import render_human

        click.echo(render_human(res))
    else:
        click.echo(json.dumps(res.as_dict(), ensure_ascii=False, indent=2, default=str))


@click.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the pack request."""
    from admit.schema import PackRequestModel

    click.echo(json.dumps(PackRequestModel.model_json_schema(), indent=2))


@click.command("policy")
@click.argument("question")
@click.option("--policy", "policy_path", type=click.Path(exists=True, dir_okay=False), envvar="ADMIT_POLICY")
@handle_errors
def policy_cmd(question: str, policy_path: str | None) -> None:
    """Show which query class and policy QUESTION gets, and the cue that chose it."""
    from dataclasses import asdict

    from admit.route import load_policy_set

    ps = load_policy_set(policy_path)
    route = ps.classify(question)
    pol = asdict(ps.policy(route.query_class))
    click.echo(json.dumps({"route": route.as_dict(), "policy": pol}, indent=2, default=str))
