"""admit: decide which retrieved evidence a RAG answer gets to see.

Example:
    >>> from admit import Access, Chunk, Principal, pack
    >>> res = pack("What is the default port?",
    ...            [Chunk(id="cfg#port", source_id="cfg", text="The default port is 8080.", access=Access(tenant="t"))],
    ...            principal=Principal(tenant="t"))
    >>> res.admitted_ids
    ['cfg#port']
"""

from __future__ import annotations

import sys as _sys
import types as _types
import typing as _typing

from admit.errors import (
    AdmitError,
    AuthorizationError,
    BackendError,
    BackendTimeout,
    BudgetError,
    ConfigError,
    GraderOutputError,
    MissingExtraError,
    RequestError,
    StoreError,
)
from admit.types import (
    Access,
    AdmittedPassage,
    Budget,
    Chunk,
    Decision,
    Fallback,
    Message,
    PackResult,
    Principal,
    Scored,
    Usage,
)

if _typing.TYPE_CHECKING:
    from admit.pipeline import PackRequest, Pipeline, pack
    from admit.policy import Policy, PolicySet, load_policy_set
    from admit.prune.settings import PruneSettings
    from admit.route import Route

__version__ = "0.1.0"

# the pipeline and the router are imported on first use (PEP 562), so `import admit.cli` for `admit --help`
# does not compile the security patterns, the policy and the pruners
_LAZY = {
    "PackRequest": "admit.pipeline",
    "Pipeline": "admit.pipeline",
    "pack": "admit.pipeline",
    "Policy": "admit.policy",
    "PolicySet": "admit.policy",
    "PruneSettings": "admit.prune.settings",
    "Route": "admit.route",
    "load_policy_set": "admit.policy",
}

__all__ = [
    "Access",
    "AdmitError",
    "AdmittedPassage",
    "AuthorizationError",
    "BackendError",
    "BackendTimeout",
    "Budget",
    "BudgetError",
    "Chunk",
    "ConfigError",
    "Decision",
    "Fallback",
    "GraderOutputError",
    "Message",
    "MissingExtraError",
    "PackRequest",
    "PackResult",
    "Pipeline",
    "Policy",
    "PolicySet",
    "Principal",
    "PruneSettings",
    "RequestError",
    "Route",
    "Scored",
    "StoreError",
    "Usage",
    "__version__",
    "load_policy_set",
    "pack",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'admit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Admit(_types.ModuleType):
    """The ``admit`` module: its lazy names stay what ``__all__`` says. The packing stage's submodule is named
    ``admit/pack.py``; importing it (the pipeline does) made the import system bind ``admit.pack`` to that module,
    so a second ``from admit import pack`` got a module ("'module' object is not callable"). A lazy name is never
    rebound to a submodule here (the submodule stays importable by its path: ``from admit.pack import ...``)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _LAZY and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Admit
