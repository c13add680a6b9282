"""admit.kb."""
