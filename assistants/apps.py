from django.apps import AppConfig


class AssistantsConfig(AppConfig):
    """The MCP server: Sitewarden's audits as tools and resources for AI assistants."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "assistants"
    verbose_name = "AI assistants (MCP)"
