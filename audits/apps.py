from django.apps import AppConfig
from django.conf import settings

from crawler.urls import set_allowed_networks


class AuditsConfig(AppConfig):
    name = "audits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        set_allowed_networks(settings.ALLOWED_PRIVATE_NETWORKS)
