"""``admit serve`` (HTTP API) and ``admit mcp`` (MCP server): thin wrappers over :mod:`admit.service`.

They parse options, open the knowledge base and hand both to the service; everything else (auth, limits,
readiness, the tools) lives in :mod:`admit.service`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from admit.cli._common import (
    check_port_free,
    check_tenant,
    choice_option,
    handle_errors,
    minilm_config,
    open_kb,
    principal_option,
    prune_option,
    terminal_logging,
)
from admit.errors import MissingExtraError

if TYPE_CHECKING:
    from admit.service.config import ServiceSettings

__all__ = ["mcp_cmd", "serve_cmd"]

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

_LOG_LEVELS = click.Choice(["debug", "info", "warning", "error"])


def _kb_option(what: str) -> Callable[[F], F]:
    return click.option(
        "--kb",
        "kb_path",
        default=None,
        envvar="ADMIT_KB",
        help=f"Knowledge base file or store URL {what} (built with `admit ingest`).",
    )


def _config_option(what: str) -> Callable[[F], F]:
    return click.option(
        "--config",
        "config_path",
        type=click.Path(exists=True, dir_okay=False),
        envvar="ADMIT_CONFIG",
        help=f"admit.toml with the [service] section ({what}).",
    )


def _settings(config_path: str | None) -> ServiceSettings:
    """The ``[service]`` settings of ``--config``, holding the root options' MiniLM configuration
    (:func:`~admit.cli._common.minilm_config`): the service's pipelines and its worker processes build their
    embedders with it; nothing process-wide is set."""
    from admit.service.config import load_settings

    return load_settings(config_path).model_copy(update={"minilm": minilm_config()})


@click.command("serve")
@_kb_option("for /v1/search")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@_config_option("API keys and their principals, limits, policy, shadow, kill switch")
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=_LOG_LEVELS,
    help="Least severe log message printed on stderr (the server's and uvicorn's).",
)
@handle_errors
def serve_cmd(kb_path: str | None, host: str, port: int, config_path: str | None, log_level: str) -> None:
    """Serve the HTTP API: /v1/search, /v1/prune, /v1/pack, /healthz, /readyz, /metrics, /openapi.json."""
    try:
        import uvicorn  # noqa: F401  (installed: the service extra; GuardedServer is its Server)
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "service") from exc
    from admit.service.http import create_app

    settings = _settings(config_path)
    check_port_free(host, port)
    app = create_app(settings, kb=open_kb(kb_path, must_exist=True) if kb_path else None, processes=True)
    terminal_logging(log_level, "%(asctime)s %(levelname)s %(name)s: %(message)s")
    from admit.service.work import responsive_interpreter

    responsive_interpreter()
    from admit.service.server import GuardedServer, ServerLimits, uvicorn_config

    limits = ServerLimits.from_settings(settings)
    config = uvicorn_config(app, host=host, port=port, limits=limits, log_level=log_level, access_log=False)
    GuardedServer(config, limits).run()


@click.command("mcp")
@_kb_option("to search")
@_config_option("[service.mcp] names the principal and the search defaults")
@principal_option(
    required=False,
    envvar=False,
    extra_help=" Default: [service.mcp] in --config. ADMIT_PRINCIPAL is not read here: the option, then the config.",
)
@click.option("--tenant", default=None, hidden=True, help="Deprecated: use --principal tenant:T.")
@click.option("--group", "groups", multiple=True, hidden=True, help="Deprecated: use --principal tenant:T,group:G.")
@prune_option(default_help="Default: the config's prune_strategy (setwise); search_knowledge_base prunes by default.")
@choice_option(
    "--transport",
    ("stdio", "streamable-http"),
    "stdio for a local agent that starts the server; streamable-http to serve MCP over HTTP.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface (streamable-http only).")
@click.option("--port", default=8090, show_default=True, type=click.IntRange(0, 65535), help="Port (streamable-http).")
@handle_errors
def mcp_cmd(
    kb_path: str | None,
    config_path: str | None,
    principal: Any,
    tenant: str | None,
    groups: tuple[str, ...],
    prune: str | None,
    transport: str,
    host: str,
    port: int,
) -> None:
    """Serve the MCP tools search_knowledge_base and prune_context (stdio by default)."""
    try:
        import mcp  # noqa: F401  # the SDK (extra `service`): one line naming the extra, not a traceback
    except ImportError as exc:
        raise MissingExtraError("mcp", "service") from exc
    from admit.service.mcp import run_mcp
    from admit.types import Principal

    if principal is not None and (tenant or groups):
        raise click.UsageError("--principal replaces --tenant and --group; give only --principal.")
    if principal is None and os.environ.get("ADMIT_PRINCIPAL"):
        click.echo(
            "warning: ADMIT_PRINCIPAL is ignored by admit mcp (its principal is --principal, else [service.mcp])",
            err=True,
        )
    if groups and not tenant:
        raise click.UsageError("--group needs --tenant; better: --principal tenant:T,group:G.")
    if tenant:
        principal = Principal(tenant=tenant, groups=groups)
    if prune == "none":
        raise click.UsageError("admit mcp cannot turn pruning off for every call; an agent passes prune=false.")
    settings = _settings(config_path)
    if prune is not None:
        settings = settings.model_copy(update={"prune_strategy": prune})
    if transport == "streamable-http":
        check_port_free(host, port)
    kb = open_kb(kb_path, must_exist=True) if kb_path else None
    chosen = principal or settings.mcp_principal()
    if kb is not None and chosen is not None and transport == "stdio":
        check_tenant(kb, chosen, kb_path=str(kb_path))  # a misspelled tenant would answer nothing, silently
    terminal_logging("WARNING", "%(asctime)s %(levelname)s %(name)s: %(message)s")  # stderr
    run_mcp(settings, kb=kb, principal=principal, transport=transport, host=host, port=port)  # type: ignore[arg-type]
