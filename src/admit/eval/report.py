"""Outputs of a sweep: ``metrics.json``, ``pareto.png`` and a self-contained ``report.html``.

The plot (matplotlib, Agg backend) puts compression on x and retained recall on y, one line per strategy
through its Pareto-optimal configurations, the ``top_n`` baseline dashed. The HTML page embeds the PNG as
base64 and uses no external asset, so it opens offline.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from admit.errors import MissingExtraError
from admit.eval.metrics import question_diagnosis, recall_at
from admit.eval.sweep import Config, EvalRun, dump_metrics, is_baseline
from admit.prune import find_strategy

__all__ = [
    "headline_config",
    "markdown_table",
    "pareto_front",
    "plot_pareto",
    "recall_at",
    "render_html",
    "write_outputs",
]

logger = logging.getLogger(__name__)

Axis = Literal["chunk", "token"]
TARGET = (0.68, 0.96)
"""The published target: at least 96% retained recall at 68% compression."""

_PALETTE = ("#7f7f7f", "#bcbd22", "#ff7f0e", "#aec7e8", "#98df8a")
"""Colours of strategies whose spec names none (plug-ins), in order of appearance."""


def _color(strategy: str, others: list[str]) -> str | None:
    spec = find_strategy(strategy)
    if spec is not None and spec.color:
        return spec.color
    if strategy not in others:
        others.append(strategy)
    return _PALETTE[others.index(strategy) % len(_PALETTE)]


def _xkey(axis: Axis) -> str:
    return "chunk_compression" if axis == "chunk" else "token_compression"


def _metrics(run: EvalRun, name: str, group: str | None) -> Mapping[str, Any] | None:
    m = run.metrics[name]
    found: Mapping[str, Any] | None = m["overall"] if group is None else m["by_source"].get(group)
    return found


def pareto_front(points: Sequence[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """The non-dominated points (higher x and higher y are better), sorted by x.

    Example:
        >>> pareto_front([(0.1, 0.9, "a"), (0.5, 0.8, "b"), (0.4, 0.7, "c"), (0.5, 0.9, "d")])
        [(0.5, 0.9, 'd')]
    """
    front: list[tuple[float, float, str]] = []
    for p in points:
        dominated = any((q[0] >= p[0] and q[1] >= p[1]) and (q[0] > p[0] or q[1] > p[1]) for q in points)
        if not dominated and not any(f[0] == p[0] and f[1] == p[1] for f in front):
            front.append(p)
    return sorted(front)


def strategy_points(
    run: EvalRun, strategy: str, axis: Axis, group: str | None = None
) -> list[tuple[float, float, str]]:
    """``(compression, retained recall, config name)`` of each configuration of a strategy."""
    out = []
    for c in run.configs:
        if c.strategy != strategy:
            continue
        m = _metrics(run, c.name, group)
        if m is not None:
            out.append((float(m[_xkey(axis)]), float(m["retained_recall"]), c.name))
    return out


def _strategies(run: EvalRun) -> list[str]:
    return list(dict.fromkeys(c.strategy for c in run.configs))


def plot_pareto(run: EvalRun, path: str | Path | None = None, *, axis: Axis = "chunk") -> bytes:
    """Draw the Pareto figure (overall, then one panel per dataset when there are several); return PNG bytes."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingExtraError("matplotlib", "eval") from exc
    sources = sorted({r.source for r in run.records})
    panels: list[str | None] = [None] + (sources if len(sources) > 1 else [])
    ncols = min(len(panels), 2)
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.4 * ncols, 4.8 * nrows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    others: list[str] = []
    for ax, group in zip(axes.flat, panels, strict=False):
        for s in _strategies(run):
            pts = strategy_points(run, s, axis, group)
            if not pts:
                continue
            color = _color(s, others)
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, alpha=0.35, color=color)
            front = pareto_front(pts)
            ax.plot(
                [p[0] for p in front],
                [p[1] for p in front],
                linestyle="--" if s == "top_n" else (":" if is_baseline(s) else "-"),
                marker="o",
                markersize=4,
                color=color,
                label=s + (" (baseline)" if is_baseline(s) else ""),
            )
        ax.plot(
            [TARGET[0]],
            [TARGET[1]],
            marker="*",
            markersize=12,
            color="gold",
            markeredgecolor="black",
            linestyle="none",
            label="target 96% @ 68%",
        )
        n = len(run.records) if group is None else sum(1 for r in run.records if r.source == group)
        ax.set_title(f"{group or 'all datasets'} ({n} questions)")
        ax.set_xlabel(f"{axis} compression (share of candidate {'chunks' if axis == 'chunk' else 'tokens'} dropped)")
        ax.set_ylabel("retained recall (all required chunks kept)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
    fig.suptitle(f"admit pruners: compression vs retained recall (reranker: {run.reranker})")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def headline_config(run: EvalRun, strategy: str, *, axis: Axis = "chunk") -> Config | None:
    """The strategy's default operating point if swept, else its best recall at >= 68% compression, else its
    best recall."""
    cands = [c for c in run.configs if c.strategy == strategy]
    if not cands:
        return None
    spec = find_strategy(strategy)
    default = spec.default_params if spec is not None else None
    if default:
        for c in cands:
            if all(c.params.get(k) == v for k, v in default.items()):
                return c
    xk = _xkey(axis)

    def key(c: Config) -> tuple[bool, float, float]:
        m = run.metrics[c.name]["overall"]
        return (m[xk] >= TARGET[0], m["retained_recall"], m[xk])

    return max(cands, key=key)


def markdown_table(run: EvalRun, *, axis: Axis = "chunk") -> str:
    """Two Markdown tables: each strategy's headline configuration per dataset, and recall at 68% compression."""
    sources = sorted({r.source for r in run.records})
    groups: list[str | None] = [None, *sources] if len(sources) > 1 else [None]
    lines = [
        f"Reranker: `{run.reranker}`; tokens: `{run.options.generator_model}`; {len(run.records)} questions. "
        f"Chunk / token compression and retained recall (all required chunks kept) of each strategy's default "
        f"operating point.",
        "",
        "| strategy | configuration | "
        + " | ".join(f"{g or 'all'}: chunk comp / token comp / recall" for g in groups)
        + " | p50 / p95 ms |",
        "|---|---|" + "---|" * len(groups) + "---|",
    ]
    for s in _strategies(run):
        c = headline_config(run, s, axis=axis)
        if c is None:
            continue
        cells = []
        for g in groups:
            m = _metrics(run, c.name, g)
            cells.append(
                "-"
                if m is None
                else f"{m['chunk_compression']:.3f} / {m['token_compression']:.3f} / {m['retained_recall']:.3f}"
            )
        o = run.metrics[c.name]["overall"]
        lines.append(
            f"| {s} | `{c.name}` | " + " | ".join(cells) + f" | {o['latency_ms_p50']:.2f} / {o['latency_ms_p95']:.2f} |"
        )
    lines += [
        "",
        f"Retained recall at {int(TARGET[0] * 100)}% {axis} compression, interpolated along each strategy's "
        f"Pareto front (`-`: no configuration compresses that much).",
        "",
        "| strategy | " + " | ".join(g or "all" for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for s in _strategies(run):
        cells = []
        for g in groups:
            v = recall_at(pareto_front(strategy_points(run, s, axis, g)), TARGET[0])
            cells.append("-" if v is None else f"{v:.3f}")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}tr.front td{font-weight:600}.kept{background:#e8f6e8}
.drop{background:#fbeaea}.req{outline:2px solid #d62728}code{font-size:12px}details{margin:.6em 0}
summary{cursor:pointer}.muted{color:#777}.excerpt{max-width:520px;text-align:left;font-size:12px;color:#444}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _pct(x: float) -> str:
    return f"{x:.3f}"


def _opt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _config_table(run: EvalRun, axis: Axis) -> str:
    fronts = {s: {p[2] for p in pareto_front(strategy_points(run, s, axis))} for s in _strategies(run)}
    head = (
        "<tr><th class=l>configuration</th><th>chunk comp.</th><th>token comp.</th><th>retained recall</th>"
        "<th>chunk recall</th><th>kept / q</th><th>p50 ms</th><th>p95 ms</th><th>pruner tokens</th>"
        "<th>pruner $/q</th><th>gen. tokens saved / q</th><th>net $/q</th><th>errors</th></tr>"
    )
    rows = []
    for c in run.configs:
        m = run.metrics[c.name]["overall"]
        cls = " class=front" if c.name in fronts[c.strategy] else ""
        rows.append(
            f"<tr{cls}><td class=l><code>{_e(c.name)}</code></td><td>{_pct(m['chunk_compression'])}</td>"
            f"<td>{_pct(m['token_compression'])}</td><td>{_pct(m['retained_recall'])}</td>"
            f"<td>{_pct(m['chunk_recall'])}</td><td>{m['kept_per_question']:.2f}</td>"
            f"<td>{m['latency_ms_p50']:.2f}</td><td>{m['latency_ms_p95']:.2f}</td>"
            f"<td>{m['pruner_prompt_tokens'] + m['pruner_completion_tokens']}</td>"
            f"<td>{m['pruner_cost_per_query_usd']:.6f}</td><td>{m['generator_tokens_saved_per_query']:.0f}</td>"
            f"<td>{m['net_cost_change_per_query_usd']:+.6f}</td><td>{m['pruner_errors']}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table><p class=muted>Bold rows lie on their strategy's Pareto front.</p>"


def _breakdown_tables(run: EvalRun, name: str) -> str:
    m = run.metrics[name]
    parts = []
    for key, title in (
        ("by_source", "dataset"),
        ("by_hop_type", "hop type"),
        ("by_question_type", "question type"),
        ("by_query_class", "query class"),
    ):
        rows = []
        for g, v in m[key].items():
            diag = ", ".join(f"{k}: {n}" for k, n in v["diagnosis_questions"].items() if n)
            rows.append(
                f"<tr><td class=l>{_e(g)}</td><td>{v['questions']}</td><td>{_pct(v['chunk_compression'])}</td>"
                f"<td>{_pct(v['token_compression'])}</td><td>{_pct(v['retained_recall'])}</td>"
                f"<td>{_pct(v['chunk_recall'])}</td><td>{_opt(v.get('said_answerable'))}</td>"
                f"<td>{_opt(v.get('said_unsure'))}</td>"
                f"<td>{_opt(v.get('said_not_answered_when_retained'))}</td><td class=l>{_e(diag)}</td></tr>"
            )
        parts.append(
            f"<h4>by {title}</h4><table><tr><th class=l>{title}</th><th>questions</th><th>chunk comp.</th>"
            f"<th>token comp.</th><th>retained recall</th><th>chunk recall</th><th>said answered</th><th>unsure</th>"
            f"<th>not answered, retained</th><th class=l>diagnosis</th></tr>" + "".join(rows) + "</table>"
        )
    return "".join(parts)


def _worst_questions(run: EvalRun, name: str, limit: int) -> str:
    by_id = {r.id: r for r in run.records}
    res = [q for q in run.results[name] if not q.retained]

    def severity(q: Any) -> tuple[int, int]:
        diag = q.diagnosis
        return (-sum(1 for v in diag.values() if v in {"missing", "dropped"}), -len(q.required))

    res.sort(key=severity)
    if not res:
        return "<p>Every question kept all its required chunks.</p>"
    out = [f"<p>{len(res)} question(s) lost a required chunk; the {min(limit, len(res))} worst:</p>"]
    reasons = run.reasons.get(name, {})
    for q in res[:limit]:
        rec = by_id[q.record_id]
        diag = q.diagnosis
        scores = run.scores.get(rec.id, [])
        rank = {
            rec.candidates[i].id: k + 1 for k, i in enumerate(sorted(range(len(scores)), key=lambda i: (-scores[i], i)))
        }
        kept = set(q.kept_ids)
        rows = []
        for i, ch in sorted(enumerate(rec.candidates), key=lambda t: rank.get(t[1].id, 0)):
            cls = ("kept" if ch.id in kept else "drop") + (" req" if ch.id in diag else "")
            rows.append(
                f"<tr class='{cls}'><td>{rank.get(ch.id, '')}</td><td class=l>{_e(ch.id)}</td>"
                f"<td>{'yes' if ch.id in diag else ''}</td><td>{'kept' if ch.id in kept else 'dropped'}</td>"
                f"<td>{scores[i]:.3f}</td><td>{q.grades.get(ch.id, '')}</td>"
                f"<td class=l>{_e(reasons.get(rec.id, {}).get(ch.id, ''))}</td>"
                f"<td class=l>{_e(ch.title)}</td><td class=excerpt>{_e(ch.text[:300])}"
                f"{'…' if len(ch.text) > 300 else ''}</td></tr>"
            )
        missing = [k for k, v in diag.items() if v == "missing"]
        out.append(
            f"<details><summary><b>{_e(rec.question)}</b> "
            f"<span class=muted>({_e(rec.source)}, {_e(rec.question_type)}, "
            f"class {_e(q.query_class)}; {question_diagnosis(diag)}; required {', '.join(map(_e, q.required))})"
            f"</span></summary>"
            + (f"<p>Required but not among the candidates: {_e(', '.join(missing))}</p>" if missing else "")
            + "<table><tr><th>rank</th><th class=l>id</th><th>required</th><th>decision</th><th>score</th>"
            "<th>grade</th><th class=l>reason</th><th class=l>title</th><th class=l>text</th></tr>"
            + "".join(rows)
            + "</table></details>"
        )
    return "".join(out)


def render_html(run: EvalRun, png: bytes, *, axis: Axis = "chunk", worst: int = 15) -> str:
    """The self-contained report page."""
    img = base64.b64encode(png).decode("ascii")
    notes = "".join(f"<li>{_e(n)}</li>" for n in run.notes)
    sections = []
    for s in _strategies(run):
        c = headline_config(run, s, axis=axis)
        if c is None:
            continue
        sections.append(
            f"<h3>{_e(s)}: <code>{_e(c.name)}</code></h3>{_breakdown_tables(run, c.name)}"
            f"<h4>worst questions</h4>{_worst_questions(run, c.name, worst)}"
        )
    datasets = ", ".join(sorted({r.source for r in run.records}))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>admit eval report</title>"
        f"<style>{_CSS}</style></head><body><h1>admit eval report</h1>"
        f"<p>{len(run.records)} questions ({_e(datasets)}); reranker <code>{_e(run.reranker)}</code>; "
        f"generator tokenizer <code>{_e(run.options.generator_model)}</code>; {len(run.configs)} configurations; "
        f"{run.computed} gradings computed, {run.cached} from the cache; {run.seconds:.1f} s.</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + f"<img alt='Pareto figure' style='max-width:100%' src='data:image/png;base64,{img}'>"
        "<h2>Configurations</h2>"
        + _config_table(run, axis)
        + "<p class=muted>Net $/q = pruner cost per query - generator input tokens saved x generator price "
        f"(prices: {_e(json.dumps(run.options.prices.as_dict()))}). Negative is a saving.</p>"
        "<h2>Per strategy (default operating point)</h2>" + "".join(sections) + "</body></html>\n"
    )


def write_outputs(run: EvalRun, out_dir: str | Path, *, axis: Axis = "chunk", worst: int = 15) -> dict[str, Path]:
    """Write ``metrics.json``, ``pareto.png``, ``report.html`` and ``table.md`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        k: out / f
        for k, f in (
            ("metrics", "metrics.json"),
            ("plot", "pareto.png"),
            ("html", "report.html"),
            ("table", "table.md"),
        )
    }
    dump_metrics(run, paths["metrics"])
    png = plot_pareto(run, paths["plot"], axis=axis)
    paths["html"].write_text(render_html(run, png, axis=axis, worst=worst), "utf-8")
    paths["table"].write_text(markdown_table(run, axis=axis), "utf-8")
    return paths
