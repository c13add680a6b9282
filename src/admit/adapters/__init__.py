"""admit.adapters."""
