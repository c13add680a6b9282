"""The batch function and the engines that run it: in process, in local worker processes, or on Ray Data.

:func:`run_tasks` is the one batch function: it takes label-free tasks (a record's id, question and
candidates, its cached reranker scores if any, and the configurations still to compute) and returns
reranker scores and pruning outcomes. It never sees ``required`` or ``answers``. Every engine runs that same
function; they differ only in where.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from admit._ray import import_ray, start_ray
from admit.backends.embedders.defaults import EncoderConfig
from admit.errors import ConfigError
from admit.eval.dataset import PruneInput
from admit.prune.base import PruneOutcome
from admit.prune.settings import SETTING_KEYS, PruneSettings
from admit.rerank import rank_order

__all__ = [
    "Engine",
    "LocalEngine",
    "RayEngine",
    "RunSpec",
    "Task",
    "TimedEmbedder",
    "make_engine",
    "rank_order",
    "run_tasks",
    "settings_for",
    "worker_spec",
]

logger = logging.getLogger(__name__)

_REASON_CHARS = 240


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    """Everything a worker needs to build the reranker and the pruners (JSON-serialisable)."""

    reranker: str = "dense"
    """Reranker name in the catalogue (:mod:`admit.backends.rerankers.catalogue`)."""
    embedder: str = "minilm"
    """Embedder shared by a dense reranker and the setwise pruner."""
    pruner_options: Mapping[str, Any] = field(default_factory=dict)
    """The flat spelling of :class:`~admit.prune.spec.PrunerResources` (``llm_base_url``, ``llm_model``, ...);
    the worker adds its shared embedder."""
    torch_threads: int | None = None
    """Torch threads per worker (default: cores / workers)."""
    minilm: EncoderConfig | None = None
    """The MiniLM folder, threads and encoder the worker's embedder is made with (``admit --minilm-dir``,
    ``--embed-threads``, ``--encoder``): they travel with the work, so a worker process (local or Ray) sets nothing
    process-wide and two runs in one process keep theirs (``None``: the worker process's fallback)."""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        d = asdict(self)
        d["minilm"] = self.minilm.to_json() if self.minilm is not None else None
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunSpec:
        """Inverse of :meth:`to_json`."""
        minilm = d.get("minilm")
        return cls(**{**d, "minilm": EncoderConfig.from_json(minilm) if minilm is not None else None})


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One record's work: the label-free input, its cached scores, and the configurations to grade."""

    input: PruneInput
    """Id, question, candidates."""
    scores: tuple[float, ...] | None = None
    """Cached reranker scores, in candidate order (``None``: compute them)."""
    jobs: tuple[tuple[str, str, Mapping[str, Any]], ...] = ()
    """``(cache key, strategy, parameters)`` to compute."""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "input": self.input.to_json(),
            "scores": list(self.scores) if self.scores is not None else None,
            "jobs": [[k, s, dict(p)] for k, s, p in self.jobs],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Task:
        """Inverse of :meth:`to_json`."""
        return cls(
            input=PruneInput.from_json(d["input"]),
            scores=tuple(d["scores"]) if d.get("scores") is not None else None,
            jobs=tuple((k, s, p) for k, s, p in d["jobs"]),
        )


def settings_for(params: Mapping[str, Any], strategy: str = "") -> PruneSettings:
    """Split a flat parameter dict into :class:`PruneSettings` fields and strategy ``params``, checked there
    (for a shipped ``strategy``, a key it does not read is an error; without one, only the fields are checked)."""
    if not strategy:
        fields = {k: v for k, v in params.items() if k in SETTING_KEYS}
        rest = {k: v for k, v in params.items() if k not in SETTING_KEYS}
        return PruneSettings(strategy="custom", params=rest).with_overrides(fields)
    return PruneSettings(strategy=strategy).with_overrides(params)


def worker_spec(spec: RunSpec, threads: int) -> RunSpec:
    """``spec`` as a worker process of a pool gets it: its MiniLM threads are ``threads`` (the cores / workers, or
    ``torch_threads``), the folder and the encoder the parent's."""
    from dataclasses import replace

    return replace(spec, minilm=replace(spec.minilm or EncoderConfig(), threads=threads))


# ---------------------------------------------------------------------------------------------- worker side


class TimedEmbedder:
    """Counts the seconds spent computing embeddings (cache misses only, below a CachedEmbedder)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.seconds = 0.0
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        warm = getattr(self.inner, "warm_up", None)
        if callable(warm):
            warm()

    def embed(self, texts: Sequence[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            with self._lock:
                self.seconds += time.perf_counter() - t0


class _Worker:
    """Builds (once per process) and holds the reranker, the shared embedder and the pruners."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self._embedder: Any = None
        self._timed: TimedEmbedder | None = None
        self._reranker: Any = None
        self._pruners: dict[str, Any] = {}

    def embedder(self) -> Any:
        if self._embedder is None:
            from admit.backends.embedders import CachedEmbedder, resolve_embedder

            self._timed = TimedEmbedder(resolve_embedder(self.spec.embedder, config=self.spec.minilm))
            self._embedder = CachedEmbedder(self._timed, max_items=20_000)
        return self._embedder

    @property
    def encode_seconds(self) -> float:
        return self._timed.seconds if self._timed is not None else 0.0

    def reranker(self) -> Any:
        if self._reranker is None:
            from admit.backends.rerankers import RERANKERS

            spec = RERANKERS.get(self.spec.reranker)
            self._reranker = spec.make(self.embedder()) if spec.needs_embedder else spec.make()
        return self._reranker

    def pruner(self, strategy: str) -> Any:
        if strategy not in self._pruners:
            from dataclasses import replace

            from admit.prune import PrunerResources, get_strategy

            res = PrunerResources.from_options(self.spec.pruner_options)
            if res.embedder is None:
                res = replace(res, embedder=self.embedder())
            self._pruners[strategy] = get_strategy(strategy).build(res)
        return self._pruners[strategy]

    def run(self, task: Task) -> dict[str, Any]:
        from admit.pipeline import prune_candidates

        inp = task.input
        out: dict[str, Any] = {"record_id": inp.id, "outcomes": {}}
        if task.scores is None:
            t0 = time.perf_counter()
            scores = [float(s) for s in self.reranker().score(inp.question, inp.candidates)] if inp.candidates else []
            out["scores"] = scores
            out["rerank_s"] = time.perf_counter() - t0
        else:
            scores = list(task.scores)
        for key, strategy, params in task.jobs:
            settings = settings_for(params, strategy)
            pruner = self.pruner(strategy)
            enc0 = self.encode_seconds
            t0 = time.perf_counter()
            run = prune_candidates(
                inp.question, inp.candidates, settings=settings, reranker=None, pruner=pruner, scores=scores
            )
            dt = time.perf_counter() - t0
            out["outcomes"][key] = _outcome_json(run.outcome, strategy, dt, self.encode_seconds - enc0)
            if run.answer is not None:  # the answerability stage's record (the pipeline's check), for the report
                out["outcomes"][key].update(
                    answerable=run.answer.answerable,
                    answerability=run.answer.probability,
                    answer_state=run.answer.state,
                )
        return out


def _outcome_json(outcome: PruneOutcome | None, strategy: str, latency_s: float, encode_s: float) -> dict[str, Any]:
    outcome = outcome or PruneOutcome(strategy=strategy, graded=())
    u = outcome.usage
    return {
        "grades": {g.chunk_id: g.grade for g in outcome.graded},
        "kept": outcome.kept_ids,
        "reasons": {g.chunk_id: g.reason[:_REASON_CHARS] for g in outcome.graded},
        "latency_s": latency_s,
        "encode_s": encode_s,
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "calls": u.calls,
        "cost_usd": u.cost_usd,
        "fallback": outcome.fallback,
        "error": outcome.error,
    }


_WORKERS: dict[str, _Worker] = {}
_WLOCK = threading.Lock()


def _worker_for(spec: RunSpec) -> _Worker:
    key = json.dumps(spec.to_json(), sort_keys=True, default=str)
    with _WLOCK:
        if key not in _WORKERS:
            _WORKERS[key] = _Worker(spec)
        return _WORKERS[key]


def run_tasks(tasks: Sequence[Task], spec: RunSpec) -> list[dict[str, Any]]:
    """The batch function: compute reranker scores (when missing) and every job of every task.

    Returns one dict per task: ``record_id``, ``scores``/``rerank_s`` (when computed) and ``outcomes``
    (cache key -> kept ids, grades, reasons, usage, latency, fallback).
    """
    worker = _worker_for(spec)
    return [worker.run(t) for t in tasks]


def _run_json(payloads: Sequence[str], spec_json: str) -> list[str]:
    spec = RunSpec.from_json(json.loads(spec_json))
    return [json.dumps(r) for r in run_tasks([Task.from_json(json.loads(p)) for p in payloads], spec)]


def _init_worker(threads: int | None) -> None:  # pragma: no cover - runs in child processes
    # the MiniLM configuration travels in the RunSpec; the thread count also reaches the libraries that read it
    if threads:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))


# ---------------------------------------------------------------------------------------------- engines


class Engine(Protocol):
    """Runs the batch function over tasks and yields the results batch by batch, as batches finish."""

    name: str

    def run(self, tasks: Sequence[Task], spec: RunSpec) -> Iterator[list[dict[str, Any]]]:
        """Yield the results batch by batch (any order)."""
        ...


def _batches(tasks: Sequence[Task], size: int) -> list[list[Task]]:
    return [list(tasks[i : i + size]) for i in range(0, len(tasks), max(size, 1))]


class LocalEngine:
    """In this process (``workers=1``) or in a pool of local worker processes."""

    name = "local"

    def __init__(self, workers: int = 1, batch_size: int = 4) -> None:
        """Create the engine."""
        if workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {workers}.")
        self.workers = workers
        self.batch_size = batch_size

    def run(self, tasks: Sequence[Task], spec: RunSpec) -> Iterator[list[dict[str, Any]]]:
        """Yield results batch by batch."""
        if not tasks:
            return
        if self.workers == 1:
            for batch in _batches(tasks, 1):
                yield run_tasks(batch, spec)
            return
        import multiprocessing

        threads = spec.torch_threads or max(1, (os.cpu_count() or 1) // self.workers)
        spec_json = json.dumps(worker_spec(spec, threads).to_json())
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_worker, initargs=(threads,)) as ex:
            pending: set[Future[list[str]]] = {
                ex.submit(_run_json, [json.dumps(t.to_json()) for t in b], spec_json)
                for b in _batches(tasks, self.batch_size)
            }
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield [json.loads(r) for r in fut.result()]


def _ray_batch(batch: Mapping[str, Any], spec_json: str) -> dict[str, list[str]]:  # pragma: no cover - in Ray
    return {"result": _run_json([str(x) for x in batch["task"]], spec_json)}  # the MiniLM configuration in it


class RayEngine:
    """Ray Data: the same batch function through ``map_batches`` (extra ``admit[ray]``).

    Starts a local Ray instance (``num_cpus``, no dashboard) unless one is already initialised or
    ``address`` names a cluster.
    """

    name = "ray"

    def __init__(self, *, num_cpus: int | None = 2, address: str | None = None, batch_size: int = 4) -> None:
        """Create the engine."""
        import_ray()
        self.num_cpus = num_cpus
        self.address = address
        self.batch_size = batch_size

    def run(self, tasks: Sequence[Task], spec: RunSpec) -> Iterator[list[dict[str, Any]]]:
        """Yield results batch by batch."""
        if not tasks:
            return
        ray = import_ray()
        start_ray(ray, address=self.address, num_cpus=self.num_cpus)
        ds = ray.data.from_items([{"task": json.dumps(t.to_json())} for t in tasks])
        spec_json = json.dumps(spec.to_json(), default=str)
        out = ds.map_batches(
            _ray_batch,  # type: ignore[arg-type, unused-ignore]  # Any without ray installed
            batch_size=self.batch_size,
            fn_kwargs={"spec_json": spec_json},
        )
        buf: list[dict[str, Any]] = []
        for row in out.iter_rows():
            buf.append(json.loads(row["result"]))
            if len(buf) >= self.batch_size:
                yield buf
                buf = []
        if buf:
            yield buf


def make_engine(name: str, *, workers: int = 1, batch_size: int = 4) -> Engine:
    """``local`` (with ``workers`` processes) or ``ray``."""
    if name == "local":
        return LocalEngine(workers=workers, batch_size=batch_size)
    if name == "ray":
        return RayEngine(num_cpus=max(workers, 1), batch_size=batch_size)
    raise ConfigError(f"Unknown engine {name!r}; known: local, ray.")
