"""``admit serve`` (HTTP API) and ``admit mcp`` (MCP server): thin wrappers over :mod:`admit.service`."""

from __future__ import annotations

import logging

import click

from admit.cli._common import handle_errors, open_kb
from admit.errors import ConfigError, MissingExtraError

__all__ = ["mcp_cmd", "serve_cmd"]

logger = logging.getLogger(__name__)


@click.command("serve")
@click.option("--kb", "kb_path", type=click.Path(exists=True), default=None, help="Knowledge base for /v1/search.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    envvar="ADMIT_CONFIG",
    help="admit.toml with the [service] section (keys, limits, policy, shadow, kill switch).",
)
@click.option(
    "--log-level", default="info", show_default=True, type=click.Choice(["debug", "info", "warning", "error"])
)
@handle_errors
def serve_cmd(kb_path: str | None, host: str, port: int, config_path: str | None, log_level: str) -> None:
    """Serve the HTTP API: /v1/search, /v1/prune, /v1/pack, /healthz, /metrics, /openapi.json."""
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "service") from exc
    from admit.service.config import load_settings
    from admit.service.http import create_app

    settings = load_settings(config_path)
    app = create_app(settings, kb=open_kb(kb_path) if kb_path else None)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)


@click.command("mcp")
@click.option("--kb", "kb_path", type=click.Path(exists=True), default=None, help="Knowledge base to search.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    envvar="ADMIT_CONFIG",
    help="admit.toml; [service.mcp] names the principal.",
)
@click.option("--transport", type=click.Choice(["stdio", "streamable-http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface (streamable-http only).")
@click.option("--port", default=8090, show_default=True, type=click.IntRange(0, 65535), help="Port (streamable-http).")
@click.option("--tenant", default=None, help="Principal tenant (overrides [service.mcp]).")
@click.option("--group", "groups", multiple=True, help="Principal group (repeatable; with --tenant).")
@handle_errors
def mcp_cmd(
    kb_path: str | None,
    config_path: str | None,
    transport: str,
    host: str,
    port: int,
    tenant: str | None,
    groups: tuple[str, ...],
) -> None:
    """Serve the MCP tools search_knowledge_base and prune_context (stdio by default)."""
    from admit.service.config import load_settings
    from admit.service.mcp import build_mcp_server
    from admit.types import Principal

    settings = load_settings(config_path)
    if groups and not tenant:
        raise ConfigError("--group needs --tenant.")
    principal = Principal(tenant=tenant, groups=groups) if tenant else None
    server = build_mcp_server(settings, kb=open_kb(kb_path) if kb_path else None, principal=principal)
    logging.basicConfig(level="WARNING", format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # stderr
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
