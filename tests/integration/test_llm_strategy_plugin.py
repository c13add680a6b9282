"""A third-party LLM strategy built on the public base (:mod:`admit.prune.llm`), registered through the
``admit.strategies`` entry point only, run by ``admit prune`` in a fresh interpreter with the shipped fake model.

Nothing private is imported by the plug-in; its spec's source modules are derived from its pruner's module (so
``admit eval``'s cache key sees the plug-in's code change), not guessed from its name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PLUGIN = '''
"""echo_llm: an LLM strategy that grades 5 the chunks the model names, 1 the others."""

from admit.prune.llm import LLM_PARAMS, LLMPruner, data_rules, llm_spec, parse_selection


class EchoPruner(LLMPruner):
    name = "echo_llm"

    def instructions(self, boundary, ctx):
        return "Name the chunks that answer the question.\\n" + data_rules(boundary)

    def task(self, window, ctx):
        return 'JSON only: {"keep": ["C1", ...]}'

    def schema(self, window, ctx):
        return {"type": "object", "properties": {"keep": {"type": "array"}}, "required": ["keep"]}

    def interpret(self, text, window, ctx):
        p = parse_selection(text, [r.sid for r in window])
        kept = set(p.selected)
        return {r.sid: 5 if r.sid in kept else 1 for r in window}, [], p.notes


SPEC = llm_spec(
    "echo_llm", EchoPruner, params=LLM_PARAMS, default_grid={"keep_top_k": [0]}, color="#123456",
    summary="echo_llm: the model names the chunks to keep",
)
'''

RECORD = {
    "id": "q1",
    "question": "How long is the retention of audit records?",
    "candidates": [
        {"id": "a", "text": "Audit records have a retention of 90 days."},
        {"id": "b", "text": "The cafeteria opens at eight."},
    ],
}


def test_a_third_party_llm_strategy_runs_on_the_public_base(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "echo_llm_plugin.py").write_text(PLUGIN, "utf-8")
    info = site / "admit_echo_llm-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: admit-echo-llm\nVersion: 0.1\n", "utf-8")
    (info / "entry_points.txt").write_text("[admit.strategies]\necho_llm = echo_llm_plugin:SPEC\n", "utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)}
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps(RECORD) + "\n", "utf-8")
    check = (
        "from admit.prune import get_strategy; s = get_strategy('echo_llm'); "
        "print(s.source_modules[0], s.shows_text_to_llm)"
    )
    spec = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert spec.returncode == 0, spec.stderr
    assert spec.stdout.split() == ["echo_llm_plugin", "True"]  # derived from the pruner's module, not its name
    args = ["prune", "--input", str(src), "--output", str(out), "--prune", "echo_llm", "--llm", "fake"]
    p = subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", *args, "--set", "keep_top_k=0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    (row,) = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert row["strategy"] == "echo_llm"
    # the fake model answers "{}": the plug-in's parser finds no ids and the base applies on_error (keep the top
    # ranked): the prompt was built, the model called, its reply parsed by the plug-in's own interpret
    assert "no list of chunk ids" in row["error"] and "'{}'" in row["error"], row
    assert row["fallback"] == "keep_top_k" and row["kept"] == ["a"], row
