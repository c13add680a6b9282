"""``admit eval`` and ``admit replay``."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import click

from admit._clean import clean_terminal
from admit.backends.rerankers.catalogue import SCORING_RERANKER
from admit.cli._common import (
    DEFAULT_STRATEGY,
    check_strategy,
    choice_option,
    echo_json,
    engine_option,
    handle_errors,
    json_option,
    minilm_config,
    policy_option,
    prune_option,
    reranker_option,
    stdout_console,
)
from admit.cli._progress import done_bar
from admit.cli._resources import SwitchCommand, llm_and_setwise_options
from admit.errors import ConfigError

__all__ = ["eval_cmd", "replay_cmd"]

logger = logging.getLogger(__name__)


def _prices_note(prices: Any, path: str | None) -> str:
    """Which prices ``net $/q`` used: the defaults (named) or the file's."""
    p = prices.as_dict()
    where = f"prices from {path}" if path else "default prices (gpt-4o generator, gpt-4o-mini LLM pruner)"
    extra = ""
    if p.get("pruner_per_call") or p.get("pruner_per_cpu_second"):
        extra = f", ${p['pruner_per_call']:g}/call, ${p['pruner_per_cpu_second']:g}/CPU s"
    return (
        f"net $/q = pruner cost - generator input saved, at {where}: generator input "
        f"${p['generator_input_per_mtok']:g}/1M tokens, LLM pruner ${p['pruner_input_per_mtok']:g} in / "
        f"${p['pruner_output_per_mtok']:g} out per 1M{extra}; --prices FILE sets your own. Negative is a saving."
    )


def _summary_table(run: Any, prices_note: str, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"{len(run.records)} questions, reranker {run.reranker}", caption=escape(prices_note))
    for col in ("configuration", "chunk comp", "token comp", "recall", "chunk recall", "p50 ms", "net $/q"):
        t.add_column(col, justify="left" if col == "configuration" else "right")
    for c in run.configs:
        m = run.metrics[c.name]["overall"]
        t.add_row(
            escape(c.name),
            f"{m['chunk_compression']:.3f}",
            f"{m['token_compression']:.3f}",
            f"{m['retained_recall']:.3f}",
            f"{m['chunk_recall']:.3f}",
            f"{m['latency_ms_p50']:.2f}",
            f"{m['net_cost_change_per_query_usd']:+.6f}",
        )
    console.print(t)


@click.command("eval", cls=SwitchCommand)
@click.option(
    "--data",
    "data",
    multiple=True,
    required=True,
    type=click.Path(exists=True),
    help="Labelled JSONL file(s) or folder(s); repeat, or list several after one --data.",
)
@click.argument("more_data", nargs=-1, type=click.Path(exists=True))
@prune_option(
    multiple=True,
    default_help="Repeatable; `all` for every CPU strategy (and the LLM ones with --llm-base-url). Default: setwise.",
)
@click.option("--strategy", "strategies", multiple=True, hidden=True, help="Deprecated: use --prune STRATEGY.")
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="KEY=V1,V2,...",
    help="Grid values (repeatable; the grid is their product). Default: the strategy's default grid.",
)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="A fixed parameter for every config.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder.")
@reranker_option(default=SCORING_RERANKER, default_help="One that cannot run here gives way to its fallback.")
@click.option("--generator-model", default="gpt-4o", show_default=True, help="Tokenizer for token counts.")
@click.option(
    "--prices",
    "prices_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Price table (TOML/JSON): generator and pruner USD per 1M tokens.",
)
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(file_okay=False),
    envvar="ADMIT_EVAL_CACHE",
    help="Cache folder (default: $XDG_CACHE_HOME/admit/eval, else ~/.cache/admit/eval).",
)
@click.option("--no-cache", is_flag=True, help="Compute everything; keep nothing.")
@click.option("--workers", default=1, show_default=True, type=int, help="Local worker processes.")
@engine_option('local processes, or Ray Data (pip install "admit[ray]").')
@llm_and_setwise_options()
@click.option("--limit", type=int, default=None, help="Use only the first N questions of each file.")
@policy_option(what="Policy file used to classify questions into query classes")
@choice_option("--x-axis", ("chunk", "token"), "Compression on the plot's x axis.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
@json_option("the output paths and every configuration's overall metrics")
@handle_errors
def eval_cmd(
    data: tuple[str, ...],
    more_data: tuple[str, ...],
    prune: tuple[str, ...] | None,
    strategies: tuple[str, ...],
    sweeps: tuple[str, ...],
    params: tuple[str, ...],
    out_dir: str,
    reranker: str,
    generator_model: str,
    prices_path: str | None,
    cache_dir: str | None,
    no_cache: bool,
    workers: int,
    engine: str,
    pruner_options: dict[str, Any],
    limit: int | None,
    policy_path: str | None,
    x_axis: str,
    progress: bool,
    as_json: bool,
) -> None:
    """Evaluate pruning strategies on labelled data; write metrics.json, pareto.png and report.html to --out."""
    if prune and strategies:
        raise click.UsageError("--prune and --strategy exclude each other; use --prune STRATEGY.")
    strategies = prune or tuple(s if s == "all" else check_strategy(s) for s in strategies) or (DEFAULT_STRATEGY,)
    from admit.eval.cache import default_cache_dir
    from admit.eval.dataset import expand_paths, load_datasets
    from admit.eval.engine import make_engine
    from admit.eval.metrics import CostRates
    from admit.eval.report import write_outputs
    from admit.eval.sweep import EvalOptions, configs_for, parse_assignments, parse_sweep, run_eval

    records = load_datasets(expand_paths([*data, *more_data]), limit=limit)
    configs, notes = configs_for(
        strategies,
        parse_sweep(sweeps),
        parse_assignments(params),
        llm_available=bool(pruner_options.get("llm_base_url")),
    )
    for n in notes:
        click.echo(f"note: {n}", err=True)
    prices = CostRates.load(prices_path)
    options = EvalOptions(
        reranker=reranker,
        generator_model=generator_model,
        prices=prices,
        cache=None if no_cache else (cache_dir or default_cache_dir()),
        pruner_options=pruner_options,
        policy=policy_path,
        minilm=minilm_config(),
    )
    eng = make_engine(engine, workers=workers)
    click.echo(f"{len(records)} questions x {len(configs)} configurations, engine {engine}", err=True)
    with done_bar("eval", enabled=progress) as bar:
        run = run_eval(records, configs, options, engine=eng, progress=bar)
    run.notes[:0] = notes
    paths = write_outputs(run, out_dir, axis=x_axis)  # type: ignore[arg-type]
    for n in run.notes[len(notes) :]:
        click.echo(f"note: {n}", err=True)
    done = (
        f"{run.computed} gradings computed, {run.cached} cached, {run.scores_computed} records reranked; "
        f"{run.seconds:.1f} s"
    )
    note = _prices_note(prices, prices_path)
    if as_json:
        click.echo(done, err=True)
        echo_json(
            {
                "paths": {k: str(v) for k, v in paths.items()},
                "questions": len(run.records),
                "reranker": run.reranker,
                "prices": {"source": prices_path or "default", **prices.as_dict()},
                "configs": {c.name: run.metrics[c.name]["overall"] for c in run.configs},
            }
        )
        return
    console = stdout_console()
    _summary_table(run, note, console)
    console.print(done, highlight=False)
    for k, v in paths.items():
        console.print(f"{k}: {v}", highlight=False, markup=False)


@click.command("replay", cls=SwitchCommand)
@click.argument("traces", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--policy", "policy_path", required=True, type=click.Path(exists=True, dir_okay=False), help="The new policy TOML."
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder.")
@reranker_option(default=None, default_help="Default: the pipeline's.")
@click.option("--prices", "prices_path", type=click.Path(exists=True, dir_okay=False), help="Price table.")
@llm_and_setwise_options()
@json_option("the output paths and the replay summary")
@handle_errors
def replay_cmd(
    traces: str,
    policy_path: str,
    out_dir: str,
    reranker: str | None,
    prices_path: str | None,
    pruner_options: dict[str, Any],
    as_json: bool,
) -> None:
    """Shadow-replay logged requests under a new policy and report the diff.

    TRACES.jsonl: the trace file of `admit serve` with `trace_requests = true`, or a ReplayLog file.
    """
    from admit.eval.metrics import CostRates
    from admit.eval.replay import replay_file, write_replay

    t0 = time.perf_counter()
    prices = CostRates.load(prices_path)
    report = replay_file(
        traces, policy_path, reranker=reranker, pruner_options=pruner_options, prices=prices, minilm=minilm_config()
    )
    if not report.summary.get("requests") and report.skipped:  # nothing to replay: one error, not one per line
        _, why = report.skipped[0]
        more = f" (and {len(report.skipped) - 1} more lines like it)" if len(report.skipped) > 1 else ""
        raise ConfigError(f"{why.rstrip('.')}{more}; nothing was replayed.")
    paths = write_replay(report, Path(out_dir))
    s = report.summary
    for _, why in report.skipped:  # one line each; the replay went on without them
        click.echo(f"error: {clean_terminal(why)}", err=True)
    if as_json:
        echo_json(
            {
                "paths": {k: str(v) for k, v in paths.items()},
                "summary": s,
                "prices": {"source": prices_path or "default", **prices.as_dict()},
            }
        )
        return
    where = f"prices from {prices_path}" if prices_path else "default prices (gpt-4o generator input)"
    click.echo(
        f"{s['requests']} requests replayed ({s['in_rollout']} in rollout, kill switch "
        f"{'on' if s['kill_switch'] else 'off'}): {s['changed']} changed, {s['lost_evidence']} lose previously "
        f"admitted evidence; evidence tokens {s['old_evidence_tokens']} -> {s['new_evidence_tokens']}; "
        f"est. cost change {s['est_cost_change_usd']:+.6f} USD at {where}; {time.perf_counter() - t0:.1f} s"
        + (f"; {len(report.skipped)} bad line(s) skipped" if report.skipped else "")
    )
    for k, v in paths.items():
        click.echo(f"{k}: {v}")
