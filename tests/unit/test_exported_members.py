"""The package face: ``admit.__all__`` is exactly the curated list, and nothing else public hangs off ``admit``."""

import __future__

import types

import admit

CURATED = {
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
    "load_policy_set",
    "pack",
}


def test_public_api_is_exactly_the_curated_list():
    assert set(admit.__all__) - {"__version__"} == CURATED
    assert len(admit.__all__) == len(set(admit.__all__))  # no name listed twice
    # every other public attribute is a subpackage/submodule (imported as a side effect) or the __future__ flag
    extra = {
        n
        for n in dir(admit)
        if not n.startswith("_")
        and n not in CURATED
        and not isinstance(getattr(admit, n), types.ModuleType)
        and not isinstance(getattr(admit, n), __future__._Feature)
    }
    assert extra == set()
    for name in CURATED:
        assert getattr(admit, name) is not None
