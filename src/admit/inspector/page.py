"""The request inspector's page: one self-contained HTML page that shows trace records as a person reads them.

For each request: the question, its query class and the cue that chose it, the answerability verdict (answered,
unsure or not answered, its probability, the model that decided, why, and the question's terms no admitted passage
holds), the budget ledger (limit, instructions, conversation, tools, answer reserve, safety margin, evidence budget
and what the evidence used), every candidate in rank order with its fate, stage, grade, score and reason, the
admitted passages in the envelopes the model sees, the fallbacks, the injection flags, the pruner and the per-stage
latency. The candidates' table filters and sorts by fate (a few lines of inline script; the page loads nothing from
the network, and every value from the trace is HTML-escaped).

It renders :class:`~admit.trace.TraceRecord` s (with their logged ``request`` when there is one), from a trace
file (:func:`read_trace_file`, ``admit inspect``) or from the service's :class:`~admit.inspector.log.InspectLog`
(``/inspect``); it reads nothing else.

Example:
    >>> page = render_page([{"request_id": "r1", "query_class": "default", "decisions": []}])
    >>> page.startswith("<!doctype html>")
    True
"""

from __future__ import annotations

import base64
import collections
import hashlib
import html
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from admit.errors import ConfigError
from admit.inspector.log import REVOKED
from admit.render import EvidenceRenderer
from admit.trace import TraceRecord
from admit.types import Access, AnswerState, Chunk, answerable_of

__all__ = ["CSP", "read_trace_file", "render_page"]

_LEDGER = (
    ("input_limit", "input limit"),
    ("instruction_tokens", "- instructions"),
    ("conversation_tokens", "- conversation"),
    ("tool_tokens", "- tool outputs"),
    ("answer_reserve", "- answer reserve"),
    ("safety_margin", "- safety margin"),
    ("evidence_budget", "= evidence budget"),
)


def read_trace_file(path: str | Path, request_id: str | None = None) -> list[dict[str, Any]]:
    """The request records of a trace file (shadow records skipped), or the one with ``request_id``.

    Raises:
        ConfigError: The file cannot be read, a line is not a JSON object, the file holds no request record,
            or none has ``request_id``.
    """
    p = Path(path)
    try:
        text = p.read_text("utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}.") from exc
    records: list[dict[str, Any]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise ConfigError(f"{path}:{n}: not a JSON trace record ({exc}).") from exc
        if not isinstance(rec, dict):
            raise ConfigError(f"{path}:{n}: not a JSON trace record (a {type(rec).__name__}).")
        if rec.get("shadow") or ("decisions" not in rec and "request_id" not in rec):
            continue
        records.append(rec)
    if not records:
        raise ConfigError(f"{path}: no request records; write one with `admit search ... --trace-file {path}`.")
    if request_id is not None:
        records = [r for r in records if r.get("request_id") == request_id]
        if not records:
            raise ConfigError(f"{path}: no request {request_id!r}; the file holds {_ids(read_trace_file(path))}.")
    return records


def _ids(records: Sequence[Mapping[str, Any]]) -> str:
    ids = [str(r.get("request_id")) for r in records]
    return ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def _map(rec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = rec.get(key)
    return value if isinstance(value, Mapping) else {}


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return _e(value)


def _candidates(rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every candidate in rank order (the order retrieval or the caller gave), with its decision."""
    decisions = {str(d.get("id")): d for d in rec.get("decisions", []) if isinstance(d, Mapping)}
    request = _map(rec, "request")
    by_id = {str(c.get("id")): c for c in request.get("candidates", []) if isinstance(c, Mapping)}
    order = [cid for cid in rec.get("candidate_ids", []) if isinstance(cid, str)]
    order += [cid for cid in decisions if cid not in order]
    order += [cid for cid in by_id if cid not in order]
    rows = []
    for rank, cid in enumerate(order, start=1):
        d = decisions.get(cid, {})
        c = by_id.get(cid, {})
        rows.append(
            {
                "rank": rank,
                "id": cid,
                "title": c.get("title", ""),
                "fate": d.get("state", "unknown"),
                "stage": d.get("stage", ""),
                "reason": d.get("reason", ""),
                "grade": d.get("grade"),
                "score": d.get("score", c.get("score")),
                "detail": d.get("detail", ""),
            }
        )
    return rows


def _envelopes(rec: Mapping[str, Any]) -> str:
    """The admitted passages as the model sees them: the logged prompt, else rendered from the logged request."""
    if isinstance(rec.get("prompt"), str) and rec["prompt"]:
        return str(rec["prompt"])
    request = _map(rec, "request")
    by_id = {c.get("id"): c for c in request.get("candidates", []) if isinstance(c, Mapping)}
    accepted = [cid for cid in rec.get("accepted_chunk_ids", []) if cid in by_id]
    if not accepted:
        return ""
    renderer = EvidenceRenderer(boundary="…")  # the request's own boundary is random and not logged: "…" stands for it
    parts = []
    for cid in accepted:
        c = by_id[cid]
        if c.get("revoked"):  # re-labelled or deleted in the store since (admit.inspector.log): no text
            parts.append(f"[passage {cid}: {REVOKED}]")
            continue
        acc = c.get("access") if isinstance(c.get("access"), Mapping) else None
        chunk = Chunk(
            id=str(cid),
            source_id=str(c.get("source_id") or cid),
            title=str(c.get("title") or ""),
            text=str(c.get("text") or ""),
            version=c.get("version"),
            updated_at=_when(c.get("updated_at")),
            access=Access(
                tenant=str(acc.get("tenant", "")), groups=tuple(acc.get("groups", ())), label=str(acc.get("label", ""))
            )
            if acc and acc.get("tenant")
            else None,
        )
        parts.append(renderer.envelope(chunk, chunk.text))
    return "\n\n".join(parts)


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _stamp(rec: Mapping[str, Any]) -> str:
    """The record's time (``ts``, Unix seconds) as ISO 8601 UTC to the millisecond, or ``""`` without one."""
    ts = rec.get("ts")
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        return ""
    try:
        return datetime.fromtimestamp(float(ts), tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return ""


def _table(rows: Sequence[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_num(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


#: The verdict's words on the page (the record's ``state``; a record without one is read from ``answerable``).
_VERDICTS: dict[AnswerState, str] = {"answered": "answered", "unsure": "unsure", "not_answered": "not answered"}


def _answer(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The trace's verdict record: ``answer`` (``answerability`` in records logged before it was renamed)."""
    return _map(rec, "answer") or _map(rec, "answerability")


def _verdict_state(rec: Mapping[str, Any]) -> AnswerState | None:
    """The record's answerability state (``answered``, ``unsure``, ``not_answered``), ``None`` when unassessed."""
    ans = _answer(rec)
    if not ans:
        return None
    state = ans.get("state")
    if isinstance(state, str) and state in _VERDICTS:
        return state
    said = ans.get("answerable")  # a record written before the state was logged
    if isinstance(said, bool):
        return "answered" if said else "not_answered"
    return "unsure"


def _verdict(rec: Mapping[str, Any]) -> str:
    """The answerability block: the verdict in words, the probability, the model, the reason, the missing terms."""
    state = _verdict_state(rec)
    if state is None:
        return '<div class="verdict none"><h3>Answerability</h3><p>not assessed in this trace</p></div>'
    ans = _answer(rec)
    missing = ans.get("missing")
    said = answerable_of(state)
    rows: list[tuple[str, Any]] = [
        ("answerable", "null (unsure)" if said is None else str(said).lower()),
        ("probability", ans.get("probability")),
        ("model", ans.get("model")),
        ("reason", ans.get("reason")),
    ]
    if isinstance(missing, list) and missing:
        rows.append(("missing", ", ".join(map(str, missing))))
    return (
        f'<div class="verdict {_e(state)}" data-state="{_e(state)}"><h3>Answerability: '
        f'<span class="state {_e(state)}">{_e(_VERDICTS[state])}</span></h3>{_table(rows)}</div>'
    )


def _cand_row(c: Mapping[str, Any]) -> str:
    """One candidate's table row (its data attributes drive the page's filter and sort)."""
    return (
        f'<tr class="cand" data-fate="{_e(c["fate"])}" data-rank="{c["rank"]}" '
        f'data-score="{_e(c["score"] if c["score"] is not None else "")}" '
        f'data-grade="{_e(c["grade"] if c["grade"] is not None else "")}">'
        f"<td>{c['rank']}</td><td class='id'>{_e(c['id'])}</td><td>{_e(c['title'])}</td>"
        f'<td class="fate {_e(c["fate"])}">{_e(c["fate"])}</td><td>{_e(c["stage"])}</td>'
        f"<td>{_num(c['grade'])}</td><td>{_num(c['score'])}</td><td>{_e(c['reason'])}</td>"
        f"<td>{_e(c['detail'])}</td></tr>"
    )


def _fallbacks_html(rec: Mapping[str, Any]) -> str:
    """The trace's fallbacks as list items."""
    fallbacks = rec.get("fallbacks") or []
    fb = (
        "".join(
            f"<li><b>{_e(f.get('kind'))}</b>: {_e(f.get('detail'))} {_e(', '.join(f.get('chunk_ids', [])))}</li>"
            for f in fallbacks
            if isinstance(f, Mapping)
        )
        or "<li>none</li>"
    )
    return fb


def _flags_html(rec: Mapping[str, Any]) -> str:
    """The trace's flags as list items."""
    flags = rec.get("flags") or {}
    fl = (
        "".join(f"<li><b>{_e(k)}</b>: {_e(', '.join(map(str, v)))}</li>" for k, v in flags.items())
        if isinstance(flags, Mapping)
        else ""
    ) or "<li>none</li>"
    return fl


def _latency_html(rec: Mapping[str, Any]) -> str:
    """Per-stage latency rows, retrieval's steps first, each with a bar."""
    retrieval = _map(rec, "retrieval")
    latency = {**_map(retrieval, "latency_ms"), **_map(rec, "latency_ms")}  # retrieval's steps first
    total = max([float(v) for v in latency.values() if isinstance(v, int | float)] + [1e-9])
    lat = "".join(
        f'<tr><th>{_e(k)}</th><td>{_num(float(v))} ms</td><td><span class="bar" '
        f'style="width:{max(0.0, 100.0 * float(v) / total):.1f}%"></span></td></tr>'
        for k, v in latency.items()
        if isinstance(v, int | float)
    )
    return lat


def _pruner_html(rec: Mapping[str, Any]) -> str:
    """The pruner's strategy, fallback, error and notes."""
    pruner = _map(rec, "pruner")
    pr = (
        _table(
            [
                ("strategy", pruner.get("strategy")),
                ("fallback", pruner.get("fallback")),
                ("error", pruner.get("error")),
                ("notes", "; ".join(map(str, pruner.get("notes", [])))),
            ]
        )
        if pruner
        else "<p>no pruner ran</p>"
    )
    return pr


def _tools_html(rec: Mapping[str, Any]) -> str:
    """The tool outputs as list items."""
    tools = [t for t in rec.get("tools", []) if isinstance(t, Mapping)]
    tl = (
        "".join(
            f"<li><b>{_e(t.get('id'))}</b> ({_e(t.get('tool'))}): {_e(t.get('rows_kept'))} of "
            f"{_e(t.get('rows_total'))} rows, {_e(t.get('bytes_kept'))} bytes, {_e(t.get('tokens'))} tokens"
            f"{'; more: ' + _e(t.get('continuation')) if t.get('continuation') else ''}</li>"
            for t in tools
        )
        or "<li>none</li>"
    )
    return tl


def _section(rec: Mapping[str, Any], index: int) -> str:
    rid = str(rec.get("request_id", f"request-{index}"))
    request = _map(rec, "request")
    question = rec.get("question") or request.get("question") or "(the question is not in this trace)"
    route = _map(rec, "route")
    budget = _map(rec, "budget")
    ledger = [(label, budget.get(key)) for key, label in _LEDGER if key in budget]
    ledger.append(("evidence used", rec.get("evidence_tokens")))
    if "tokenizer" in budget:
        ledger.append(("tokenizer", budget["tokenizer"]))
    cands = _candidates(rec)
    fates = collections.Counter(c["fate"] for c in cands)
    rows = [_cand_row(c) for c in cands]
    fb, fl = _fallbacks_html(rec), _flags_html(rec)
    lat, pr, tl = _latency_html(rec), _pruner_html(rec), _tools_html(rec)
    envelopes = _envelopes(rec)
    hashed = f" (hash <code class='hash'>{_e(rec['request_hash'])}</code>)" if rec.get("request_hash") else ""
    when = f' at <time class="ts" datetime="{_e(t)}">{_e(t)}</time>' if (t := _stamp(rec)) else ""
    summary = ", ".join(f"{n} {fate}" for fate, n in sorted(fates.items()))
    filters = "".join(
        f'<label><input type="radio" name="fate-{index}" value="{_e(v)}"{" checked" if v == "all" else ""}> {_e(v)}'
        f"</label> "
        for v in ("all", "admitted", "dropped")
    )
    return f"""
<section class="request" id="req-{_e(rid)}" data-request-id="{_e(rid)}">
<h2>{_e(question)}</h2>
<p class="meta">request <code>{_e(rid)}</code>{hashed}{when} · class <b class="qclass">{_e(rec.get("query_class"))}</b>
 (cue <code class="cue">{_e(route.get("cue", ""))}</code>{", overridden" if route.get("overridden") else ""})
 · policy {_e(rec.get("policy_version"))} · {len(cands)} candidates: {_e(summary)}</p>
<div class="grid">
{_verdict(rec)}
<div><h3>Budget ledger</h3>{_table(ledger)}</div>
<div><h3>Per-stage latency</h3><table class="kv latency">{lat}</table></div>
<div><h3>Pruner</h3>{pr}<h3>Fallbacks</h3><ul class="fallbacks">{fb}</ul>
<h3>Flags</h3><ul class="flags">{fl}</ul><h3>Tool outputs</h3><ul class="tools">{tl}</ul></div>
</div>
<h3>Candidates, in rank order</h3>
<div class="controls" data-index="{index}">filter: {filters}
 sort: <select class="sort"><option value="rank">rank</option><option value="fate">fate</option>
 <option value="score">score</option><option value="grade">grade</option></select>
 <span class="shown"></span></div>
<table class="cands"><thead><tr><th>rank</th><th>id</th><th>title</th><th>fate</th><th>stage</th><th>grade</th>
<th>score</th><th>reason</th><th>detail</th></tr></thead><tbody>{"".join(rows)}</tbody></table>
<h3>Admitted evidence, as the model sees it</h3>
<pre class="envelopes">{_e(envelopes) or "(no passage admitted, or the trace holds no text)"}</pre>
</section>"""


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h2{margin:.2em 0;font-size:1.3em}h3{margin:.8em 0 .3em;font-size:1em}
.request{border-top:2px solid #888;padding-top:.8em;margin-top:1.2em}
.meta{color:#555}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:1em}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #ddd}
.kv th{font-weight:normal;color:#555}.cands td.id{font-family:monospace}
.fate.admitted{color:#0a6b2d;font-weight:bold}.fate.dropped{color:#9b1c1c}
.bar{display:inline-block;height:.7em;background:#4a78c2;min-width:1px}.latency td:last-child{width:160px}
pre{background:#f5f5f5;padding:.8em;white-space:pre-wrap;max-height:40em;overflow:auto}
.controls{margin:.3em 0}.shown{color:#555;margin-left:1em}
.state.answered{color:#0a6b2d}.state.unsure{color:#8a5a00}.state.not_answered{color:#9b1c1c}
"""

_SCRIPT = """
for (const box of document.querySelectorAll('.controls')) {
  const section = box.closest('section');
  const body = section.querySelector('table.cands tbody');
  const rows = Array.from(body.querySelectorAll('tr.cand'));
  const shown = box.querySelector('.shown');
  const order = {admitted: 0, dropped: 1};
  function apply() {
    const fate = box.querySelector('input[type=radio]:checked').value;
    const key = box.querySelector('select.sort').value;
    const num = (r, k) => { const v = r.dataset[k]; return v === '' ? -Infinity : Number(v); };
    const sorted = rows.slice().sort((a, b) => {
      if (key === 'rank') return num(a, 'rank') - num(b, 'rank');
      if (key === 'fate') return ((order[a.dataset.fate] ?? 2) - (order[b.dataset.fate] ?? 2)) ||
        num(a, 'rank') - num(b, 'rank');
      return num(b, key) - num(a, key) || num(a, 'rank') - num(b, 'rank');
    });
    let n = 0;
    for (const r of sorted) {
      const on = fate === 'all' || r.dataset.fate === fate;
      r.hidden = !on; n += on ? 1 : 0;
      body.appendChild(r);
    }
    shown.textContent = n + ' of ' + rows.length + ' shown';
  }
  box.addEventListener('change', apply);
  apply();
}
"""


def _index_verdict(rec: Mapping[str, Any]) -> str:
    state = _verdict_state(rec)
    return "" if state is None else f'; <span class="state {_e(state)}">{_e(_VERDICTS[state])}</span>'


_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; "
    "base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy: nothing loaded from anywhere, no script but the page's own (by its hash,
so an injected ``<script>`` or event handler never runs), inline styles (the latency bars). The page carries it
in a ``<meta>`` tag (a saved file too); ``/inspect`` also sends it as a header, with ``frame-ancestors 'none'``."""


def render_page(
    records: Sequence[TraceRecord] | Sequence[Mapping[str, Any]], *, title: str = "admit: request inspector"
) -> str:
    """One self-contained HTML page for ``records`` (trace records, with their requests when logged)."""
    index = "".join(
        f'<li><a href="#req-{_e(r.get("request_id", f"request-{i}"))}">{_e(r.get("request_id", f"request-{i}"))}</a> '
        f"{_e(_stamp(r))} {_e(r.get('query_class'))}: "
        f"{_e(r.get('question') or (r.get('request') or {}).get('question') or '')} "
        f"({len(r.get('accepted_chunk_ids', []))} of {r.get('candidate_count', len(r.get('decisions', [])))} "
        f"admitted{_index_verdict(r)})</li>"
        for i, r in enumerate(records)
    )
    sections = "".join(_section(r, i) for i, r in enumerate(records))
    empty = "" if records else "<p>No request has been logged yet.</p>"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_e(title)}</h1>{empty}<ol class='index'>{index}</ol>{sections}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
