#!/usr/bin/env python
"""The complexity bar of docs/architecture.md: no function in ``src/admit`` over cyclomatic complexity 30 (radon's
count, which adds a nested function's branches to the function that holds it).

``python scripts/complexity.py`` prints every function over the bar and exits 1 when one is not in ``PENDING``,
or when a ``PENDING`` entry is no longer over it (the list only shrinks). ``scripts/check`` runs it;
``tests/unit/test_complexity.py`` runs the same walk.
"""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 30
ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "admit"

# (module under src/admit, function): why it is still over the bar, naming where it is to be split. Empty: every
# function is under the bar; an entry is for a function that cannot be split now (another branch edits its file).
PENDING: dict[tuple[str, str], str] = {}


def over(limit: int = LIMIT, root: Path = SRC) -> dict[tuple[str, str], int]:
    """Every function or method under ``root`` whose complexity is over ``limit``: (module, name) -> complexity."""
    from radon.complexity import cc_visit

    found: dict[tuple[str, str], int] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for block in cc_visit(path.read_text(encoding="utf-8")):
            blocks = [block, *getattr(block, "methods", [])]
            for b in blocks:
                if type(b).__name__ == "Function" and b.complexity > limit:
                    found[(rel, b.fullname)] = b.complexity
    return found


def problems(found: dict[tuple[str, str], int]) -> list[str]:
    """What breaks the bar: functions over it and not pending, and pending entries that are no longer over it."""
    lines = [
        f"src/admit/{m}: {f} has complexity {c} (> {LIMIT})" for (m, f), c in found.items() if (m, f) not in PENDING
    ]
    lines += [
        f"src/admit/{m}: {f} is no longer over {LIMIT}: drop it from PENDING" for m, f in PENDING if (m, f) not in found
    ]
    return lines


def main() -> int:
    """Print the functions over the bar; exit 1 when the bar is broken."""
    found = over()
    for (m, f), c in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"{c:4d}  src/admit/{m}: {f}" + ("  (pending)" if (m, f) in PENDING else ""))
    bad = problems(found)
    for line in bad:
        print(line, file=sys.stderr)
    print(f"{len(found)} over {LIMIT}, {len(bad)} breaking the bar")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
