"""``admit inspect``: one self-contained HTML page of the requests in a trace file."""

from __future__ import annotations

import click

from admit.cli._common import handle_errors

__all__ = ["inspect_cmd"]


@click.command("inspect")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--id", "request_id", default=None, help="Only the request with this request id.")
@click.option(
    "-o", "--output", default="-", type=click.Path(dir_okay=False, allow_dash=True), help="The page (`-`: stdout)."
)
@handle_errors
def inspect_cmd(trace: str, request_id: str | None, output: str) -> None:
    """Write the request inspector page of TRACE.jsonl (`--trace-file` of search/pack, or a server's trace file).

    The page shows each request's question, class and cue, answerability verdict (answered, unsure or not
    answered, with its probability and reason), budget ledger, every candidate in rank order with its fate, stage,
    grade, score and reason, the admitted envelopes, fallbacks, flags and per-stage latency; it filters and sorts
    by fate, and loads nothing from the network.
    """
    from pathlib import Path

    from admit.errors import ConfigError
    from admit.inspector.page import read_trace_file, render_page

    records = read_trace_file(trace, request_id)
    page = render_page(records, title=f"admit: {Path(trace).name}")
    if output == "-":
        click.echo(page, nl=False)
        return
    try:
        Path(output).write_text(page, "utf-8")
    except OSError as exc:
        raise ConfigError(f"{output}: cannot be written: {exc.strerror or exc}.") from exc
    n = len(records)
    click.echo(f"wrote {output}: {n} request{'s' if n != 1 else ''}", err=True)
