"""The ``admit`` command line: a thin layer over the library.

Library errors become clean messages once, in :func:`handle_errors`: a malformed request or bad setting
exits with code 2, a runtime failure with code 1; no traceback reaches the user.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from admit.errors import AdmitError, ConfigError

__all__ = ["handle_errors", "main"]

F = TypeVar("F", bound=Callable[..., Any])

# subcommands that live beside their stage: (module, attribute)
_PLUGGED = (
    ("admit.prune.cli", "prune_cmd"),
    ("admit.kb.cli", "ingest_cmd"),
    ("admit.kb.cli", "search_cmd"),
    ("admit.eval.cli", "eval_cmd"),
    ("admit.eval.cli", "replay_cmd"),
    ("admit.service.cli", "serve_cmd"),
    ("admit.service.cli", "mcp_cmd"),
)


def handle_errors(fn: F) -> F:
    """Turn admit errors into click errors: ConfigError (incl. RequestError) exit 2, others exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except AdmitError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(package_name="admit")
def main() -> None:
    """admit: decide which retrieved evidence a RAG answer gets to see."""


def _read_json(path: str) -> Any:
    raw = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()  # noqa: SIM115
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start}).") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: JSON nested too deeply.") from exc
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc


@main.command("pack")
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

    req = parse_pack_request(_read_json(request))
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


@main.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the pack request."""
    from admit.schema import PackRequestModel

    click.echo(json.dumps(PackRequestModel.model_json_schema(), indent=2))


@main.command("policy")
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


for _mod, _attr in _PLUGGED:
    # a stage whose CLI needs an extra that is not installed simply has no subcommand
    with contextlib.suppress(ImportError, AttributeError):
        main.add_command(getattr(importlib.import_module(_mod), _attr))
