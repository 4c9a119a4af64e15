"""The alert tasks: thin wrappers over alerts.services (deliveries sent from the outbox)."""
