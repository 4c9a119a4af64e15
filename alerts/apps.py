from django.apps import AppConfig


class AlertsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "alerts"
    verbose_name = "Alerts"

    def ready(self):
        # Django's documented place to connect receivers: importing the module connects the audit_finished
        # receiver that writes an audit's alert, in every process (web and worker alike).
        from alerts import tasks  # noqa: F401  why: models must be loaded first (Django's ready())
