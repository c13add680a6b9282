"""admit.service."""
