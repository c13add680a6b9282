"""admit.testing: contract suites for the authors of stores and pruners (:mod:`~admit.testing.store_contract`,
:mod:`~admit.testing.pruner_contract`)."""
