"""The transport-free parts of the service: principal resolution for MCP, bounded labels, validation messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("fastapi")

from admit.errors import ConfigError, LimitExceeded, RequestError
from admit.service.config import ServiceSettings, settings_from_dict
from admit.service.gate import method_label, status_label
from admit.service.http import validation_message
from admit.service.limits import check_search_limits
from admit.service.schemas import SearchBody
from admit.types import Principal


@dataclass
class _Source:
    tenant: str


class _KB:
    def __init__(self, *tenants: str) -> None:
        self.tenants = tenants

    def retrieve(self, *a: Any, **k: Any) -> list[Any]:
        return []

    def sources(self) -> list[_Source]:
        return [_Source(t) for t in self.tenants]


def test_mcp_principal_flag_then_config_then_the_kbs_only_tenant() -> None:
    from admit.service.mcp import resolve_mcp_principal

    cfg = settings_from_dict({"service": {"mcp": {"tenant": "acme", "groups": ["support"]}}})
    flag = Principal(tenant="globex")
    assert resolve_mcp_principal(cfg, _KB("x", "y"), flag) == flag
    assert resolve_mcp_principal(cfg, _KB("x", "y")) == Principal(tenant="acme", groups=("support",))
    assert resolve_mcp_principal(ServiceSettings(), _KB("me", "me")) == Principal(tenant="me")
    assert resolve_mcp_principal(ServiceSettings(), _KB()) is None
    assert resolve_mcp_principal(ServiceSettings(), None) is None
    with pytest.raises(ConfigError, match=r"2 tenants \(acme, globex\).*--principal"):
        resolve_mcp_principal(ServiceSettings(), _KB("globex", "acme"))


@pytest.mark.parametrize(
    ("method", "label"), [("GET", "GET"), ("post", "POST"), ("XYZ123", "other"), ("", "other"), (None, "other")]
)
def test_method_labels_are_bounded(method: Any, label: str) -> None:
    assert method_label(method) == label


def test_status_labels_are_bounded() -> None:
    assert status_label(404) == "404"
    assert status_label(1000) == "other"


def test_validation_message_puts_the_unknown_field_first() -> None:
    errors = [
        {"type": "missing", "loc": ("body", "question"), "msg": "Field required"},
        {"type": "extra_forbidden", "loc": ("body", "qestion"), "msg": "Extra inputs are not permitted"},
    ]
    msg, field = validation_message(errors, SearchBody)
    assert field == "qestion"
    assert msg == (
        "qestion: unknown field (did you mean 'question'?); the body takes question, top_k, prune, policy, model, "
        "input_limit, tool_outputs (also question: Field required)"
    )


def test_search_limits() -> None:
    limits = ServiceSettings().limits
    with pytest.raises(LimitExceeded, match="max_top_k=100") as e:
        check_search_limits("q", 101, limits)
    assert e.value.field == "top_k"
    assert isinstance(e.value, RequestError)  # in the error tree: a caller mistake
    with pytest.raises(RequestError, match="blank"):
        check_search_limits(" \t", 5, limits)
