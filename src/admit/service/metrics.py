"""Prometheus metrics of the service, in a per-app registry (no global state shared between apps or tests).

Labels are bounded and never carry tenant content: route templates, methods, status codes, strategy names
and drop reasons only.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServiceMetrics:
    """The counters and histograms of one app, in their own :class:`CollectorRegistry`."""

    def __init__(self) -> None:
        """Create the registry and every metric."""
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "admit_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "admit_http_request_duration_seconds",
            "HTTP request latency by route template.",
            ["route"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.tokens_dropped = Counter(
            "admit_tokens_dropped",
            "Tokens of candidates that were not admitted (target model's tokenizer).",
            ["route"],
            registry=r,
        )
        self.tokens_admitted = Counter(
            "admit_tokens_admitted", "Evidence tokens admitted to prompts.", ["route"], registry=r
        )
        self.candidates_dropped = Counter(
            "admit_candidates_dropped", "Candidates dropped, by route and reason.", ["route", "reason"], registry=r
        )
        self.pruner_fallbacks = Counter(
            "admit_pruner_fallbacks",
            "Pruner failures answered with the configured on_error fallback.",
            ["strategy", "action"],
            registry=r,
        )
        self.shadow_runs = Counter(
            "admit_shadow_runs",
            "Shadow-policy packs computed: same admitted set, different, or failed.",
            ["outcome"],
            registry=r,
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of this registry."""
        return generate_latest(self.registry)
