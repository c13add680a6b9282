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
        self.refused = Counter(
            "admit_http_refused",
            "Requests answered 429 by the gate before their body was read, by the bound they met (key, tenant, "
            "server).",
            ["scope"],
            registry=r,
        )
        self.shadow_runs = Counter(
            "admit_shadow_runs",
            "Shadow-policy packs computed: same admitted set, different, or failed.",
            ["outcome"],
            registry=r,
        )

    def watch_pool(self, pool: Any) -> None:
        """Export ``pool``'s state (a :class:`~admit.service.procs.ProcessPool`, read at each scrape through its
        ``snapshot()``): ``admit_pool_workers`` (alive), ``admit_pool_workers_busy``, ``admit_pool_workers_paused``,
        ``admit_pool_queued_jobs{class}``, ``admit_pool_jobs_total{outcome}``, ``admit_pool_jobs_refused_total``,
        ``admit_pool_jobs_retried_total`` and ``admit_pool_workers_replaced_total{cause}``."""
        if isinstance(self.registry, _NoRegistry):
            return
        self.registry.register(_PoolCollector(pool))

    def render(self) -> bytes:
        """The Prometheus text exposition of this registry."""
        if isinstance(self.registry, _NoRegistry):
            return b"# no metrics: prometheus-client is not installed (pip install 'admit[service]')\n"
        from prometheus_client import generate_latest

        return bytes(generate_latest(self.registry))


class _PoolCollector:
    """A prometheus-client collector of a process pool's snapshot: gauges for what is now, counters for what
    the pool has done (its own counts, so a value is never counted twice)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def describe(self) -> list[Any]:
        return list(self._families(None))

    def collect(self) -> list[Any]:
        return list(self._families(self.pool.snapshot()))

    @staticmethod
    def _families(snap: Any) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        def gauge(name: str, doc: str, value: float | None) -> Any:
            g = GaugeMetricFamily(name, doc)
            if value is not None:
                g.add_metric([], value)
            return g

        yield gauge("admit_pool_workers", "Worker processes alive.", snap and snap.workers)
        yield gauge("admit_pool_workers_busy", "Worker processes holding a job.", snap and snap.busy)
        yield gauge(
            "admit_pool_workers_paused", "Worker processes stopped while shorter jobs ran.", snap and snap.paused
        )
        queued = GaugeMetricFamily(
            "admit_pool_queued_jobs",
            "Jobs waiting for a worker process, by class (light: a tenant whose jobs cost under long_cpu_s).",
            labels=["class"],
        )
        jobs = CounterMetricFamily(
            "admit_pool_jobs",
            "Jobs a worker process ended, by outcome: ok, error (the job raised), timed_out (killed at its "
            "deadline), abandoned (killed with its caller), lost (its worker died).",
            labels=["outcome"],
        )
        replaced = CounterMetricFamily(
            "admit_pool_workers_replaced",
            "Worker processes replaced by a fresh fork, by cause: killed (a job's deadline or caller), died.",
            labels=["cause"],
        )
        refused = CounterMetricFamily("admit_pool_jobs_refused", "Jobs refused at once: a queue was full (429).")
        retried = CounterMetricFamily(
            "admit_pool_jobs_retried", "Jobs handed to a fresh worker after theirs was found dead."
        )
        if snap is not None:
            st = snap.stats
            for cls in ("light", "heavy"):
                queued.add_metric([cls], snap.queued.get(cls, 0))
            for outcome, n in (
                ("ok", st.ok),
                ("error", st.errors),
                ("timed_out", st.timed_out),
                ("abandoned", st.abandoned),
                ("lost", st.lost),
            ):
                jobs.add_metric([outcome], n)
            replaced.add_metric(["killed"], st.killed)
            replaced.add_metric(["died"], st.dead)
            refused.add_metric([], st.refused)
            retried.add_metric([], st.retried)
        yield from (queued, jobs, replaced, refused, retried)


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
