"""What every ``admit`` command shares: one vocabulary of options, error handling, input and output.

One vocabulary across commands:

* ``--principal tenant:T[,group:G...]``: who asks (``search``, ``mcp``); ingest's ``--access`` takes the same syntax.
* ``--prune [STRATEGY]``: prune with STRATEGY (``setwise``, ``graded``, ..., or ``none`` for no pruning); a bare
  ``--prune`` means ``setwise``. Without it each command keeps its surface's default (README, "Pruning by default").
* ``--json``: the result as one JSON document on stdout, for tools; without it, a human view (``pack`` prints
  JSON unless ``--human``: it is JSON in, JSON out).
* ``--policy FILE``, ``--trace-file FILE``: the same on every command that has them.

Errors become one clean line on stderr, once, in :func:`handle_errors`: a caller mistake (bad option, missing
file, malformed request, bad principal) exits with code 2, a runtime failure with code 1; no traceback.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from admit._jsonl import json_line
from admit.errors import AdmitError, AuthorizationError, ConfigError, MissingExtraError
from admit.prune.catalogue import DEFAULT_STRATEGY

if TYPE_CHECKING:
    from admit.backends.embedders.defaults import EncoderConfig

__all__ = [
    "DEFAULT_STRATEGY",
    "access_option",
    "check_port_free",
    "check_question",
    "check_strategy",
    "check_tenant",
    "choice_option",
    "configure_backends",
    "echo_json",
    "handle_errors",
    "json_option",
    "llm_options",
    "llm_pruner_options",
    "logging_pipeline",
    "minilm_config",
    "minilm_embedder",
    "open_kb",
    "policy_option",
    "principal_option",
    "prune_option",
    "quiet_model_loading",
    "read_json",
    "reranker_option",
    "stdout_console",
    "trace_file_option",
]

F = TypeVar("F", bound=Callable[..., Any])


# errors of a path the caller named: a usage mistake, not a runtime failure
_USAGE_ERRNOS = {errno.ENOENT, errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG}


def handle_errors(fn: F) -> F:
    """Turn errors into one clean line: caller mistakes exit 2, runtime failures exit 1, Ctrl-C exits 130.

    ConfigError (incl. RequestError, MissingExtraError), AuthorizationError (a malformed or missing principal)
    and an unreadable path the caller named exit 2; any other AdmitError or OSError exits 1.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            # the reader stopped reading (`admit search ... | head -1`): not a failure; say nothing
            _quiet_stdout()
            sys.exit(0)
        except (ConfigError, AuthorizationError) as exc:
            _fail(str(exc), 2)
        except AdmitError as exc:
            _fail(str(exc), 1)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}", 2 if exc.errno in _USAGE_ERRNOS else 1)
        except KeyboardInterrupt:
            _fail("interrupted", 130)

    return wrapper  # type: ignore[return-value]


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush does not raise on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test runner's capture): nothing to flush
        pass


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another process holds before anything loads (uvicorn would exit 3 after start-up)."""
    import socket

    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"--host {host!r}: cannot be resolved ({exc.strerror or exc}).") from exc
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # what uvicorn sets: TIME_WAIT is no conflict
        try:
            s.bind(addr)
        except OSError as exc:
            raise ConfigError(
                f"{host}:{port} is not available ({exc.strerror or exc}); is another server running there? "
                "Pick another with --port."
            ) from exc


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def quiet_model_loading() -> None:
    """Silence Hugging Face progress bars (transformers' ``Loading weights``) unless the user asked for them.

    The command line is the process's edge, so it sets the switches once, before any model library is imported;
    an explicit ``HF_HUB_DISABLE_PROGRESS_BARS=0`` in the environment wins.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if not logging.getLogger().handlers:
        terminal_logging()


class TerminalSafeFormatter(logging.Formatter):
    """A log formatter for a terminal: escape sequences and control characters in a message (a file name with
    ``ESC]0;...``, a refused link's target) are removed, line breaks kept."""

    def format(self, record: logging.LogRecord) -> str:
        """The formatted record, cleaned (:func:`admit._clean.clean_terminal`)."""
        from admit._clean import clean_terminal

        return clean_terminal(super().format(record))


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is emitted (as Python's last-resort handler does)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def terminal_logging(level: str = "WARNING", fmt: str = "%(message)s") -> None:
    """Log to stderr through :class:`TerminalSafeFormatter` (what the command line prints of the library's log;
    without it Python's last-resort handler prints messages raw)."""
    root = logging.getLogger()
    handler = _Stderr()
    handler.setFormatter(TerminalSafeFormatter(fmt))
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())


# -- input ---------------------------------------------------------------------------------------------------
def read_json(path: str) -> Any:
    """Read one JSON document from ``path`` (``-``: stdin); a missing or bad file is a ConfigError."""
    if path == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}.") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start}).") from exc
    return json_line(text, path)


def check_question(question: str) -> str:
    """Reject an empty question, or one over the question limit of every surface, before anything is loaded."""
    from admit.types import check_question_length

    if not question or not question.strip():
        raise ConfigError('The question is empty; ask something, e.g. admit search "What does E4012 mean?" ...')
    check_question_length(question)
    return question


def open_kb(kb: str, embedder: str | None = None, *, must_exist: bool = False) -> Any:
    """Open the knowledge base at ``kb`` (a file or a store URL); a bad one is a ConfigError.

    ``must_exist``: a file path that does not exist is an error instead of a new, empty knowledge base.
    """
    from pathlib import Path

    if must_exist and "://" not in kb and kb != ":memory:" and not Path(kb).expanduser().is_file():
        raise ConfigError(f"Knowledge base {kb!r} does not exist; create it with `admit ingest ... --kb {kb}`.")
    try:
        from admit.kb import KnowledgeBase
    except ImportError as exc:
        raise MissingExtraError("admit knowledge base dependencies", "kb") from exc
    try:
        return KnowledgeBase(kb, embedder=embedder, minilm=minilm_config())
    except (ImportError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc


def check_tenant(kb: Any, principal: Any, *, kb_path: str) -> None:
    """Refuse a principal whose tenant the knowledge base does not hold (a misspelling, a wrong case).

    The message names the tenants it holds (their names only, never their content), with the closest one.
    A knowledge base without documents passes: there is nothing to compare with.
    """
    kb.check_tenant(principal.tenant, label=kb_path)  # the library's check and message


# -- output --------------------------------------------------------------------------------------------------
def echo_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def stdout_console() -> Any:
    """A rich console on stdout (plain text, 160 columns, when stdout is not a terminal)."""
    from rich.console import Console

    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 here; a reader that stopped reading (`| head -1`) is no failure of ours
            self.quiet = True
            _quiet_stdout()
            raise SystemExit(0)

    # a terminal's own width; a pipe or file gets wide lines rather than folded tables
    return _PipeConsole(highlight=False, width=None if sys.stdout.isatty() else 160)


# -- options -------------------------------------------------------------------------------------------------
def _strategy_names() -> tuple[str, ...]:
    from admit.prune import strategy_names

    return (*strategy_names(), "none")


def check_strategy(value: str) -> str:
    """Return ``value`` if it names a pruning strategy (or ``none``); else a usage error."""
    if value not in _strategy_names():
        raise click.BadParameter(f"unknown strategy {value!r}; known: {', '.join(_strategy_names())}.")
    return value


def prune_option(*, default_help: str, default: str | None = None, multiple: bool = False) -> Callable[[F], F]:
    """``--prune [STRATEGY]`` (dest ``prune``): the pruning strategy, validated before anything loads.

    A bare ``--prune`` means ``setwise``; ``none`` turns pruning off. ``multiple``: repeatable (``eval``), where
    ``all`` is accepted too and the value is required.
    """

    def check(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        if multiple:
            return tuple(v if v == "all" else check_strategy(v) for v in value) or None
        return check_strategy(value)

    help_text = f"Pruning strategy: {', '.join(_strategy_names()[:-1])}, or none. {default_help}"
    if multiple:
        return click.option("--prune", "prune", multiple=True, metavar="STRATEGY", callback=check, help=help_text)
    return click.option(
        "--prune",
        "prune",
        is_flag=False,
        flag_value=DEFAULT_STRATEGY,
        default=default,
        metavar="[STRATEGY]",
        callback=check,
        help=help_text + f" A bare --prune means {DEFAULT_STRATEGY}.",
    )


class _CatalogueOption(click.Option):
    """An option whose help is written when it is shown: it lists a catalogue's entries with their summaries,
    which imports their modules (never on a plain run)."""

    def __init__(self, *args: Any, help_fn: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_fn = help_fn

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self.help_fn()
        return super().get_help_record(ctx)


def reranker_option(*, default: str | None, default_help: str) -> Callable[[F], F]:
    """``--reranker NAME``: a reranker of the catalogue (the built-ins and plug-ins), checked before anything
    loads; the help lists each with its summary."""

    def check(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        from admit.backends.rerankers import RERANKERS

        if value is not None:
            try:
                RERANKERS.get(value)
            except ConfigError as exc:  # the catalogue's one message, listing the known names
                raise click.BadParameter(str(exc)) from None
        return value

    def help_text() -> str:
        from admit.backends.rerankers import RERANKERS

        return f"{RERANKERS.help()}. {default_help}"

    return click.option(
        "--reranker",
        default=default,
        show_default=default is not None,
        metavar="NAME",
        callback=check,
        cls=_CatalogueOption,
        help_fn=help_text,
        help=f"A reranker of the catalogue (built-in or plug-in). {default_help}",  # until the help is shown
    )


def _parse_principal(_ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    from admit.kb import parse_principal

    try:
        return parse_principal(value)
    except AuthorizationError as exc:
        raise click.BadParameter(str(exc), param=param) from exc


def principal_option(*, required: bool = True, extra_help: str = "", envvar: bool = True) -> Callable[[F], F]:
    """``--principal tenant:T[,group:G...]`` (dest ``principal``, a :class:`~admit.types.Principal`); also read
    from ``ADMIT_PRINCIPAL`` unless ``envvar`` is off (``admit mcp``: its principal comes from the option or
    ``[service.mcp]``, never silently from the environment)."""
    return click.option(
        "--principal",
        "principal",
        required=required,
        envvar="ADMIT_PRINCIPAL" if envvar else None,
        metavar="tenant:T[,group:G...]",
        callback=_parse_principal,
        help=f"Who asks: a tenant and its groups, e.g. tenant:acme,group:support.{extra_help}",
    )


def access_option() -> Callable[[F], F]:
    """``--access tenant:T[,group:G...]`` (dest ``access``): who may read ingested documents, same syntax."""
    return click.option(
        "--access",
        "access",
        default=None,
        metavar="tenant:T[,group:G...]",
        callback=_parse_principal,
        help="Who may read the ingested documents (the registry may override per source), in the syntax of "
        "--principal; no group: the whole tenant.",
    )


def json_option(what: str = "the result") -> Callable[[F], F]:
    """``--json`` (dest ``as_json``): print the result as JSON on stdout."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON on stdout (for tools).")


def policy_option(*, required: bool = False, what: str = "Policy TOML") -> Callable[[F], F]:
    """``--policy FILE`` (dest ``policy_path``)."""
    return click.option(
        "--policy",
        "policy_path",
        required=required,
        type=click.Path(exists=True, dir_okay=False),
        envvar=None if required else "ADMIT_POLICY",
        help=f"{what}: routing cues and per-class settings (default: the shipped policy; see `admit policy`).",
    )


def choice_option(flag: str, choices: Sequence[str], what: str) -> Callable[[F], F]:
    """``--FLAG`` one of ``choices``, the first by default (shown in the help; ``what``: the help)."""
    return click.option(flag, type=click.Choice(list(choices)), default=choices[0], show_default=True, help=what)


def engine_option(what: str) -> Callable[[F], F]:
    """``--engine local|ray`` (dest ``engine``, default ``local``): where the work runs (``what``: the help)."""
    return choice_option("--engine", ("local", "ray"), what)


def jsonl_path_option(flag: str, dest: str, what: str, *, required: bool = True) -> Callable[[F], F]:
    """A JSONL file option (``-`` for stdin or stdout)."""
    return click.option(flag, dest, required=required, type=click.Path(allow_dash=True, dir_okay=False), help=what)


def trace_file_option() -> Callable[[F], F]:
    """``--trace-file FILE`` (dest ``trace_file``)."""
    return click.option(
        "--trace-file",
        type=click.Path(dir_okay=False),
        envvar="ADMIT_TRACE_FILE",
        help="Append each request's trace record, with the request itself (candidate text included), to this "
        "JSONL file: `admit replay FILE --policy NEW.toml` re-runs it.",
    )


def configure_backends(
    *,
    minilm_dir: str | None,
    embed_threads: int | None,
    llm_model: str | None,
    llm_base_url: str | None,
    encoder: str | None = None,
) -> None:
    """Hand the backend defaults the root options read (``ADMIT_MINILM_DIR``, ``ADMIT_EMBED_THREADS``
    / ``ADMIT_TORCH_THREADS``, ``ADMIT_ENCODER``, ``ADMIT_LLM_MODEL`` / ``ADMIT_LLM_BASE_URL``) to the library,
    which reads none of them itself; nothing is imported when none is set.

    The MiniLM ones become one :class:`~admit.backends.embedders.defaults.EncoderConfig`, kept on the command's
    context (:func:`minilm_config`), which each command hands to what it builds: its pipeline
    (``Pipeline(minilm=...)``), knowledge base, reranker, evaluation workers (``EvalOptions(minilm=...)``), the
    service's settings (``ServiceSettings.minilm``, for ``admit serve`` and ``admit mcp``). None sets the
    process's fallback."""
    if minilm_dir is not None or embed_threads is not None or encoder is not None:
        from admit.backends.embedders.defaults import EncoderConfig

        config = EncoderConfig(path=Path(minilm_dir) if minilm_dir else None, threads=embed_threads, encoder=encoder)
        click.get_current_context().meta[_MINILM] = config
    if llm_model or llm_base_url:
        from admit.backends.llms import configure_llm

        configure_llm(model=llm_model, base_url=llm_base_url)


_MINILM = "admit.minilm"
"""Where the root options' MiniLM configuration is kept (``ctx.meta``, shared by the command's contexts)."""


def minilm_config() -> EncoderConfig | None:
    """The MiniLM configuration the root options named (``admit --minilm-dir/--embed-threads/--encoder``), or
    ``None`` when they named none."""
    ctx = click.get_current_context(silent=True)
    config: EncoderConfig | None = ctx.meta.get(_MINILM) if ctx is not None else None
    return config


def minilm_embedder() -> Any:
    """``minilm``, the process's shared one, with the root options' configuration (:func:`minilm_config`): what
    a command hands a reranker or a pruner it builds by name."""
    from admit.backends.embedders.shared import shared_embedder

    return shared_embedder("minilm", minilm_config())


def llm_options() -> Callable[[F], F]:
    """``--llm-base-url``, ``--llm-model``, ``--llm-api-key-env``: the endpoint of the LLM strategies."""

    def deco(fn: F) -> F:
        fn = click.option(
            "--llm-api-key-env",
            default="ADMIT_LLM_API_KEY",
            show_default=True,
            help="NAME of the environment variable holding the endpoint's API key.",
        )(fn)
        fn = click.option(
            "--llm-model", default=None, envvar="ADMIT_LLM_MODEL", help="Model name at the endpoint (LLM strategies)."
        )(fn)
        return click.option(
            "--llm-base-url",
            default=None,
            envvar="ADMIT_LLM_BASE_URL",
            help="OpenAI-compatible endpoint of the LLM strategies (graded, select, budget_select, anchors).",
        )(fn)

    return deco


def llm_pruner_options(llm_base_url: str | None, llm_model: str | None, llm_api_key_env: str) -> dict[str, Any]:
    """The pruner options the ``--llm-*`` options stand for (empty when none was given)."""
    if not llm_base_url and not llm_model:
        return {}
    return {"llm_base_url": llm_base_url, "llm_model": llm_model, "llm_api_key_env": llm_api_key_env}


def logging_pipeline(
    *,
    policy_path: str | None,
    trace_file: str | None,
    pruner_options: dict[str, Any],
    reranker: str | None = None,
    trace_content: bool = False,
) -> Any:
    """A pipeline whose trace records (request included) go to ``trace_file``, readable by ``admit replay``;
    ``trace_content`` records the question and the prompt in them too."""
    from admit.eval.replay import RequestLog
    from admit.pipeline import Pipeline
    from admit.trace import JsonlSink

    return Pipeline(
        sink=RequestLog(JsonlSink(trace_file), log_requests=True) if trace_file else None,
        policies=policy_path,
        reranker=reranker,
        pruner_options=pruner_options,
        trace_content=trace_content,
        minilm=minilm_config(),
    )
