"""Pipeline: wires the stages together. One call, one :class:`~admit.types.PackResult`, one trace record.

authorize -> route -> budget -> rerank -> dedupe -> prune -> answerability -> pack -> render -> trace

:func:`~admit.decide.prune_candidates` (and :meth:`Pipeline.prune` over it) is the one "rerank,
prune, decide" path that every face without a token budget uses: the framework adapters, ``POST /v1/prune``,
``admit prune`` and the evaluation harness. Settings are resolved once, by :meth:`Pipeline.resolve`.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from admit.answerability import Answerability, no_answer_fallback, on_no_answer
from admit.answerability.adaptation import Adaptation
from admit.backends.embedders.base import Embedder
from admit.backends.embedders.defaults import EncoderConfig
from admit.backends.rerankers import DEFAULT_RERANKER, RERANKERS, Reranker, resolve_reranker
from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.budget import compute_budget
from admit.decide import (
    PruneRun,
    PruneVerdict,
    assess_run,
    check_unique_ids,
    prune_candidates,
    prune_ranked,
    shows_text_to_llm,
)
from admit.dedupe import dedupe, source_cap
from admit.errors import AuthorizationError, ConfigError, RequestError
from admit.features import LEARNED_KIND, chunk_flags, learned_flags
from admit.pack import PackOutcome
from admit.pack import pack as pack_stage
from admit.policy import Policy, PolicySet, Resolution, load_policy_set
from admit.prune import Pruner, PrunerResources, get_strategy
from admit.prune.settings import PruneSettings
from admit.question import Question, as_text, read_question
from admit.render import EvidenceRenderer
from admit.rerank import rerank
from admit.retrieve import authorize
from admit.tools import Redactor, ToolBlock, ToolOutput, render_tool_outputs
from admit.trace import (
    NullTracer,
    RetrievalRecord,
    RouteRecord,
    StageTimer,
    Tracer,
    TraceRecord,
    TraceSink,
    build_record,
    new_request_id,
)
from admit.types import Budget, Chunk, Decision, Message, PackResult, Principal, Scored, check_question_length

__all__ = [
    "PackRequest",
    "Pipeline",
    "PruneRun",
    "PruneVerdict",
    "RequestSink",
    "Resolution",
    "check_unique_ids",
    "pack",
    "prune_candidates",
    "prune_ranked",
    "question_id",
    "request_hash",
    "shows_text_to_llm",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PackRequest:
    """One admission request: the question, the request's fixed parts and the candidates."""

    question: str
    """The user's current question."""
    principal: Principal | None
    """Who asks. ``None`` is refused (fail closed)."""
    candidates: Sequence[Chunk]
    """Candidates from any retriever."""
    model: str | Tokenizer = "gpt-4o"
    """Target model name, encoding, tokenizer.json path, or a tokenizer instance."""
    input_limit: int = 16_000
    """The target model's input limit (or what you choose to support)."""
    instructions: str = ""
    """The system instructions."""
    conversation: Sequence[Message] = ()
    """Earlier turns."""
    query_class: str | None = None
    """Force a query class (logged as an override)."""
    prune: str | None = None
    """Force a pruning strategy (``none`` to skip pruning)."""
    prune_params: Mapping[str, Any] = field(default_factory=dict)
    """Override pruner settings (threshold, keep_top_k, on_error, strategy parameters)."""
    request_id: str | None = None
    """A caller's id; default: a fresh time-ordered UUIDv7 per request (the trace's ``request_hash`` is the
    request's hash, shared by identical requests)."""
    retrieval: RetrievalRecord | None = None
    """What retrieved the candidates (the knowledge base's counts and filters), recorded in the trace."""
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    """Milliseconds of the stages run before the pack (the knowledge base's ``embed_query`` and ``retrieve``):
    recorded beside the pack's own stages, and counted in the trace's ``total``."""
    tool_outputs: Sequence[ToolOutput] = ()
    """Tool results, apart from the evidence: schema-checked, redacted, capped, rendered in their own block
    (``PackResult.tools``) and counted in the budget before the evidence is packed (:mod:`admit.tools`)."""
    adaptation: Adaptation | None = None
    """The knowledge base's own answerability thresholds (``admit adapt``; set by the knowledge base that retrieved
    the candidates when it has a current one): the verdict uses them in place of the shipped ones."""


@runtime_checkable
class RequestSink(Protocol):
    """A trace sink that receives each record with the request it traces (the service logs requests for
    ``admit replay`` this way). A plain :class:`~admit.trace.TraceSink` gets the record only."""

    def write_request(self, record: TraceRecord, request: PackRequest) -> None:
        """Store one record; ``request`` is what produced it."""
        ...


def question_id(question: str) -> str:
    """The request id of a request known only by its question (a search before retrieval): a hash of it."""
    return hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def request_hash(req: PackRequest) -> str:
    """A hash of the question and the candidates' ids and texts: the trace's ``request_hash``, the same for
    identical requests (the ``request_id`` is unique per request: :func:`~admit.trace.new_request_id`)."""
    h = hashlib.sha256()
    h.update(req.question.encode("utf-8", "surrogatepass"))
    for c in req.candidates:
        h.update(b"\0" + c.id.encode("utf-8", "surrogatepass") + b"\0" + c.text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


class Pipeline:
    """The admission pipeline.

    Example:
        >>> from admit import Chunk, Access, Principal, Pipeline, PackRequest
        >>> a = Access(tenant="acme")
        >>> req = PackRequest(
        ...     question="What port does the server use?",
        ...     principal=Principal(tenant="acme"),
        ...     candidates=[Chunk(id="d#1", source_id="d", text="The server listens on port 8080.", access=a)],
        ... )
        >>> Pipeline().pack(req).admitted_ids
        ['d#1']
    """

    def __init__(
        self,
        *,
        policies: PolicySet | str | Path | None = None,
        reranker: Reranker | str | None = None,
        pruner: Pruner | None = None,
        resources: PrunerResources | None = None,
        pruner_options: Mapping[str, Any] | None = None,
        sink: TraceSink | RequestSink | None = None,
        tracer: Tracer | None = None,
        authority: Mapping[str, float] | None = None,
        baseline_policies: PolicySet | str | Path | None = None,
        trace_content: bool | None = None,
        redactor: Redactor | None = None,
        minilm: EncoderConfig | None = None,
    ) -> None:
        """Create a pipeline.

        Args:
            policies: A :class:`PolicySet`, a policy TOML path, or ``None`` for the shipped default.
            reranker: A reranker or its name (default ``retriever``: the candidates' scores, else BM25).
            pruner: A pruner instance used whatever the policy's strategy (tests, custom graders).
            resources: What the pruners built by name may use (an embedder, an LLM, a cache ...).
            pruner_options: The flat spelling of ``resources`` (``{"embedder": ..., "llm": ...}``).
            sink: Where trace records go (e.g. :class:`~admit.trace.JsonlSink`); a :class:`RequestSink` also gets
                the request of each record.
            tracer: Span tracer (default: none).
            authority: A source registry: ``source_id`` -> authority 0..1, used when a chunk has none.
            baseline_policies: The policies that requests outside ``policies.rollout`` keep getting (a staged
                rollout by a stable hash of the request id); ``None`` means everyone gets ``policies``.
            trace_content: Record the question and the prompt in trace records (off by default; the faces
                read ``ADMIT_TRACE_CONTENT``).
            redactor: What tool outputs are redacted with (default: :meth:`Redactor.default`, secrets and
                e-mail addresses).
            minilm: The MiniLM folder, threads and encoder of the embedders this pipeline makes by name (its
                reranker's, its pruners'); ``None``: the process's fallback
                (:func:`~admit.backends.embedders.defaults.minilm_defaults`). Two pipelines with two
                configurations in one process each keep theirs.
        """
        self.policies = policies if isinstance(policies, PolicySet) else load_policy_set(policies)
        self.baseline_policies: PolicySet | None = (
            baseline_policies
            if isinstance(baseline_policies, PolicySet) or baseline_policies is None
            else load_policy_set(baseline_policies)
        )
        self._pruner = pruner
        if resources is not None and pruner_options:
            raise ConfigError("Pipeline takes resources= or pruner_options=, not both.")
        self.resources = resources if resources is not None else PrunerResources.from_options(pruner_options)
        self.minilm = minilm
        """The MiniLM configuration of the embedders it makes by name (``None``: the process's fallback)."""
        self.reranker = self._named_reranker(reranker)
        self._pruners: dict[str, Pruner] = {}
        self.sink = sink
        self.tracer = tracer or NullTracer()
        self.authority = dict(authority or {})
        self.trace_content = bool(trace_content)
        self.redactor = redactor or Redactor.default()

    def _named_reranker(self, reranker: Reranker | str | None) -> Reranker:
        """The reranker; one made by name that reads an embedder gets the shared ``minilm`` made with
        :attr:`minilm` (none is made for one that reads none)."""
        if self.minilm is None or not (reranker is None or isinstance(reranker, str)):
            return resolve_reranker(reranker)
        spec = RERANKERS.get(reranker or DEFAULT_RERANKER)
        return spec.make(self._shared_embedder("minilm")) if spec.needs_embedder else spec.make()

    def _shared_embedder(self, name: str) -> Embedder:
        """The process's shared embedder of ``name`` with this pipeline's :attr:`minilm`."""
        from admit.backends.embedders.shared import shared_embedder

        return shared_embedder(name, self.minilm)

    def pruner_for(self, strategy: str) -> Pruner:
        """Return (and cache) the pruner of a strategy."""
        if self._pruner is not None:
            return self._pruner
        if strategy not in self._pruners:
            spec, res = get_strategy(strategy), self.resources
            if (
                spec.reads_embedder
                and self.minilm is not None
                and (res.embedder is None or isinstance(res.embedder, str))
            ):
                res = replace(res, embedder=self._shared_embedder(res.embedder or "minilm"))
            self._pruners[strategy] = spec.build(res)
        return self._pruners[strategy]

    retriever_top: int = 0
    """Before a pruner that grades the cut list (``setwise``), candidates among the first this many of either of the
    knowledge base's lists go past the ``rerank_count`` cut, at most this many more (:func:`admit.rerank.rerank`;
    :data:`admit.rerank.RETRIEVER_TOP` is the measured 5). 0, the default: the fixed cut (docs/results.md, round
    11: more answers reached the pruner, none more were kept)."""

    def _rerank_keep(self, policy: Policy, n: int) -> int:
        """How many reranked candidates go on: all ``n`` to a pruner that grades the whole retrieved list (it, not a
        fixed cut, decides: an LLM grader, a plug-in), the policy's ``rerank_count`` otherwise: without a pruner,
        and before a pruner that declares ``grades_whole_list = False`` (``setwise``, whose trees were fitted on
        lists of 10-20: graded over 30 its list features shift, and the README's demo lost its bridging release
        note to two off-topic chunks)."""
        if policy.prune.strategy == "none":
            return policy.rerank_count
        whole = getattr(self.pruner_for(policy.prune.strategy), "grades_whole_list", True) is True
        return n if whole else policy.rerank_count

    def term_encoder(self, strategy: str) -> Embedder | None:
        """The encoder the verdict reads close words with (:func:`admit.answerability.terms.check_terms`): the
        resources' embedder instance, else the setwise pruner's shared one when that strategy runs, else none."""
        emb = self.resources.embedder
        if emb is not None and not isinstance(emb, str):
            return emb
        if strategy == "setwise" and self._pruner is None:
            return self._shared_embedder(emb or "minilm")
        return None

    def policies_for(self, request_id: str) -> PolicySet:
        """The policy set a request gets: the new one inside its rollout share, else the baseline."""
        if self.baseline_policies is not None and not self.policies.in_rollout(request_id):
            return self.baseline_policies
        return self.policies

    def resolve(
        self,
        question: str | Question,
        *,
        query_class: str | None = None,
        strategy: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        request_id: str,
    ) -> Resolution:
        """Resolve a request's settings once: rollout (by ``request_id``), route, strategy and overrides, kill switch.

        Every face resolves here (``pack``, ``prune``, the service, the knowledge base).

        Args:
            question: The question, its text or the request's record (routed by the policy's cues).
            query_class: Force a query class (logged as an override).
            strategy: Force a pruning strategy (``none`` to skip pruning); the policy's parameters the new strategy
                does not read are dropped.
            overrides: Flat prune overrides: ``threshold``, ``keep_top_k``, ``on_error``, strategy parameters.
            request_id: Decides the rollout share (a stable hash).

        Raises:
            RequestError: A question over :data:`~admit.types.MAX_QUESTION_CHARS`, an override or parameter the
                strategy does not take (the field is named).
            ConfigError: An unknown query class.
        """
        check_question_length(as_text(question))
        policies = self.policies_for(request_id)
        route = policies.classify(question, override=query_class)
        policy = policies.policy(route.query_class)
        prune = policy.prune.with_overrides(overrides or {}, strategy=strategy)
        if policies.kill_switch:
            prune = prune.with_overrides({}, strategy="none")
        if prune != policy.prune:
            policy = replace(policy, prune=prune)
        return Resolution(
            policy=policy,
            route=route,
            policy_version=policies.version,
            rollout="baseline" if policies is not self.policies else "current",
            kill_switch=policies.kill_switch,
        )

    def resolve_policy(self, req: PackRequest, request_id: str = "") -> tuple[Policy, RouteRecord]:
        """Resolve a :class:`PackRequest` (see :meth:`resolve`); return the policy and the route record."""
        res = self._resolve_request(req, request_id or req.request_id or new_request_id())
        return res.policy, res.record()

    def _resolve_request(self, req: PackRequest, request_id: str, question: Question | None = None) -> Resolution:
        try:
            return self.resolve(
                question if question is not None else req.question,
                query_class=req.query_class,
                strategy=req.prune,
                overrides=req.prune_params,
                request_id=request_id,
            )
        except RequestError as exc:
            raise RequestError(f"prune_params: {exc}", field=f"prune_params.{exc.field or ''}".rstrip(".")) from None

    def prune(
        self,
        question: str | Question,
        candidates: Sequence[Chunk],
        settings: PruneSettings,
        *,
        scores: Sequence[float] | None = None,
        skip_reason: str = "strategy none",
    ) -> PruneRun:
        """Prune ``candidates`` with this pipeline's reranker and the pruner of ``settings.strategy``.

        No budget, no packing: see :func:`prune_candidates`. ``question``: its text or the request's record.
        """
        check_question_length(as_text(question))
        pruner = None if settings.strategy == "none" else self.pruner_for(settings.strategy)
        return prune_candidates(
            question,
            candidates,
            settings=settings,
            reranker=self.reranker,
            pruner=pruner,
            scores=scores,
            skip_reason=skip_reason,
            embedder=self.term_encoder(settings.strategy),
        )

    def pack(self, req: PackRequest, *, resolved: Resolution | None = None) -> PackResult:
        """Run the whole pipeline on one request.

        ``resolved``: the request's settings when the caller resolved them already (:meth:`resolve`; the
        knowledge base does, to know how many candidates to retrieve); else they are resolved here.

        The steps, one method each: :meth:`_check` the request, resolve, :meth:`_budget` (and the tool outputs),
        :meth:`_authorize`, rerank, dedupe, :meth:`_prune` (the source cap, the answerability stage),
        :meth:`_pack_evidence` (the policy's ``on_no_answer``), :meth:`_scan`, :meth:`_record`.
        """
        self._check(req)
        digest = request_hash(req)
        request_id = req.request_id or new_request_id()
        timer = StageTimer(self.tracer)
        decisions: dict[str, Decision] = {}

        question = read_question(req.question)  # read once: rerank, the pruner and answerability take the record
        with timer.stage("route"):
            resolution = resolved if resolved is not None else self._resolve_request(req, request_id, question)
            policy, route = resolution.policy, resolution.record()
        with timer.stage("budget"):
            tokenizer, budget = self._budget(req, policy)
        tools = None
        if req.tool_outputs:
            with timer.stage("tools"):
                tools = render_tool_outputs(
                    req.tool_outputs, redactor=self.redactor, tokenizer=tokenizer, room=budget.evidence_budget
                )
                budget = replace(budget, tool_tokens=tools.tokens)
        with timer.stage("authorize"):
            valid = self._authorize(req, decisions)
        with timer.stage("rerank"):
            keep = self._rerank_keep(policy, len(valid))
            # before a pruner that grades the cut list, each retriever list's first few go on too (retriever_top)
            top = self.retriever_top if policy.prune.strategy != "none" and keep < len(valid) else 0
            ranked, cut = rerank(question, valid, self.reranker, keep=keep, retriever_top=top)
            decisions.update((d.chunk_id, d) for d in cut)
        with timer.stage("dedupe"):
            # the per-source cap runs after pruning (source_cap in _prune), by grade, so a useful chunk is not
            # capped away while a weaker one of its source survives
            unique, dup = dedupe(ranked, policy, cap=False)
            decisions.update((d.chunk_id, d) for d in dup)
        with timer.stage("prune", strategy=policy.prune.strategy):
            pruned = self._prune(question, unique, policy, decisions, adaptation=req.adaptation)
        with timer.stage("pack"):
            packed, verdict = self._pack_evidence(
                req, pruned, valid, policy=policy, budget=budget, tokenizer=tokenizer, query_class=route["query_class"]
            )
            for d in packed.decisions:
                decisions[d.chunk_id] = d
        with timer.stage("scan"):
            flags = self._scan(pruned.shown_to_llm, packed)
        ordered = tuple(decisions[c.id] for c in req.candidates)
        record = self._record(
            req,
            request_id,
            digest=digest,
            route=route,
            budget=budget,
            tokenizer=tokenizer,
            ranked=ranked,
            decisions=ordered,
            packed=packed,
            verdict=verdict,
            pruned=pruned,
            flags=flags,
            tools=tools,
            timer=timer,
        )
        self._write(record, req, request_id)
        return PackResult(
            admitted=packed.admitted, prompt=packed.prompt, fallbacks=packed.fallbacks, decisions=ordered, trace=record,
            budget=budget, tools=tools.text if tools is not None else "", answerability=verdict.probability,
            answer_state=verdict.state,
        )  # fmt: skip

    # -- the steps of pack -------------------------------------------------------------------------------------
    @staticmethod
    def _check(req: PackRequest) -> None:
        """Refuse a request without a principal, a question or unique candidate ids."""
        if req.principal is None or not str(req.principal.tenant or "").strip():
            raise AuthorizationError("The request names no principal (or no tenant); admit fails closed.")
        if not isinstance(req.question, str) or not req.question.strip():
            raise RequestError("`question` must be a non-empty string.", field="question")
        check_unique_ids([c.id for c in req.candidates])

    @staticmethod
    def _budget(req: PackRequest, policy: Policy) -> tuple[Tokenizer, Budget]:
        """The target model's tokenizer and the request's token ledger."""
        tokenizer = resolve_tokenizer(req.model)
        budget = compute_budget(
            tokenizer,
            input_limit=req.input_limit,
            instructions=req.instructions,
            conversation=req.conversation,
            question=req.question,
            policy=policy,
        )
        return tokenizer, budget

    def _authorize(self, req: PackRequest, decisions: dict[str, Decision]) -> list[Chunk]:
        """The candidates the principal may read, with text; scores made finite, authority from the registry."""
        readable, acl = authorize(req.candidates, cast(Principal, req.principal))  # checked by _check
        decisions.update((d.chunk_id, d) for d in acl)
        valid: list[Chunk] = []
        for c in readable:
            if not c.text or not c.text.strip():
                decisions[c.id] = Decision(
                    chunk_id=c.id, state="dropped", stage="validate", reason="invalid", detail="empty text"
                )
                continue
            if c.score is not None and not math.isfinite(c.score):
                c = replace(c, score=None)
            if c.authority is None and c.source_id in self.authority:
                c = replace(c, authority=self.authority[c.source_id])
            valid.append(c)
        return valid

    def _prune(
        self,
        question: Question,
        unique: Sequence[Scored],
        policy: Policy,
        decisions: dict[str, Decision],
        *,
        adaptation: Adaptation | None = None,
    ) -> _Pruned:
        """Prune the unique candidates with the policy's strategy, cap each source by grade, assess the survivors."""
        pruner = self.pruner_for(policy.prune.strategy) if policy.prune.strategy != "none" and unique else None
        shown_to_llm = unique if pruner is not None and shows_text_to_llm(pruner) else ()
        run = prune_ranked(question, unique, settings=adapted_prune(policy.prune, adaptation), pruner=pruner)
        grades = {v.chunk.id: v.grade for v in run.verdicts} if run.outcome is not None else {}
        decisions.update((v.chunk.id, v.decision()) for v in run.verdicts if not v.kept)
        kept = [s for s, v in zip(unique, run.verdicts, strict=True) if v.kept]
        signals = run.outcome.signals if run.outcome is not None else {}
        probs = {cid: float(sig[1]) for cid, sig in signals.items()}  # the pruner's finer order within a grade
        survivors, capped = source_cap(kept, policy, grades, question=question.text, probs=probs)
        decisions.update((d.chunk_id, d) for d in capped)
        run = assess_run(
            question,
            run,
            kept=[s.chunk for s in survivors],
            embedder=self.term_encoder(policy.prune.strategy),
            adaptation=adaptation,
        )
        return _Pruned(survivors=survivors, grades=grades, run=run, shown_to_llm=shown_to_llm)

    def _pack_evidence(
        self,
        req: PackRequest,
        pruned: _Pruned,
        valid: Sequence[Chunk],
        *,
        policy: Policy,
        budget: Budget,
        tokenizer: Tokenizer,
        query_class: str,
    ) -> tuple[PackOutcome, Answerability]:
        """Apply the policy's ``on_no_answer`` to the survivors' answerability, pack them."""
        verdict = pruned.answer
        held = on_no_answer(verdict, pruned.survivors, policy.on_no_answer)
        # a fresh random boundary per request, absent from every string rendered for any candidate
        renderer = EvidenceRenderer.for_chunks(valid, tokenizer)
        packed = pack_stage(
            req.question,
            held.survivors,
            policy=policy,
            budget=budget,
            tokenizer=tokenizer,
            renderer=renderer,
            grades=pruned.grades,
            query_class=query_class,
            notes=held.notes,
        )
        verdict = verdict.after_pack(bool(packed.admitted))
        ids = [s.chunk.id for s in pruned.survivors]
        fallbacks = (*packed.fallbacks, *no_answer_fallback(verdict, ids, policy.on_no_answer, bool(held.notes)))
        return replace(packed, decisions=(*packed.decisions, *held.withheld), fallbacks=fallbacks), verdict

    def _scan(self, shown_to_llm: Sequence[Scored], packed: PackOutcome) -> dict[str, list[str]]:
        """Injection flags (ids and kinds, never text) of the passages that reach a model.

        Suspicious passages (injected instructions, fake boundaries, ...) among those that reach a model (the
        prompt, or an LLM pruner's prompt) are flagged in the trace. Scanning only those, not every candidate,
        keeps a first sight of 100 new chunks cheap.
        """
        shown = [*(s.chunk for s in shown_to_llm), *(p.chunk for p in packed.admitted)]
        flags = {c.id: list(k) for c in shown if (k := chunk_flags(c.title, c.text))}
        embedder = getattr(self.resources, "embedder", None)
        if embedder is not None and shown:
            # the learned detector beside the rules (admit.security.learned), on the same passages: advisory
            for c in learned_flags(shown, embedder):
                kinds = flags.setdefault(c, [])
                if LEARNED_KIND not in kinds:
                    kinds.append(LEARNED_KIND)
        return flags

    def _record(
        self,
        req: PackRequest,
        request_id: str,
        *,
        digest: str,
        route: RouteRecord,
        budget: Budget,
        tokenizer: Tokenizer,
        ranked: Sequence[Scored],
        decisions: tuple[Decision, ...],
        packed: PackOutcome,
        verdict: Answerability,
        pruned: _Pruned,
        flags: dict[str, list[str]],
        tools: ToolBlock | None,
        timer: StageTimer,
    ) -> TraceRecord:
        """The request's trace record: every key named in :class:`~admit.trace.TraceRecord`."""
        return build_record(
            request_id=request_id,
            request_hash=digest,
            route=route,
            policy_version=route["policy_version"],
            budget=budget,
            candidate_ids=[c.id for c in req.candidates],
            reranked_ids=[s.chunk.id for s in ranked],
            decisions=decisions,
            evidence_tokens=packed.evidence_tokens,
            fallbacks=packed.fallbacks,
            latency_ms={**req.latency_ms, **timer.ms},
            total_ms=round(timer.total_ms() + sum(req.latency_ms.values()), 3),
            pruner=pruned.run.outcome.as_dict() if pruned.run.outcome else None,
            accepted_ids=[p.chunk.id for p in packed.admitted],
            question_tokens=tokenizer.count(req.question),
            flags=flags,
            answer=verdict.as_dict(),
            tools=[r.as_dict() for r in tools.reports] if tools is not None else None,
            retrieval=req.retrieval,
            content=(req.question, packed.prompt) if self.trace_content else None,
        )

    def _write(self, record: TraceRecord, req: PackRequest, request_id: str) -> None:
        """Hand the record to the sink; a broken sink does not fail the request (it is logged)."""
        if self.sink is None:
            return
        try:
            if isinstance(self.sink, RequestSink):
                self.sink.write_request(record, req)
            else:
                self.sink.write(record)
        except Exception:  # a broken sink must not fail the request; say so
            logger.exception("trace sink failed for request %s", request_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Pruned:
    """What the prune step leaves: the survivors (source-capped), grades, the assessed run, what an LLM saw."""

    survivors: Sequence[Scored]
    grades: Mapping[str, int]
    run: PruneRun
    shown_to_llm: Sequence[Scored]

    @property
    def answer(self) -> Answerability:
        """Whether the survivors answer the question (set by :meth:`Pipeline._prune`)."""
        return cast(Answerability, self.run.answer)


def pack(
    question: str,
    candidates: Sequence[Chunk],
    *,
    principal: Principal,
    model: str | Tokenizer = "gpt-4o",
    input_limit: int = 16_000,
    instructions: str = "",
    conversation: Sequence[Message] = (),
    query_class: str | None = None,
    prune: str | None = None,
    pipeline: Pipeline | None = None,
) -> PackResult:
    """One-call convenience over :class:`Pipeline`.

    Example:
        >>> from admit import Access, Chunk, Principal, pack
        >>> res = pack("What is the default port?", [Chunk(id="a", source_id="s", text="Port 8080.",
        ...            access=Access(tenant="t"))], principal=Principal(tenant="t"))
        >>> res.admitted_ids
        ['a']
    """
    request = PackRequest(
        question=question, principal=principal, candidates=candidates, model=model, input_limit=input_limit,
        instructions=instructions, conversation=conversation, query_class=query_class, prune=prune,
    )  # fmt: skip
    return (pipeline or Pipeline()).pack(request)


def adapted_prune(settings: PruneSettings, adaptation: Adaptation | None) -> PruneSettings:
    """``settings`` with the pruner parameters the knowledge base's current adaptation fitted for its strategy
    (``admit adapt``: setwise's ``keep_most``), where the policy or the request did not set them."""
    if adaptation is None or not adaptation.current:
        return settings
    fitted = {k: v for k, v in adaptation.prune_params.get(settings.strategy, {}).items() if k not in settings.params}
    return settings.with_overrides(fitted) if fitted else settings
