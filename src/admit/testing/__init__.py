"""admit.testing: contract suites for the authors of stores and pruners (:mod:`~admit.testing.store_contract`,
:mod:`~admit.testing.pruner_contract`), :func:`~admit.testing.kb.memory_kb`, a real knowledge base over the
in-process `memory://` store for tests of what sits above it, and :func:`serve_subprocess`, a real ``admit
serve`` on a free loopback port, ready, for tests and benchmarks (:mod:`~admit.testing.serve`)."""

from admit.testing.serve import serve_subprocess

__all__ = ["serve_subprocess"]
