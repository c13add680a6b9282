"""Shadow replay: recompute logged production requests under a new policy and report the diff.

Production logs what replay needs (opt-in, since it holds chunk text): ``admit serve`` with
``trace_requests = true`` under ``[service]`` writes each request into its trace file, and a library user
writes a :class:`ReplayLog`: one JSON line per request holding the request itself (candidates included, in
the ``admit pack`` JSON format) and its trace record::

    from admit.eval.replay import ReplayLog
    log = ReplayLog("replay.jsonl")
    result = pipeline.pack(request)
    log.write(request, result)

``admit replay replay.jsonl --policy new.toml --out DIR`` then re-packs every request under the new policy
while the old decision stands, and reports token counts, admitted-id changes, the requests that would lose
previously admitted evidence, and the estimated cost change. The new policy's ``kill_switch`` is honoured
(the pipeline skips pruning) and so is its ``rollout``: a request outside the rollout share (a deterministic
hash of its request id) keeps its old decision and is counted as such.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from admit._jsonl import json_line
from admit.backends.embedders.defaults import EncoderConfig
from admit.errors import ConfigError, RequestError
from admit.eval.metrics import CostRates
from admit.pipeline import PackRequest, Pipeline
from admit.policy import PolicySet, load_policy_set
from admit.requestlog import RequestLog, request_to_json
from admit.tools import Redactor
from admit.types import PackResult

__all__ = [
    "ReplayLog",
    "ReplayReport",
    "RequestLog",
    "record_for_replay",
    "replay_file",
    "replay_records",
    "request_to_json",
    "write_replay",
]

REPLAY_FORMAT = "admit-replay/1"


def record_for_replay(request: PackRequest, result: PackResult, *, redactor: Redactor | None = None) -> dict[str, Any]:
    """One replay log line: the request (with its candidates) and the trace of the decision taken.

    The request id of the trace is written into the request, so a replay hashes the same id (rollout).
    """
    req = request_to_json(request, redactor=redactor)
    req["request_id"] = result.trace.get("request_id") or request.request_id
    return {"format": REPLAY_FORMAT, "request": req, "trace": dict(result.trace)}


class ReplayLog:
    """Appends :func:`record_for_replay` lines to a JSONL file (thread-safe). Holds chunk text: opt in."""

    def __init__(self, path: str | Path) -> None:
        """Open (append) ``path``; parent folders are created."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, request: PackRequest, result: PackResult) -> None:
        """Log one request and its result."""
        line = json.dumps(record_for_replay(request, result), ensure_ascii=False, default=str)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


@dataclass(slots=True, kw_only=True)
class ReplayReport:
    """The diff of a replay."""

    summary: dict[str, Any]
    """Totals: requests, in rollout, changed, lost evidence, tokens, estimated cost change."""
    diffs: list[dict[str, Any]] = field(default_factory=list)
    """One entry per request."""
    skipped: list[tuple[int, str]] = field(default_factory=list)
    """``(line, why)`` of every line that could not be replayed (bad JSON, too deep, a number too long, not a
    request); the others were replayed."""


def iter_replay_lines(
    path: str | Path, skipped: list[tuple[int, str]] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, {"request", "trace"})`` from a :class:`ReplayLog` file or a server's trace file.

    With ``skipped``, a line that cannot be read is recorded there as ``(line, why)`` and the reading goes on;
    without it, the first such line raises :class:`ConfigError`.

    A server started with ``trace_requests = true`` (``[service]`` in ``admit.toml``) writes the request into
    each trace line; those lines are read as they are, and its shadow-policy records are skipped. A line
    with no request is an error naming the line and how to log requests.
    """
    p = Path(path)
    with p.open("r", encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield n, _read_line(p, n, raw)
            except ConfigError as exc:
                if skipped is None:
                    raise
                skipped.append((n, str(exc)))
            except _Skip:
                continue


class _Skip(Exception):
    """A line that is not a request by design (a shadow record)."""


def _read_line(p: Path, n: int, raw: str) -> dict[str, Any]:
    """One line as ``{"request", "trace"}`` (:class:`ConfigError` naming the line when it is not one)."""
    obj = json_line(raw, f"{p} line {n}")
    if isinstance(obj, dict) and obj.get("shadow") is True:
        raise _Skip  # a shadow-policy record of the server: not a request
    if not isinstance(obj, dict) or not isinstance(obj.get("request"), dict):
        raise ConfigError(
            f"{p} line {n}: field `request`: missing. This trace record holds ids and decisions, not the "
            "request: set `trace_requests = true` under [service] in admit.toml (the server then writes "
            "each request into its trace file), or log requests with admit.eval.replay.ReplayLog."
        )
    if "trace" not in obj and "request_id" in obj:  # a server trace line carrying its request
        obj = {"request": obj["request"], "trace": {k: v for k, v in obj.items() if k != "request"}}
    if not isinstance(obj.get("trace"), dict):
        raise ConfigError(f"{p} line {n}: field `trace`: missing or not an object.")
    return obj


def _old_pruner_cost(trace: Mapping[str, Any]) -> float:
    pr = trace.get("pruner") or {}
    usage = pr.get("usage") or {}
    return float(usage.get("cost_usd", 0.0) or 0.0)


def _with_changes(d: dict[str, Any], prices: CostRates) -> dict[str, Any]:
    """One request's diff with what changed: added, removed, the token and estimated cost deltas."""
    old_set, new_set = set(d["old_admitted"]), set(d["new_admitted"])
    d["added"] = [i for i in d["new_admitted"] if i not in old_set]
    d["removed"] = [i for i in d["old_admitted"] if i not in new_set]
    d["changed"] = bool(d["added"] or d["removed"]) or d["old_admitted"] != d["new_admitted"]
    d["lost_evidence"] = bool(d["removed"])
    d["token_delta"] = d["new_evidence_tokens"] - d["old_evidence_tokens"]
    d["est_cost_change_usd"] = (
        d["token_delta"] * prices.generator_input_per_mtok / 1e6 + d["new_pruner_cost_usd"] - d["old_pruner_cost_usd"]
    )
    return d


def replay_records(
    lines: Iterator[tuple[int, dict[str, Any]]] | list[tuple[int, dict[str, Any]]],
    policies: PolicySet,
    *,
    reranker: str | None = None,
    pruner_options: Mapping[str, Any] | None = None,
    prices: CostRates | None = None,
    pipeline: Pipeline | None = None,
    minilm: EncoderConfig | None = None,
    where: str = "<replay>",
    skipped: list[tuple[int, str]] | None = None,
) -> ReplayReport:
    """Re-pack each logged request under ``policies`` and diff against the logged decision.

    With ``skipped`` (lines already found unreadable), a request that cannot be parsed or packed is added to it
    and skipped; without it, the first one raises. ``minilm``: the MiniLM configuration of the pipeline made here
    (``Pipeline(minilm=...)``)."""
    from admit.schema import parse_pack_request

    prices = prices or CostRates()
    pipe = pipeline or Pipeline(policies=policies, reranker=reranker, pruner_options=pruner_options, minilm=minilm)
    diffs: list[dict[str, Any]] = []
    for n, obj in lines:
        trace = obj["trace"]
        try:
            req = parse_pack_request(obj["request"])
        except RequestError as exc:
            if skipped is None:
                raise RequestError(f"{where} line {n}: {exc}", field=exc.field) from exc
            skipped.append((n, f"{where} line {n}: {exc}"))
            continue
        except (RecursionError, ValueError, TypeError) as exc:
            if skipped is None:
                raise RequestError(f"{where} line {n}: not a pack request: {type(exc).__name__}") from exc
            skipped.append((n, f"{where} line {n}: not a pack request ({type(exc).__name__})"))
            continue
        rid = str(trace.get("request_id") or req.request_id or "")
        req = replace(req, request_id=rid or None)
        old_ids = list(trace.get("accepted_chunk_ids", []))
        old_tokens = int(trace.get("evidence_tokens", 0))
        old_cost = _old_pruner_cost(trace)
        d: dict[str, Any] = {
            "line": n,
            "request_id": rid,
            "question": req.question,
            "old_query_class": trace.get("query_class"),
            "old_admitted": old_ids,
            "old_evidence_tokens": old_tokens,
            "old_pruner_cost_usd": old_cost,
        }
        if not policies.in_rollout(rid):
            d.update(
                in_rollout=False,
                new_query_class=trace.get("query_class"),
                new_admitted=old_ids,
                new_evidence_tokens=old_tokens,
                new_pruner_cost_usd=old_cost,
                kill_switch=False,
            )
        else:
            res = pipe.pack(req)
            t = res.trace
            d.update(
                in_rollout=True,
                new_query_class=t.get("query_class"),
                new_admitted=res.admitted_ids,
                new_evidence_tokens=int(t.get("evidence_tokens", 0)),
                new_pruner_cost_usd=_old_pruner_cost(t),
                kill_switch=bool(t.get("route", {}).get("kill_switch", False)),
                new_strategy=(t.get("pruner") or {}).get("strategy"),
            )
        diffs.append(_with_changes(d, prices))
    summary = {
        "requests": len(diffs),
        "policy_version": policies.version,
        "policy_source": policies.source,
        "kill_switch": policies.kill_switch,
        "rollout": policies.rollout,
        "in_rollout": sum(1 for d in diffs if d["in_rollout"]),
        "changed": sum(1 for d in diffs if d["changed"]),
        "lost_evidence": sum(1 for d in diffs if d["lost_evidence"]),
        "lost_evidence_request_ids": [d["request_id"] for d in diffs if d["lost_evidence"]],
        "old_evidence_tokens": sum(d["old_evidence_tokens"] for d in diffs),
        "new_evidence_tokens": sum(d["new_evidence_tokens"] for d in diffs),
        "admitted_added": sum(len(d["added"]) for d in diffs),
        "admitted_removed": sum(len(d["removed"]) for d in diffs),
        "class_changes": sum(1 for d in diffs if d["old_query_class"] != d["new_query_class"]),
        "est_cost_change_usd": sum(d["est_cost_change_usd"] for d in diffs),
        "prices": prices.as_dict(),
    }
    summary["est_cost_change_per_request_usd"] = summary["est_cost_change_usd"] / len(diffs) if diffs else 0.0
    bad = sorted(skipped or [])
    summary["skipped_lines"] = len(bad)
    return ReplayReport(summary=summary, diffs=diffs, skipped=bad)


def replay_file(
    traces: str | Path,
    policy: str | Path | PolicySet,
    *,
    reranker: str | None = None,
    pruner_options: Mapping[str, Any] | None = None,
    prices: CostRates | None = None,
    minilm: EncoderConfig | None = None,
) -> ReplayReport:
    """Replay a :class:`ReplayLog` file under a policy file (or set); unreadable lines are skipped and listed in
    ``report.skipped`` (and counted in ``summary["skipped_lines"]``)."""
    policies = policy if isinstance(policy, PolicySet) else load_policy_set(policy)
    skipped: list[tuple[int, str]] = []
    return replay_records(
        list(iter_replay_lines(traces, skipped)),
        policies,
        reranker=reranker,
        pruner_options=pruner_options,
        prices=prices,
        minilm=minilm,
        where=str(traces),
        skipped=skipped,
    )


def write_replay(report: ReplayReport, out_dir: str | Path) -> dict[str, Path]:
    """Write ``summary.json`` and ``diff.jsonl`` (one line per request) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out / "summary.json", "diff": out / "diff.jsonl"}
    paths["summary"].write_text(json.dumps(report.summary, indent=2, ensure_ascii=False) + "\n", "utf-8")
    with paths["diff"].open("w", encoding="utf-8") as fh:
        for d in report.diffs:
            fh.write(json.dumps(d, ensure_ascii=False, default=str) + "\n")
    return paths
