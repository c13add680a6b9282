"""The switches the command line reads from the environment and hands to the library as arguments.

The library reads no ``ADMIT_*`` variable for these: the option's ``envvar`` is the one place the environment
is read (precedence: the option, then the variable, then the library's default), and the value reaches
:class:`~admit.prune.spec.PrunerResources` (``cross``, ``multilingual``) or the
:class:`~admit.pipeline.Pipeline` (``trace_content``). A strategy's switches are not spelled here: each strategy's
spec declares them (:attr:`~admit.prune.spec.StrategySpec.switches`) and :class:`SwitchCommand` makes the options.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from admit.cli._common import llm_options, llm_pruner_options

__all__ = [
    "SwitchCommand",
    "llm_and_setwise_options",
    "strategy_switch_options",
    "switch_pruner_options",
    "trace_content_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def _switch(name: str, var: str, default: bool | None, text: str) -> Callable[[F], F]:
    """``--NAME/--no-NAME`` (dest ``NAME`` with ``_``), also set by ``$VAR`` (``1``/``0``, ``true``/``false`` ...)."""
    flag = name.replace("_", "-")
    return click.option(f"--{flag}/--no-{flag}", name, default=default, envvar=var, help=text)


_SWITCHES = "admit.strategy_switches"
"""Where the switch options put what they read (``ctx.meta``): ``{"setwise_cross": True, ...}``."""


class _SwitchSlot(click.Option):
    """Where a command's strategy switches stand among its options; :class:`SwitchCommand` puts them there."""

    def __init__(self, param_decls: Sequence[str] = (), **attrs: Any) -> None:
        super().__init__(["--strategy-switches"], is_flag=True, expose_value=False, hidden=True)


class SwitchCommand(click.Command):
    """A command with the strategies' switches (:func:`strategy_switch_options`): one
    ``--NAME-RESOURCE/--no-NAME-RESOURCE`` option per :class:`~admit.prune.spec.Switch` a strategy's spec declares
    (``--setwise-cross``), also set by ``$ADMIT_NAME_RESOURCE``, a plug-in's among them.

    The options are made the first time the command's options are read (parsing it, its ``--help``), from
    :func:`~admit.prune.catalogue.declared_switches`, which reads the specs' sources: ``admit --help`` reads no
    spec, and ``admit search --help`` loads no strategy (numpy).
    """

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The options, the switches in their slot."""
        for i, param in enumerate(self.params):
            if isinstance(param, _SwitchSlot):
                self.params[i : i + 1] = _switch_options()
        return super().get_params(ctx)


def _switch_options() -> list[click.Parameter]:
    from admit.prune.catalogue import declared_switches

    return [
        click.Option(
            [sw.option(strategy), key],
            default=None,
            envvar=sw.env(strategy),
            help=sw.help,
            expose_value=False,
            callback=_remember_switch,
        )
        for key, (strategy, sw) in declared_switches().items()
    ]


def _remember_switch(ctx: click.Context, param: click.Parameter, value: bool | None) -> bool | None:
    if param.name is not None:
        ctx.meta.setdefault(_SWITCHES, {})[param.name] = value
    return value


def strategy_switch_options() -> Callable[[F], F]:
    """The strategies' switches (``--setwise-cross/--no-setwise-cross``, ``--setwise-multilingual/--no-...``), at
    this place among the command's options; the command is a :class:`SwitchCommand`
    (``@click.command(cls=SwitchCommand)``) and reads them with :func:`switch_pruner_options`."""
    return click.option(cls=_SwitchSlot)  # no declarations: the slot names itself


def switch_pruner_options() -> dict[str, Any]:
    """The pruner resources the switch options of the running command stand for (empty when none was given).

    ``multilingual`` on means "when installed", as ``ADMIT_SETWISE_MULTILINGUAL=1`` always has.
    """
    from admit.prune.catalogue import switch_resources

    given: dict[str, bool | None] = click.get_current_context().meta.get(_SWITCHES, {})
    return switch_resources(given) if any(v is not None for v in given.values()) else {}


def llm_and_setwise_options() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--llm-*`` (:func:`~admit.cli._common.llm_options`) options and the strategies' switches
    (:func:`strategy_switch_options`), handed to the command as one argument, ``pruner_options``: the pruner
    options they stand for (:func:`~admit.cli._common.llm_pruner_options` and :func:`switch_pruner_options`; empty
    when none was given). The command is a :class:`SwitchCommand`."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def command(
            *args: Any, llm_base_url: str | None, llm_model: str | None, llm_api_key_env: str, **kwargs: Any
        ) -> Any:
            opts = {**llm_pruner_options(llm_base_url, llm_model, llm_api_key_env), **switch_pruner_options()}
            return fn(*args, pruner_options=opts, **kwargs)

        return llm_options()(strategy_switch_options()(command))

    return deco


def trace_content_option() -> Callable[[F], F]:
    """``--trace-content/--no-trace-content`` (dest ``trace_content``, default off)."""
    return _switch(
        "trace_content",
        "ADMIT_TRACE_CONTENT",
        False,
        "Record the question and the prompt in the trace records (default: off; they hold no text).",
    )
