"""``admit prune``: run a pruning strategy over a JSONL file of questions and candidate chunks.

Each input line is a record of the development-data format; only ``id``, ``question`` and ``candidates``
(``id``, ``text``, optional ``title``/``source_id``) are read, never labels. Candidates are reranked first
(they carry no scores), then pruned. One output line per input line::

    {"id": ..., "kept_ids": [...], "dropped_ids": [...],
     "decisions": [{"id", "kept", "grade", "reason", "score", "rank"}, ...],
     "usage": {...}, "latency_s": ..., "strategy": ..., "fallback": ..., "error": ..., "notes": [...]}

``kept`` is still written beside ``kept_ids`` (its deprecated spelling).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import click

from admit._clean import escape_line_breaks
from admit._jsonl import json_line
from admit.cli._common import (
    DEFAULT_STRATEGY,
    check_strategy,
    echo_json,
    handle_errors,
    json_option,
    jsonl_path_option,
    llm_options,
    minilm_config,
    minilm_embedder,
    prune_option,
    reranker_option,
)
from admit.cli._progress import progress_option, record_bar, show_progress, status
from admit.cli._resources import SwitchCommand, strategy_switch_options, switch_pruner_options
from admit.errors import AdmitError, ConfigError, RequestError
from admit.prune.settings import PruneSettings
from admit.types import Chunk, check_question_length

__all__ = ["parse_set_options", "prune_cmd", "read_records"]


def _coerce(value: str) -> Any:
    low = value.strip().lower()
    if low in {"true", "yes", "on"}:
        return True
    if low in {"false", "no", "off"}:
        return False
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def parse_set_options(items: Sequence[str], strategy: str) -> PruneSettings:
    """Build PruneSettings from ``key=value`` strings: ``threshold``, ``keep_top_k``, ``on_error``, else params
    (checked by :class:`PruneSettings`: a key the strategy does not read is an error)."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected key=value (e.g. --set threshold=4).")
        overrides[key] = _coerce(raw)
    return PruneSettings(strategy=strategy).with_overrides(overrides)  # the library's own message, as is


def read_records(path: str) -> list[tuple[str, str, list[Chunk]]]:
    """Read and validate every line first: ``(id, question, candidates)``; a bad line is a RequestError."""
    out: list[tuple[str, str, list[Chunk]]] = []
    try:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}.") from exc
    try:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path} line {lineno}"
            rec = json_line(line, where)
            if not isinstance(rec, dict):
                raise RequestError(f"{where}: expected a JSON object, got {type(rec).__name__}.")
            rid = rec.get("id", f"line-{lineno}")
            if not isinstance(rid, str | int) or isinstance(rid, bool):
                raise RequestError(f"{where}: field `id` must be a string.", field="id")
            q = rec.get("question")
            if not isinstance(q, str) or not q.strip():
                raise RequestError(f"{where}: field `question` is missing or not a non-empty string.", field="question")
            try:
                check_question_length(q)
            except RequestError as exc:
                raise RequestError(f"{where}: {exc}", field="question") from None
            cands = rec.get("candidates")
            if not isinstance(cands, list):
                raise RequestError(f"{where}: field `candidates` is missing or not a list.", field="candidates")
            chunks = [_candidate(c, f"candidates[{k}]", where) for k, c in enumerate(cands)]
            try:
                from admit.pipeline import check_unique_ids

                check_unique_ids([c.id for c in chunks])
            except RequestError as exc:
                raise RequestError(f"{where}: field `{exc.field}`: {exc}", field=exc.field) from None
            out.append((str(rid), q, chunks))
    finally:
        if fh is not sys.stdin:
            fh.close()
    return out


def _candidate(raw: Any, f: str, where: str) -> Chunk:
    """One candidate through the one bring-your-own candidate model (:class:`admit.schema.PruneCandidate`);
    only ``id``, ``text``, ``title``, ``source_id``, ``score`` and ``metadata`` are read (labels stay out)."""
    from pydantic import ValidationError

    from admit.schema import PruneCandidate

    if not isinstance(raw, dict):
        raise RequestError(f"{where}: field `{f}` must be an object.", field=f)
    keys = ("id", "text", "title", "source_id", "score", "metadata")
    picked = {k: raw[k] for k in keys if raw.get(k) is not None}
    picked.setdefault("text", raw.get("text"))
    try:
        return PruneCandidate.model_validate(picked).to_chunk()
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        raise RequestError(f"{where}: field `{f}.{loc}`: {err.get('msg', 'invalid')}.", field=f"{f}.{loc}") from None


def _scoring_reranker(name: str | None) -> Any:
    """``name``'s reranker, else the catalogue's scoring one (the candidates carry no scores), or its fallback
    when it cannot run here (said on stderr)."""
    from admit.backends.rerankers import RERANKERS, SCORING_RERANKER

    if name:
        return _made(RERANKERS.get(name))
    spec = RERANKERS.get(SCORING_RERANKER)
    try:
        why = spec.unavailable()
        if why is None:
            return _made(spec)
    except (ImportError, AdmitError, OSError) as exc:
        why = str(exc)
    if spec.fallback is None:
        raise ConfigError(f"reranker {spec.name!r} is not available here ({why}).")
    click.echo(f"note: {spec.name} reranker unavailable ({why}); using {spec.fallback}", err=True)
    return _made(RERANKERS.get(spec.fallback))


def _made(spec: Any) -> Any:
    """The reranker of ``spec``, over ``minilm`` with the root options' configuration when it reads an embedder."""
    return spec.make(minilm_embedder()) if spec.needs_embedder else spec.make()


@click.command("prune", cls=SwitchCommand)
@jsonl_path_option("--input", "input_path", "JSONL records with id, question, candidates (- for stdin).")
@jsonl_path_option("--output", "output_path", "JSONL output, one line per input line (- for stdout).")
@prune_option(default_help="Default: setwise (this command always prunes).")
@click.option("--strategy", default=None, hidden=True, help="Deprecated: use --prune STRATEGY.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="threshold, keep_top_k, on_error, or a strategy parameter (repeatable).",
)
@click.option("--llm", "llm_spec", default=None, help="LLM spec: openai:MODEL@URL, llama:/path.gguf, fake.")
@llm_options()
@click.option(
    "--cache",
    "cache_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="SQLite file caching LLM pruner results.",
)
@reranker_option(default=None, default_help="Default: dense if available, else bm25.")
@strategy_switch_options()
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="Records pruned concurrently."
)
@progress_option("a bar over the records, with an ETA")
@json_option("a summary of the run (records, kept, fallbacks, tokens)")
@handle_errors
def prune_cmd(
    input_path: str,
    output_path: str,
    prune: str | None,
    strategy: str | None,
    sets: tuple[str, ...],
    llm_spec: str | None,
    llm_base_url: str | None,
    llm_model: str | None,
    llm_api_key_env: str,
    cache_path: str | None,
    reranker: str | None,
    workers: int,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Prune the candidates of every record in --input and write the decisions to --output."""
    if prune is not None and strategy is not None:
        raise click.UsageError("--prune and --strategy exclude each other; use --prune STRATEGY.")
    strategy = prune or (check_strategy(strategy) if strategy else DEFAULT_STRATEGY)
    if strategy == "none":
        raise click.UsageError("admit prune needs a strategy; --prune none would keep everything.")
    if as_json and output_path == "-":
        raise click.UsageError("--json prints a summary on stdout; write the records to a file with --output.")
    t_run = time.perf_counter()
    from admit.pipeline import prune_candidates
    from admit.prune import PrunerResources, get_strategy

    settings = parse_set_options(sets, strategy)
    records = read_records(input_path)
    shown = show_progress(progress)
    with status(shown) as st:
        st.update(f"loading the reranker and the {strategy} pruner")
        rr = _scoring_reranker(reranker)
        resources = PrunerResources(
            llm=llm_spec,
            llm_base_url=llm_base_url,
            llm_model=llm_model,
            llm_api_key_env=llm_api_key_env,
            cache=cache_path or None,
            reranker=rr,
            embedder=minilm_embedder() if minilm_config() is not None else None,  # the root options' MiniLM
            **switch_pruner_options(),
        )
        try:
            spec = get_strategy(strategy)
            pruner = spec.build(resources)
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"strategy {strategy!r} is not available here ({exc}); try --prune top_n or --prune graded."
            ) from exc
        except TypeError as exc:
            raise ConfigError(f"strategy {strategy!r}: {exc}") from exc
        # the local models load here, under the status line, not inside the first record's latency
        # (an LLM strategy's endpoint is not called before the first record)
        for model in (getattr(rr, "embedder", None), None if spec.shows_text_to_llm else pruner):
            warm = getattr(model, "warm_up", None)
            if callable(warm):
                warm()

    def one(rec: tuple[str, str, list[Chunk]]) -> dict[str, Any]:
        rid, question, chunks = rec
        t0 = time.perf_counter()
        run = prune_candidates(question, chunks, settings=settings, reranker=rr, pruner=pruner)
        answer = run.as_dict(question)  # the one prune answer (/v1/prune and MCP give the same keys)
        return {
            "id": rid,
            **answer,
            "kept": answer["kept_ids"],  # deprecated spelling of kept_ids
            "latency_s": round(time.perf_counter() - t0, 4),
        }

    summary = _Summary(strategy=strategy, output=output_path)
    out = sys.stdout if output_path == "-" else open(output_path, "w", encoding="utf-8")  # noqa: SIM115
    try:
        with record_bar(len(records), f"prune ({strategy})", enabled=shown) as advance:
            if workers == 1:
                results = map(one, records)
                for row in results:
                    out.write(escape_line_breaks(json.dumps(row, ensure_ascii=False)) + "\n")
                    out.flush()  # each result as soon as it is decided (a pipe reader sees the first one first)
                    summary.add(row)
                    advance()
            else:
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="admit-prune-cli") as ex:
                    for row in ex.map(one, records):
                        out.write(escape_line_breaks(json.dumps(row, ensure_ascii=False)) + "\n")
                        out.flush()
                        summary.add(row)
                        advance()
    finally:
        if out is not sys.stdout:
            out.close()
    cache = getattr(pruner, "cache", None)
    if cache is not None:
        cache.close()
    summary.seconds = time.perf_counter() - t_run
    if as_json:
        echo_json(summary.as_dict())
    else:
        click.echo(summary.line(), err=output_path == "-")


@dataclass(slots=True, kw_only=True)
class _Summary:
    """What one ``admit prune`` run did, for people (one line) or tools (``--json``)."""

    strategy: str
    output: str
    records: int = 0
    candidates: int = 0
    kept: int = 0
    fallbacks: int = 0
    errors: int = 0
    answered: int = 0
    """Records whose kept chunks answer the question (``answerable`` true)."""
    unsure: int = 0
    """Records on which the check cannot tell (``answerable`` null)."""
    not_answered: int = 0
    """Records whose kept chunks do not answer it (``answerable`` false)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def add(self, row: dict[str, Any]) -> None:
        self.records += 1
        self.candidates += len(row["decisions"])
        self.kept += len(row["kept"])
        self.fallbacks += row["fallback"] is not None
        self.errors += row["error"] is not None
        state = row.get("answer_state")
        self.answered += state == "answered"
        self.unsure += state == "unsure"
        self.not_answered += state == "not_answered"
        usage = row.get("usage") or {}
        self.prompt_tokens += int(usage.get("prompt_tokens", 0) or 0)
        self.completion_tokens += int(usage.get("completion_tokens", 0) or 0)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["seconds"] = round(self.seconds, 3)
        d["chunk_compression"] = round(1 - self.kept / self.candidates, 4) if self.candidates else 0.0
        return d

    def line(self) -> str:
        comp = self.as_dict()["chunk_compression"]
        return (
            f"pruned {self.records} records with {self.strategy}: kept {self.kept} of {self.candidates} candidates "
            f"(chunk compression {comp:.1%}); answered {self.answered}, unsure {self.unsure}, not answered "
            f"{self.not_answered}; {self.fallbacks} fallbacks, {self.errors} errors; "
            f"{self.prompt_tokens + self.completion_tokens} LLM tokens; {self.seconds:.1f} s -> {self.output}"
        )
