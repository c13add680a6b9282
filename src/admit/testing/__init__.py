"""admit.testing: contract suites for the authors of stores and pruners (:mod:`~admit.testing.store_contract`,
:mod:`~admit.testing.pruner_contract`), and :func:`~admit.testing.kb.memory_kb`, a real knowledge base over the
in-process `memory://` store for tests of what sits above it."""
