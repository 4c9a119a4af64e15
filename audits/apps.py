from django.apps import AppConfig
from django.conf import settings
from django.core import checks

from crawler import speedups
from crawler.urls import set_allowed_networks


class AuditsConfig(AppConfig):
    name = "audits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        set_allowed_networks(settings.ALLOWED_PRIVATE_NETWORKS)
        checks.register(speedups_built)


def speedups_built(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """`manage.py check` (and migrate, runserver) warns where crawler.speedups' C extension was not built: crawls
    then walk page text and sign pages in Python and numpy, the same results for ~0.9 ms more CPU a page."""
    if speedups.native is not None:
        return []
    return [
        checks.Warning(
            "crawler.speedups' C extension is not built: the page text walk and signatures run slower Python code.",
            hint="Run `make install` or `python -m crawler.speedups.build` (needs a C compiler and Python's headers).",
            id="sitewarden.W001",
        )
    ]
