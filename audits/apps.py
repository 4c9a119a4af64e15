from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "audits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.conf import settings

        from crawler.urls import set_allowed_networks

        set_allowed_networks(settings.ALLOWED_PRIVATE_NETWORKS)
        # Connects the audit_finished receiver that queues webhook deliveries, in every process.
        import audits.webhooks  # noqa: F401
