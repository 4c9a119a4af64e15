from django.apps import AppConfig


class ScratchpadConfig(AppConfig):
    name = "scratchpad"
    default_auto_field = "django.db.models.BigAutoField"
