"""Prometheus metrics of the service, in a per-app registry (no global state shared between apps or tests).

Labels are bounded and never carry tenant content: route templates, methods, status codes, strategy names
and drop reasons only.

``prometheus-client`` (extra ``service``) is optional here: a server that exposes no metrics (``admit mcp``)
runs without it, counting into no-op metrics, and ``/metrics`` says in
one line what to install.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

try:
    from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
except ImportError:  # no metrics to expose: the plain-text line render() returns
    CONTENT_TYPE = "text/plain; charset=utf-8"

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ServiceMetrics:
    """The counters and histograms of one app, in their own :class:`CollectorRegistry`."""

    def __init__(self) -> None:
        """Create the registry and every metric (no-op metrics without ``prometheus-client``)."""
        registry: Any = _NoRegistry
        Counter: Any = _NoMetric  # the class, by the name prometheus_client gives it
        Histogram: Any = _NoMetric
        try:
            import prometheus_client

            registry = prometheus_client.CollectorRegistry
            Counter = prometheus_client.Counter
            Histogram = prometheus_client.Histogram
        except ImportError:
            pass
        self.registry: Any = registry(auto_describe=True)
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
        if isinstance(self.registry, _NoRegistry):
            return b"# no metrics: prometheus-client is not installed (pip install 'admit[service]')\n"
        from prometheus_client import generate_latest

        return bytes(generate_latest(self.registry))


class _NoRegistry:
    """What stands for a registry without ``prometheus-client``."""

    def __init__(self, **_: Any) -> None:
        pass


class _NoMetric:
    """A counter or histogram that counts nothing (``labels(...).inc()`` and ``.observe()`` are accepted)."""

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def labels(self, *_: Any, **__: Any) -> _NoMetric:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass
