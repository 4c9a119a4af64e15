"""Signals other parts of the product (webhooks, telemetry) listen to."""

from django.dispatch import Signal

# Sent once when an audit reaches completed, failed or cancelled, after the change is committed.
# Keyword arguments: audit, reconciled_by (None, "lazy" or "watchdog"), error_code, pages_crawled, duration_s.
audit_finished = Signal()
