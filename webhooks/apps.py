"""A project's webhooks: signed POSTs when one of its audits finishes, with a delivery log."""

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Django's documented place to connect receivers: importing the module connects the
        # audit_finished receiver that queues deliveries, in every process (web and worker alike).
        from webhooks import tasks  # noqa: F401  why: models must be loaded first (Django's ready())
