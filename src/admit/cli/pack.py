"""``admit pack``, ``admit schema`` and ``admit policy``: the pipeline on a request, its schema, its routing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from admit.cli._common import (
    check_question,
    echo_json,
    handle_errors,
    json_option,
    logging_pipeline,
    policy_option,
    prune_option,
    read_json,
    reranker_option,
    stdout_console,
    trace_file_option,
)
from admit.cli._resources import SwitchCommand, llm_and_setwise_options, trace_content_option

if TYPE_CHECKING:
    from admit.policy import PolicySet

__all__ = ["pack_cmd", "policy_cmd", "schema_cmd"]


@click.command("pack", cls=SwitchCommand)
@click.argument("request", type=click.Path(allow_dash=True))
@policy_option()
@prune_option(default_help="Default: the request's `prune`, else the policy's (the shipped policy prunes nothing).")
@reranker_option(default=None, default_help="Default: retriever (the candidates' own scores).")
@llm_and_setwise_options()
@trace_file_option()
@trace_content_option()
@click.option("--human", is_flag=True, help="A readable view: admitted passages and every candidate's fate.")
@json_option("the result (the default)")
@handle_errors
def pack_cmd(
    request: str,
    policy_path: str | None,
    prune: str | None,
    reranker: str | None,
    pruner_options: dict[str, Any],
    trace_file: str | None,
    trace_content: bool,
    human: bool,
    as_json: bool,
) -> None:
    """Admit evidence for REQUEST (a JSON file, or - for stdin) and print the result as JSON.

    The request holds the question, the principal, the target model's input limit and the candidates; its
    schema is `admit schema`, an example is examples/request.json.
    """
    if human and as_json:
        raise click.UsageError("--human and --json exclude each other.")
    from admit.schema import parse_pack_request

    req = parse_pack_request(read_json(request))
    if prune is not None:
        from dataclasses import replace

        req = replace(req, prune=prune)
    pipe = logging_pipeline(
        policy_path=policy_path,
        trace_file=trace_file,
        pruner_options=pruner_options,
        reranker=reranker,
        trace_content=trace_content,
    )
    res = pipe.pack(req)
    if human:
        from admit.cli._human import print_result

        print_result(res, stdout_console())
    else:
        echo_json(res.as_dict())


@click.command("schema")
@json_option("the schema (JSON either way)")
def schema_cmd(as_json: bool) -> None:
    """Print the JSON Schema of the pack request."""
    from admit.schema import PackRequestModel

    echo_json(PackRequestModel.model_json_schema())


@click.command("policy")
@click.argument("question", required=False)
@policy_option()
@click.option("--show-default", is_flag=True, help="Print the shipped policy file, as TOML to copy and edit, and exit.")
@json_option("the route and the whole policy")
@handle_errors
def policy_cmd(question: str | None, policy_path: str | None, show_default: bool, as_json: bool) -> None:
    """Show which query class and policy QUESTION gets, and the cue that chose it (the policy as TOML).

    The policy file is checked whole first: an unknown setting or strategy exits 2, naming its table.
    """
    from dataclasses import asdict

    from admit.policy import load_policy_set, policy_as_toml, shipped_policy_text

    if show_default:
        click.echo(shipped_policy_text(), nl=False)
        return
    if question is None:
        raise click.UsageError("Missing argument 'QUESTION' (or give --show-default).")
    check_question(question)
    ps = load_policy_set(policy_path)
    _check_strategies(ps)
    route = ps.classify(question)
    pol = ps.policy(route.query_class)
    shape = ps.shape(question)
    if as_json:
        echo_json({"route": route.as_dict(), "shape": asdict(shape), "policy": asdict(pol)})
        return
    r = route.as_dict()
    click.echo(
        f"# query class {r.get('query_class')} (cue: {r.get('cue')!r}); policy version {ps.version} "
        f"({ps.source})\n# read as: {shape.main!r}\n{policy_as_toml(pol)}",
        nl=False,
    )


def _check_strategies(ps: PolicySet) -> None:
    """Every class's strategy must be ``none`` or one the catalogue knows (a custom one is the library's)."""
    import difflib

    from admit.errors import ConfigError
    from admit.prune.catalogue import find_strategy, strategy_names

    bad = {name: pol.prune.strategy for name, pol in ps.classes.items() if pol.prune.strategy != "none"}
    bad = {name: st for name, st in bad.items() if find_strategy(st) is None}
    if not bad:
        return
    name, strategy = next(iter(bad.items()))
    where = "[defaults.prune]" if len(bad) == len(ps.classes) else f"[classes.{name}.prune]"
    known = ("none", *strategy_names())
    close = difflib.get_close_matches(strategy, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"{where}: unknown strategy {strategy!r}{hint} (strategies: {', '.join(known)})")
