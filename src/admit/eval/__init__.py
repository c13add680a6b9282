"""admit.eval."""
