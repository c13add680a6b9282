"""Tool-output redaction: secret shapes redacted, benign code and config left alone (issue 26).

Runs :class:`admit.tools.Redactor.default` (``detect-secrets`` plus admit's patterns, on NFKC-normalised,
cleaned text) over ``tests/security/secret_corpus.py``: fake secrets in the shapes their issuers document, and
benign code/config. A secret counts as redacted when its value is gone from the row as rendered for the model.

    python bench/bench_redaction.py

It also runs the generated shapes of issue 32 (``secret_shapes``: random prefixes and bodies in random contexts,
base64 and look-alike letters) and counts false positives on generated UUIDs, SHA-256/MD5 digests and git SHAs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.security.secret_corpus import BENIGN, secret_cases

from admit.tools import Redactor


def main() -> None:
    redactor = Redactor.default()
    detector = "detect-secrets on" if redactor.finder is not None and redactor.finder.plugins else "admit patterns only"
    cases = secret_cases()
    t = time.perf_counter()
    missed = []
    for c in cases:
        out, _ = redactor.redact(c["row"])
        if c["secret"] in json.dumps(out, ensure_ascii=False):
            missed.append(c["kind"])
    wrong = [row for row in BENIGN if redactor.redact(row)[1]]
    ms = (time.perf_counter() - t) * 1000
    print(f"redactor: {detector}")
    print(f"secret shapes redacted: {len(cases) - len(missed)}/{len(cases)}; missed: {missed or 'none'}")
    print(f"benign rows with a redaction: {len(wrong)}/{len(BENIGN)}")
    print(f"{len(cases) + len(BENIGN)} rows in {ms:.0f} ms")
    # issue 32: shapes made by a generator (tests/security/test_worker_processes_and_deadlines.py),
    # and the look-alikes that must stay
    from collections import Counter

    from tests.security.test_worker_processes_and_deadlines import benign_shapes, secret_shapes

    gen = secret_shapes(seed=7, n=900)
    gen_missed: Counter[str] = Counter()
    for kind, text, secret in gen:
        out, _ = redactor.redact({"note": text})
        if secret in str(out["note"]):
            gen_missed[kind] += 1
    print(
        f"generated secret shapes redacted: {len(gen) - sum(gen_missed.values())}/{len(gen)}; missed by kind: "
        f"{dict(gen_missed) or 'none'}"
    )
    look = benign_shapes(seed=7, n=1000)
    kinds = ["uuid", "sha256", "git sha1", "md5", "version/date"]
    fp: Counter[str] = Counter()
    for i, text in enumerate(look):
        if redactor.redact({"note": text})[1]:
            fp[kinds[i % 5]] += 1
    print(
        f"UUIDs, hashes, git SHAs, versions redacted (false positives): {sum(fp.values())}/{len(look)} {dict(fp) or ''}"
    )


if __name__ == "__main__":
    main()
