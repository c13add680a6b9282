"""admit.backends.llms."""
