"""admit.testing."""
