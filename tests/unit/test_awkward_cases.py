"""The guide's awkward cases, end to end through the pipeline."""

from __future__ import annotations

from dataclasses import replace

import pytest

from admit import Access, AuthorizationError, Message, PackRequest, Pipeline, Principal, RequestError
from admit.prune.fake import FakeGrader
from tests.helpers import ACME, ALICE, chunk

POLICY_PAGE = (
    "Employees may work remotely up to three days per week. Remote days must be agreed with the team lead "
    "one week in advance. Equipment for home offices is reimbursed up to 500 EUR per year."
)


def run(question, candidates, **kw):
    pipe = kw.pop("pipeline", None) or Pipeline()
    return pipe.pack(PackRequest(question=question, principal=kw.pop("principal", ALICE), candidates=candidates, **kw))


def state(res, cid):
    return next(d for d in res.decisions if d.chunk_id == cid)


def test_duplicated_policy_pages_admit_one_copy_with_its_source():
    cands = [
        chunk("hr#remote", POLICY_PAGE, authority=0.9, score=0.8),
        chunk("intranet-copy#remote", POLICY_PAGE, authority=0.4, score=0.81),
        chunk("wiki#remote", POLICY_PAGE.replace("500 EUR", "500 euros"), authority=0.3, score=0.79),
    ]
    res = run("How many remote days are allowed per week?", cands)
    assert res.admitted_ids == ["hr#remote"]
    assert state(res, "intranet-copy#remote").reason == "duplicate"
    assert state(res, "wiki#remote").related_id == "hr#remote"
    assert res.trace["dropped"] == {"duplicate": 2}


def test_old_and_new_version_admits_the_new_one():
    old = chunk("policy@2023#remote", POLICY_PAGE.replace("three", "two"), source="policy", version="2023.1", score=0.9)
    new = chunk("policy@2025#remote", POLICY_PAGE, source="policy", version="2025.2", score=0.85)
    res = run("How many remote days are allowed per week?", [old, new])
    assert res.admitted_ids == ["policy@2025#remote"]
    d = state(res, "policy@2023#remote")
    assert d.reason == "superseded" and d.related_id == "policy@2025#remote"


def test_what_changed_question_keeps_both_versions():
    old = chunk("policy@2023#remote", POLICY_PAGE.replace("three", "two"), source="policy", version="2023.1", score=0.9)
    new = chunk("policy@2025#remote", POLICY_PAGE, source="policy", version="2025.2", score=0.85)
    res = run("What changed in the remote work policy since version 2023?", [old, new])
    assert res.trace["query_class"] == "history"
    assert set(res.admitted_ids) == {"policy@2023#remote", "policy@2025#remote"}


def test_question_that_needs_two_documents_keeps_the_bridge_under_a_tight_budget():
    # the second chunk never mentions audit logs, yet it is half of the answer
    a = chunk(
        "audit#export", "Audit log export writes to the sink owned by the harbor-audit service account.", score=0.9
    )
    b = chunk("accounts#svc", "Service accounts are created by the installer; harbor-audit has uid 2001.", score=0.2)
    noise = [
        chunk(f"n#{i}", f"Unrelated release note {i} about dashboards and themes. " * 6, source=f"rel{i}", score=0.5)
        for i in range(5)
    ]
    grader = FakeGrader(grades={"audit#export": 5, "accounts#svc": 4})
    res = run(
        "Which uid does audit log export write files as?",
        [a, b, *noise],
        input_limit=900,
        pipeline=Pipeline(pruner=grader),
        prune="fake",
    )
    assert set(res.admitted_ids) == {"audit#export", "accounts#svc"}
    assert all(state(res, f"n#{i}").reason == "pruned" for i in range(5))
    assert res.trace["pruner"]["strategy"] == "fake"


def test_comparison_covers_both_sides():
    cands = [
        chunk("qd#1", "Qdrant filters on payload during HNSW traversal.", source="qd", score=0.9),
        chunk("qd#2", "Qdrant payload indexes speed up filtered search in Qdrant.", source="qd2", score=0.88),
        chunk("qd#3", "In Qdrant, filtering can use a payload index or a full scan.", source="qd3", score=0.87),
        chunk("pg#1", "pgvector applies WHERE filters, then the index scan.", source="pg", score=0.3),
    ]
    res = run("Compare filtering in Qdrant vs pgvector", cands, input_limit=1400)
    assert res.trace["query_class"] == "comparison"
    assert "pg#1" in res.admitted_ids


def test_broad_list_all_request_asks_to_narrow_instead_of_tail_dropping():
    cands = [
        chunk(
            f"inc#{i}",
            f"Region eu-{i} was affected by the storage incident from morning to noon. " * 8,
            source=f"inc{i}",
            score=1 - i / 100,
        )
        for i in range(40)
    ]
    res = run("List all regions affected by the storage incident", cands, input_limit=2600)
    assert res.trace["query_class"] == "list_all"
    kinds = [f.kind for f in res.fallbacks]
    assert "ask_to_narrow" in kinds
    assert res.trace["evidence_tokens"] <= res.budget.evidence_budget
    assert all(d.reason in {"admitted", "budget", "rerank_cut"} for d in res.decisions)
    assert sum(1 for d in res.decisions if d.state == "admitted") >= 1


def test_long_conversation_eats_the_evidence_budget_but_not_the_answer_reserve():
    convo = [
        Message(role="user" if i % 2 == 0 else "assistant", content="Earlier detail about the setup. " * 30)
        for i in range(12)
    ]
    cands = [
        chunk(f"d#{i}", f"Relevant passage {i} about the setting. " * 10, source=f"d{i}", score=1 - i / 10)
        for i in range(8)
    ]
    short = run("What is the default?", cands, input_limit=3000)
    long = run("What is the default?", cands, input_limit=3000, conversation=convo)
    assert long.budget.answer_reserve == short.budget.answer_reserve == 300
    assert long.budget.conversation_tokens > 1500
    assert long.budget.evidence_budget < short.budget.evidence_budget
    assert len(long.admitted) < len(short.admitted)
    assert long.trace["evidence_tokens"] <= long.budget.evidence_budget
    total = (
        long.budget.instruction_tokens
        + long.budget.conversation_tokens
        + long.trace["evidence_tokens"]
        + long.budget.answer_reserve
    )
    assert total <= 3000


def test_authorization_change_takes_effect_on_the_next_request():
    doc = chunk("plan#q3", "The Q3 plan moves the launch to October.", score=0.9)
    pipe = Pipeline()
    first = run("When is the launch?", [doc], pipeline=pipe)
    assert first.admitted_ids == ["plan#q3"]
    moved = replace(doc, access=Access(tenant="globex"))
    second = run("When is the launch?", [moved], pipeline=pipe)
    assert second.admitted_ids == [] and state(second, "plan#q3").reason == "acl"
    assert "October" not in second.prompt and "October" not in str(second.trace)
    narrowed = replace(doc, access=Access(tenant="acme", groups=("finance",)))
    third = run("When is the launch?", [narrowed], pipeline=pipe)
    assert third.admitted_ids == []
    fourth = run(
        "When is the launch?", [narrowed], pipeline=pipe, principal=Principal(tenant="acme", groups=("finance",))
    )
    assert fourth.admitted_ids == ["plan#q3"]


def test_missing_access_label_fails_closed_and_missing_principal_is_refused():
    res = run("When?", [chunk("x#1", "text", access=None)])
    assert res.admitted_ids == [] and state(res, "x#1").detail.startswith("no access label")
    with pytest.raises(AuthorizationError):
        Pipeline().pack(PackRequest(question="q", principal=None, candidates=[]))


def test_duplicate_ids_are_rejected_with_the_field_named():
    with pytest.raises(RequestError) as ei:
        run("q", [chunk("a#1", "x"), chunk("a#1", "y")])
    assert ei.value.field == "candidates[1].id"


def test_pruner_failure_applies_on_error_and_the_trace_says_so():
    cands = [
        chunk(f"c#{i}", f"Distinct passage number {i} on topic {i}.", source=f"s{i}", score=1 - i / 10)
        for i in range(4)
    ]
    res = run(
        "topic",
        cands,
        pipeline=Pipeline(pruner=FakeGrader(fail=TimeoutError("grader timed out"))),
        prune="fake",
        prune_params={"keep_top_k": 2},
    )
    assert res.admitted_ids == ["c#0", "c#1"]
    assert res.trace["pruner"]["fallback"] == "keep_top_k"
    assert "timed out" in res.trace["pruner"]["error"]
    with pytest.raises(Exception, match="timed out"):
        run(
            "topic",
            cands,
            pipeline=Pipeline(pruner=FakeGrader(fail=TimeoutError("grader timed out"))),
            prune="fake",
            prune_params={"on_error": "raise"},
        )


def test_trace_has_a_decision_for_every_candidate_and_the_guide_fields(tmp_path):
    from admit.trace import JsonlSink

    sink = JsonlSink(tmp_path / "t.jsonl")
    cands = [chunk(f"c#{i}", f"Passage {i} text about things.", source=f"s{i}", score=i / 10) for i in range(6)]
    cands.append(chunk("other#1", "secret text of another tenant", access=Access(tenant="globex"), score=1.0))
    res = run("What about things?", cands, pipeline=Pipeline(sink=sink))
    import json

    rec = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    for key in (
        "query_class",
        "evidence_budget",
        "answer_reserve",
        "candidate_count",
        "reranked_count",
        "accepted_chunk_ids",
        "evidence_tokens",
        "dropped",
        "decisions",
        "latency_ms",
    ):
        assert key in rec
    assert [d["id"] for d in rec["decisions"]] == [c.id for c in cands]
    assert "secret" not in json.dumps(rec)
    assert rec["accepted_chunk_ids"] == res.admitted_ids
    assert rec["dropped"]["acl"] == 1


def test_kill_switch_skips_pruning(tmp_path):
    import importlib.resources as r

    body = r.files("admit.policies").joinpath("default.toml").read_text()
    p = tmp_path / "p.toml"
    p.write_text(body.replace("kill_switch = false", "kill_switch = true"))
    cands = [chunk(f"c#{i}", f"Distinct passage number {i}.", source=f"s{i}", score=1 - i / 10) for i in range(3)]
    grader = FakeGrader(default=1)
    res = run("q?", cands, pipeline=Pipeline(policies=p, pruner=grader), prune="fake")
    assert grader.calls == 0 and len(res.admitted) == 3 and res.trace["route"]["kill_switch"] is True


def test_access_label_is_rendered_in_the_envelope():
    res = run("What?", [chunk("a#1", "Some fact.", access=ACME)])
    assert 'access="internal"' in res.prompt


def test_rollout_share_routes_requests_outside_it_to_the_baseline_policy(tmp_path):
    import importlib.resources as r

    body = r.files("admit.policies").joinpath("default.toml").read_text()
    new = tmp_path / "new.toml"
    new.write_text(body.replace("rollout = 1.0", "rollout = 0.5").replace('version = "', 'version = "new-', 1))
    pipe = Pipeline(policies=new, baseline_policies=None)
    staged = Pipeline(policies=new, baseline_policies=Pipeline().policies)
    cands = [chunk("a#1", "Some fact about ports.", score=1.0)]
    seen = {"current": 0, "baseline": 0}
    for i in range(200):
        res = staged.pack(PackRequest(question="What port?", principal=ALICE, candidates=cands, request_id=f"r{i}"))
        seen[res.trace["route"]["rollout"]] += 1
        again = staged.pack(PackRequest(question="What port?", principal=ALICE, candidates=cands, request_id=f"r{i}"))
        assert again.trace["policy_version"] == res.trace["policy_version"]
    assert 70 < seen["current"] < 130 and seen["current"] + seen["baseline"] == 200
    only = pipe.pack(PackRequest(question="What port?", principal=ALICE, candidates=cands, request_id="r1"))
    assert only.trace["route"]["rollout"] == "current" and only.trace["policy_version"].startswith("new-")
