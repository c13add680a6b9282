"""Sweeps: a grid of pruner configurations over labelled data, cached, with per-configuration metrics.

:func:`run_eval` is the driver. It reranks every record once (cached), grades each record once per
*grading key* (for a strategy whose spec sets ``regrade_from_grades`` the threshold and
keep_top_k are applied by the harness, so a threshold sweep costs one grading), reads what it can from the
cache, ships the rest to an engine, and joins the outcomes with the labels to compute the metrics.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from admit.backends.embedders.defaults import EncoderConfig, minilm_defaults
from admit.backends.rerankers import RERANKERS, SCORING_RERANKER
from admit.errors import ConfigError
from admit.eval.cache import EvalCache, outcome_key, record_digest, score_key, token_key
from admit.eval.dataset import EvalRecord
from admit.eval.engine import Engine, LocalEngine, RunSpec, Task, rank_order
from admit.eval.metrics import CostRates, QuestionResult, breakdowns, percentile
from admit.policy import load_policy_set
from admit.prune import PrunerResources, find_strategy, get_strategy, strategy_names, strategy_specs
from admit.prune.base import PruneOutcome, apply_threshold, fallback_outcome
from admit.prune.settings import SETTING_KEYS, PruneSettings
from admit.types import Scored, Usage

__all__ = [
    "Config",
    "EvalOptions",
    "EvalRun",
    "expand_grid",
    "parse_assignments",
    "parse_sweep",
    "run_eval",
]

logger = logging.getLogger(__name__)


def is_baseline(strategy: str) -> bool:
    """Whether ``strategy``'s spec declares it a baseline (``top_n``, ``score_threshold``)."""
    spec = find_strategy(strategy)
    return spec is not None and spec.baseline


def _regrades(strategy: str) -> bool:
    spec = find_strategy(strategy)
    return spec is not None and spec.regrade_from_grades


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """One point of a sweep: a strategy and its flat parameters."""

    strategy: str
    """Strategy name."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Flat parameters: ``threshold``, ``keep_top_k``, ``on_error`` and the strategy's own."""

    @property
    def name(self) -> str:
        """``strategy k=v k=v`` (sorted keys)."""
        if not self.params:
            return self.strategy
        return self.strategy + " " + " ".join(f"{k}={_fmt(v)}" for k, v in sorted(self.params.items()))

    def grading_params(self) -> dict[str, Any]:
        """The parameters that change grades (threshold/keep_top_k dropped for grade-only strategies)."""
        if _regrades(self.strategy):
            return {k: v for k, v in sorted(self.params.items()) if k not in ("threshold", "keep_top_k")}
        return dict(sorted(self.params.items()))

    def settings(self) -> PruneSettings:
        """The pruner settings of this configuration."""
        from admit.eval.engine import settings_for

        return settings_for(self.params, self.strategy)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def _parse_value(raw: str) -> Any:
    s = raw.strip()
    low = s.lower()
    if low in {"true", "yes", "on"}:
        return True
    if low in {"false", "no", "off"}:
        return False
    if low in {"none", "null"}:
        return None
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return s


def parse_sweep(specs: Sequence[str]) -> dict[str, list[Any]]:
    """Parse ``key=v1,v2,...`` items into ``{key: [values]}`` (numbers and booleans typed).

    Example:
        >>> parse_sweep(["threshold=2,3", "keep_top_k=1"])
        {'threshold': [2, 3], 'keep_top_k': [1]}
    """
    out: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, vals = spec.partition("=")
        key = key.strip()
        if not sep or not key or not vals.strip():
            raise ConfigError(f"--sweep {spec!r}: expected key=v1,v2,... (e.g. threshold=2,3,4).")
        values = [_parse_value(v) for v in vals.split(",") if v.strip()]
        out.setdefault(key, [])
        out[key].extend(v for v in values if v not in out[key])
    return out


def parse_assignments(specs: Sequence[str]) -> dict[str, Any]:
    """Parse ``key=value`` items (fixed parameters)."""
    out: dict[str, Any] = {}
    for spec in specs:
        key, sep, val = spec.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param {spec!r}: expected key=value.")
        out[key.strip()] = _parse_value(val)
    return out


def expand_grid(
    strategy: str, sweep: Mapping[str, Sequence[Any]], fixed: Mapping[str, Any] | None = None
) -> list[Config]:
    """The cartesian product of ``sweep`` values, each merged over ``fixed``."""
    if find_strategy(strategy) is None:
        raise ConfigError(f"Unknown strategy {strategy!r}; known: {', '.join(strategy_names())}, all.")
    fixed = dict(fixed or {})
    if not sweep:
        return [Config(strategy=strategy, params=fixed)]
    keys = list(sweep)
    out = []
    for combo in itertools.product(*(sweep[k] for k in keys)):
        out.append(Config(strategy=strategy, params={**fixed, **dict(zip(keys, combo, strict=True))}))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalOptions:
    """How to run an evaluation."""

    reranker: str = SCORING_RERANKER
    """Reranker producing the scores the pruners see (one that cannot run here gives way to its spec's
    ``fallback``: ``dense`` to ``bm25``)."""
    embedder: str = "minilm"
    """Embedder of the dense reranker and the setwise pruner."""
    minilm: EncoderConfig | None = None
    """Its MiniLM folder, threads and encoder, handed to every worker with the work (``None``: this process's
    fallback, :func:`~admit.backends.embedders.defaults.minilm_defaults`, read when the run starts)."""
    generator_model: str = "gpt-4o"
    """Tokenizer for token compression and savings."""
    prices: CostRates = field(default_factory=CostRates)
    """The price table."""
    cache: str | Path | None = None
    """Cache folder or file (``None``: in memory, nothing kept)."""
    pruner_options: Mapping[str, Any] = field(default_factory=dict)
    """Options for LLM strategies (``llm_base_url``, ``llm_model``)."""
    policy: str | Path | None = None
    """Policy file used to classify questions (default: the shipped one)."""


@dataclass(slots=True, kw_only=True)
class EvalRun:
    """What :func:`run_eval` returns."""

    records: list[EvalRecord]
    """The records evaluated."""
    configs: list[Config]
    """The configurations, in order."""
    results: dict[str, list[QuestionResult]]
    """Per configuration name, one result per record (records' order)."""
    metrics: dict[str, dict[str, Any]]
    """Per configuration name, :func:`~admit.eval.metrics.breakdowns`."""
    scores: dict[str, list[float]]
    """Reranker scores per record id (candidate order)."""
    reasons: dict[str, dict[str, dict[str, str]]]
    """Per configuration name, per record id: the pruner's reason per candidate."""
    reranker: str
    """The reranker actually used."""
    options: EvalOptions
    """The options."""
    computed: int = 0
    """Gradings computed in this run."""
    cached: int = 0
    """Gradings served from the cache."""
    scores_computed: int = 0
    """Records reranked in this run."""
    seconds: float = 0.0
    """Wall time."""
    notes: list[str] = field(default_factory=list)
    """Things the user should know (fallbacks, skipped strategies)."""

    def entries(self) -> list[dict[str, Any]]:
        """One JSON entry per configuration: name, strategy, parameters and all metrics."""
        return [
            {"name": c.name, "strategy": c.strategy, "params": dict(c.params), "metrics": self.metrics[c.name]}
            for c in self.configs
        ]

    def to_json(self) -> dict[str, Any]:
        """The ``metrics.json`` document."""
        return {
            "schema": "admit-eval-metrics/1",
            "datasets": sorted({r.source for r in self.records}),
            "questions": len(self.records),
            "reranker": self.reranker,
            "generator_model": self.options.generator_model,
            "prices": self.options.prices.as_dict(),
            "computed": self.computed,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
            "configs": self.entries(),
        }


def effective_reranker(name: str) -> tuple[str, str | None]:
    """The reranker to use (its catalogue name) and a note when it cannot run here and its spec's ``fallback``
    is used instead.

    Raises:
        ConfigError: No reranker has that name (the message lists the known ones).
    """
    spec = RERANKERS.get(name)
    why = spec.unavailable()
    if why and spec.fallback:
        return spec.fallback, f"reranker {name!r} unavailable ({why}); using {spec.fallback}"
    return spec.name, None


def source_digest(modules: Sequence[str], files: Sequence[Path] = ()) -> str:
    """SHA-1 (16 hex) of the source of ``modules`` and of ``files``: cache keys change when the code does."""
    h = hashlib.sha1()
    for m in modules:
        try:
            spec = importlib.util.find_spec(m)
        except ImportError:
            spec = None
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        h.update(origin.read_bytes() if origin is not None and origin.is_file() else m.encode())
    for f in files:
        if f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def reranker_identity(name: str, embedder: str) -> str:
    """What decides a reranker's scores (its spec's identity): its name, its code, its model files and (when it
    reads one) the embedding model."""
    return RERANKERS.get(name).identity(embedder, source_digest)


def pruner_identity(strategy: str, options: EvalOptions) -> str:
    """What besides the parameters decides a strategy's grades: its code (the spec's source modules), and what
    its spec's ``identity`` names (a model file's digest, the embedder, the LLM model, the prompt version)."""
    from admit import __version__

    spec = get_strategy(strategy)
    parts = [strategy, __version__]
    if spec.identity is not None:
        parts.extend(spec.identity(_resources(options)))
    parts.append(source_digest(["admit.prune.base", *spec.source_modules]))
    return ":".join(parts)


def _resources(options: EvalOptions) -> PrunerResources:
    from dataclasses import replace

    res = PrunerResources.from_options(options.pruner_options)
    return res if res.embedder is not None else replace(res, embedder=options.embedder)


def _kept_from_grades(
    strategy: str, ranked: Sequence[Scored], outcome: Mapping[str, Any], settings: PruneSettings
) -> PruneOutcome:
    if outcome.get("fallback"):
        return fallback_outcome(strategy, ranked, settings, str(outcome.get("error") or ""))
    grades = [int(outcome["grades"][s.chunk.id]) for s in ranked]
    spec = find_strategy(strategy)
    unrelated = [g == 1 for g in grades] if spec is not None and not spec.top_k_keeps_unrelated else None
    return apply_threshold(strategy, ranked, grades, settings, unrelated=unrelated)


ProgressFn = Callable[[int, int], None]


def _run_tasks(
    batches: Iterable[Sequence[dict[str, Any]]],
    skey_of: dict[str, str],
    scores_by_key: dict[str, Any],
    outcomes: dict[str, Any],
    cache: EvalCache,
    progress: ProgressFn | None,
    done: int,
    total: int,
) -> tuple[int, int]:
    """Run the engine's batches: their scores and outcomes into the maps and the cache, progress as they come.
    Returns (outcomes computed, records scored)."""
    n_computed = 0
    n_scored = 0
    for batch in batches:
        new_scores: dict[str, Any] = {}
        new_out: dict[str, Any] = {}
        for res in batch:
            if "scores" in res:
                sk = skey_of[res["record_id"]]
                new_scores[sk] = {"scores": res["scores"], "rerank_s": res.get("rerank_s", 0.0)}
                scores_by_key[sk] = new_scores[sk]
                n_scored += 1
            new_out.update(res["outcomes"])
            n_computed += len(res["outcomes"])
        outcomes.update(new_out)
        cache.put_many("scores", new_scores)
        cache.put_many("outcomes", new_out)
        done += len(batch)
        if progress:
            progress(done, total)
    return n_computed, n_scored


def _ranked(
    records: Sequence[EvalRecord], skeys: Sequence[str], scores_by_key: Mapping[str, Any]
) -> tuple[dict[str, list[float]], dict[str, list[Scored]]]:
    """Each record's reranker scores and its candidates in their order."""
    scores: dict[str, list[float]] = {}
    ranked_by_record: dict[str, list[Scored]] = {}
    for r, sk in zip(records, skeys, strict=True):
        rec_scores = [float(x) for x in scores_by_key[sk]["scores"]]
        scores[r.id] = rec_scores
        ranked_by_record[r.id] = [
            Scored(chunk=r.candidates[i], score=rec_scores[i], rank=k) for k, i in enumerate(rank_order(rec_scores))
        ]
    return scores, ranked_by_record


def _grading_jobs(
    digests: Sequence[str], configs: Sequence[Config], rid: str, options: EvalOptions
) -> tuple[dict[str, list[str]], list[dict[str, tuple[str, dict[str, Any]]]]]:
    """The grading key of every (record, config): the keys by config name, and each record's jobs by key."""
    gkeys: dict[str, list[str]] = {}
    jobs_by_record: list[dict[str, tuple[str, dict[str, Any]]]] = []
    ident = {c.strategy: pruner_identity(c.strategy, options) for c in configs}
    for d in digests:
        jobs: dict[str, tuple[str, dict[str, Any]]] = {}
        for c in configs:
            gp = c.grading_params()
            k = outcome_key(d, strategy=c.strategy, params=gp, reranker=rid, pruner_id=ident[c.strategy])
            jobs[k] = (c.strategy, gp)
            gkeys.setdefault(c.name, []).append(k)
        jobs_by_record.append(jobs)
    return gkeys, jobs_by_record


def _question_result(
    c: Config,
    settings: PruneSettings,
    r: EvalRecord,
    o: dict[str, Any],
    ranked: list[Scored],
    token_counts: Mapping[str, Mapping[str, int]],
    qclass: Mapping[str, str],
) -> tuple[QuestionResult, dict[str, str]]:
    """One record's row under one config (joined with its labels), and the reasons by chunk id."""
    if _regrades(c.strategy):
        po = _kept_from_grades(c.strategy, ranked, o, settings)
        kept = tuple(po.kept_ids)
        why = {g.chunk_id: g.reason for g in po.graded}
    else:
        kept = tuple(o["kept"])
        why = dict(o.get("reasons", {}))
    row = QuestionResult(
        record_id=r.id,
        candidate_ids=tuple(ch.id for ch in r.candidates),
        kept_ids=kept,
        required=r.required,
        candidate_tokens=token_counts[r.id],
        source=r.source,
        hop_type=r.hop_type,
        question_type=r.question_type,
        query_class=qclass[r.id],
        latency_s=float(o.get("latency_s", 0.0)),
        usage=Usage(
            prompt_tokens=int(o.get("prompt_tokens", 0)),
            completion_tokens=int(o.get("completion_tokens", 0)),
            calls=int(o.get("calls", 0)),
            cost_usd=float(o.get("cost_usd", 0.0)),
        ),
        error=o.get("error"),
        grades={k: int(v) for k, v in o.get("grades", {}).items()},
        answer_state=o.get("answer_state"),
    )
    return row, why


def run_eval(
    records: Sequence[EvalRecord],
    configs: Sequence[Config],
    options: EvalOptions | None = None,
    *,
    engine: Engine | None = None,
    progress: ProgressFn | None = None,
) -> EvalRun:
    """Evaluate every configuration on every record.

    Args:
        records: Labelled records (ids unique).
        configs: Configurations (names unique).
        options: Reranker, tokenizer, prices, cache, pruner options.
        engine: Where the batch function runs (default: in this process).
        progress: Called with ``(done, total)`` records as work finishes.
    """
    t_start = time.perf_counter()
    options = options or EvalOptions()
    engine = engine or LocalEngine()
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ConfigError("Two configurations have the same name; remove the duplicate sweep values.")
    notes: list[str] = []
    reranker, note = effective_reranker(options.reranker)
    if note:
        notes.append(note)
        logger.warning(note)
    cache = EvalCache(options.cache)
    try:
        inputs = [r.prune_input() for r in records]
        digests = [record_digest(i) for i in inputs]
        rid = reranker_identity(reranker, options.embedder)
        skeys = [score_key(d, rid) for d in digests]
        scores_by_key = cache.get_many("scores", skeys)
        gkeys, jobs_by_record = _grading_jobs(digests, configs, rid, options)
        all_keys = [k for jobs in jobs_by_record for k in jobs]
        # an outcome assessed before the verdict was stored (answerable true for "unsure" too) is computed again
        stored = cache.get_many("outcomes", all_keys)
        outcomes = {k: o for k, o in stored.items() if "answerable" not in o or "answer_state" in o}
        n_cached = len(set(all_keys) & set(outcomes))
        tasks: list[Task] = []
        for inp, skey, jobs in zip(inputs, skeys, jobs_by_record, strict=True):
            missing = tuple((k, s, p) for k, (s, p) in jobs.items() if k not in outcomes)
            cached_scores = scores_by_key.get(skey)
            if missing or cached_scores is None:
                sc = tuple(cached_scores["scores"]) if cached_scores is not None else None
                tasks.append(Task(input=inp, scores=sc, jobs=missing))
        spec = RunSpec(
            reranker=reranker,
            embedder=options.embedder,
            pruner_options=dict(options.pruner_options),
            minilm=options.minilm if options.minilm is not None else minilm_defaults(),
        )
        done = len(records) - len(tasks)
        if progress:
            progress(done, len(records))
        skey_of = dict(zip((i.id for i in inputs), skeys, strict=True))
        n_computed, n_scored = _run_tasks(
            engine.run(tasks, spec), skey_of, scores_by_key, outcomes, cache, progress, done, len(records)
        )
        token_counts = _token_counts(records, digests, options.generator_model, cache)
    finally:
        cache.close()
    # ---- join with labels (the only place `required` is read)
    policies = load_policy_set(options.policy)

    qclass = {r.id: policies.classify(r.question).query_class for r in records}
    scores, ranked_by_record = _ranked(records, skeys, scores_by_key)
    rerank_ms = [float(scores_by_key[sk].get("rerank_s", 0.0)) * 1000 for sk in skeys]
    results: dict[str, list[QuestionResult]] = {}
    reasons: dict[str, dict[str, dict[str, str]]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for c in configs:
        settings = c.settings()
        rows: list[QuestionResult] = []
        why: dict[str, dict[str, str]] = {}
        for r, key in zip(records, gkeys[c.name], strict=True):
            row, why[r.id] = _question_result(
                c, settings, r, outcomes[key], ranked_by_record[r.id], token_counts, qclass
            )
            rows.append(row)
        results[c.name] = rows
        reasons[c.name] = why
        metrics[c.name] = breakdowns(rows, options.prices)
        enc = [float(outcomes[k].get("encode_s", 0.0)) for k in set(gkeys[c.name])]
        overall = metrics[c.name]["overall"]
        overall["encode_s_total"] = sum(enc)
        overall["rerank_ms_p50"] = percentile(rerank_ms, 50)
        overall["rerank_ms_p95"] = percentile(rerank_ms, 95)
    return EvalRun(
        records=list(records),
        configs=list(configs),
        results=results,
        metrics=metrics,
        scores=scores,
        reasons=reasons,
        reranker=reranker,
        options=options,
        computed=n_computed,
        cached=n_cached,
        scores_computed=n_scored,
        seconds=time.perf_counter() - t_start,
        notes=notes,
    )


def _token_counts(
    records: Sequence[EvalRecord], digests: Sequence[str], model: str, cache: EvalCache
) -> dict[str, dict[str, int]]:
    """Generator tokens of ``title + "\\n" + text`` per candidate, cached (the tokenizer loads only on a miss)."""
    keys = [token_key(d, model) for d in digests]
    found = cache.get_many("tokens", keys)
    out: dict[str, dict[str, int]] = {}
    fresh: dict[str, Any] = {}
    tokenizer: Any = None
    memo: dict[str, int] = {}
    for r, k in zip(records, keys, strict=True):
        if k in found:
            out[r.id] = dict(zip((c.id for c in r.candidates), found[k], strict=True))
            continue
        if tokenizer is None:
            from admit.backends.tokenizers import resolve_tokenizer

            tokenizer = resolve_tokenizer(model)
        counts = []
        for c in r.candidates:
            text = f"{c.title}\n{c.text}" if c.title else c.text
            if text not in memo:
                memo[text] = tokenizer.count(text)
            counts.append(memo[text])
        fresh[k] = counts
        out[r.id] = dict(zip((c.id for c in r.candidates), counts, strict=True))
    cache.put_many("tokens", fresh)
    return out


def configs_for(
    strategies: Sequence[str],
    sweep: Mapping[str, Sequence[Any]],
    fixed: Mapping[str, Any],
    *,
    llm_available: bool,
) -> tuple[list[Config], list[str]]:
    """Build the configurations for ``--strategy`` values (``all`` expands); return them and notes.

    A strategy given without ``--sweep`` runs its default grid. With ``all``, the LLM strategies are skipped
    (and a note says so) unless an LLM endpoint is configured.
    """
    notes: list[str] = []
    names: list[str] = []
    specs = strategy_specs()
    llm_names = [sp.name for sp in specs if sp.shows_text_to_llm]
    for s in strategies:
        if s == "all":
            names.extend(sp.name for sp in specs if not sp.shows_text_to_llm)
            if llm_available:
                names.extend(llm_names)
            else:
                notes.append(f"LLM strategies skipped ({', '.join(llm_names)}): no --llm-base-url given.")
        else:
            names.append(s)
    names = list(dict.fromkeys(names))
    out: list[Config] = []
    for s in names:
        spec = find_strategy(s)
        if spec is None:
            if "all" in strategies:
                notes.append(f"{s} skipped: it is not available in this build.")
                continue
            raise ConfigError(f"Strategy {s!r} is not available here; known: {', '.join(strategy_names())}.")
        if spec.shows_text_to_llm and not llm_available:
            raise ConfigError(f"Strategy {s!r} needs an LLM endpoint: pass --llm-base-url and --llm-model.")
        if len(names) == 1 and sweep:
            grid = dict(sweep)
        else:  # several strategies: each takes the sweep keys it understands over its default grid
            grid = {**spec.default_grid, **{k: v for k, v in sweep.items() if k in _keys_for(s)}}
        grid = {k: v for k, v in grid.items() if k not in fixed or k in sweep}
        out.extend(expand_grid(s, grid, fixed))
    return out, notes


def _keys_for(strategy: str) -> set[str]:
    spec = find_strategy(strategy)
    return set(spec.default_grid if spec is not None else {}) | set(SETTING_KEYS)


def dump_metrics(run: EvalRun, path: str | Path) -> None:
    """Write ``metrics.json``."""
    Path(path).write_text(json.dumps(run.to_json(), indent=2, ensure_ascii=False, default=str) + "\n", "utf-8")
