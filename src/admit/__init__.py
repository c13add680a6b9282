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
from admit.pipeline import PackRequest, Pipeline, pack
from admit.policy import Policy, PolicySet, load_policy_set
from admit.prune.settings import PruneSettings
from admit.route import Route
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

__version__ = "0.1.0"

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
