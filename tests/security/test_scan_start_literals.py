"""The scan tries a rule's regex only where one of its start literals occurs: the same flags as ``finditer``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from admit import security

HERE = Path(__file__).parent


def _texts() -> list[str]:
    out: list[str] = []
    for name in ("injection_cases.jsonl", "injection_dev.jsonl", "injection_heldout.jsonl"):
        for line in (HERE / name).read_text("utf-8").splitlines():
            row = json.loads(line)
            out.append(f"{row.get('title', '')}\n{row['text']}")
    rng = random.Random(3)
    spliced = []
    for t in out:  # case changes, and the four non-ASCII letters a case-blind ASCII letter matches (İ ı ſ K)
        spliced += [t.upper(), t.swapcase(), t.replace("s", "\u017f"), t.replace("i", "\u0131").replace("k", "\u212a")]
        spliced.append(t.replace("I", "\u0130") + " é" * rng.randrange(3))
    return out + spliced


def test_start_literals_find_what_finditer_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts()
    fast = [security.scan(t) for t in texts]
    monkeypatch.setattr(security, "_matches", lambda pattern, norm, hay, starts: pattern.finditer(norm))
    slow = [security.scan(t) for t in texts]
    assert fast == slow
    assert sum(1 for f in slow if f) > 100  # the cases do flag


def test_every_rule_with_start_literals_starts_its_matches_with_one() -> None:
    rules_with = [(p, st) for (_, _, p), st in zip(security._RULES, security._RULE_STARTS, strict=True) if st]
    assert len(rules_with) >= 20
    for pattern, starts in rules_with:
        for alt in starts:
            assert alt.isascii() and alt.replace("'", "").isalpha(), (pattern.pattern[:60], alt)
