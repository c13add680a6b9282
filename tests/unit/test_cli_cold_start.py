"""``admit --help`` and ``import admit`` stay light: what they import is counted, not timed."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "admit.pipeline", "admit.security", "admit.kb", "rich", "torch", "tokenizers", "bpe_openai")


def _imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300)
    return [m for m in out.stdout.rstrip("\n").split("\n")[-1].split(",") if m]


def test_help_imports_no_heavy_module() -> None:
    code = (
        "from click.testing import CliRunner\n"
        "from admit.cli import main\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
        "assert CliRunner().invoke(main, ['search', '--help']).exit_code == 0\n"
    )
    assert _imported_after(code) == []


def test_package_import_defers_the_pipeline() -> None:
    assert "admit.pipeline" not in _imported_after("import admit")
    assert _imported_after("from admit import pack, Pipeline, PruneSettings") != []  # loaded on first use


def test_admit_pack_stays_the_function_once_the_pipeline_is_imported() -> None:
    """``from admit import Pipeline`` (or any import of the pipeline) imported the packing stage's submodule,
    ``admit/pack.py``, and the import system bound ``admit.pack`` to it: a second ``from admit import pack`` (a
    notebook cell run again) got a module, "'module' object is not callable". Checked in a fresh interpreter."""
    code = (
        "from admit import Pipeline\n"
        "import admit.pipeline\n"
        "from admit import pack\n"
        "import admit\n"
        "assert pack is admit.pipeline.pack and admit.pack is pack, pack\n"
        "from admit.pack import anchored_excerpt\n"  # the submodule is still importable by its path
        "assert callable(anchored_excerpt)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-500:]
