"""Alert parts of shared screens: the unread notifications in the header, a project's failing deliveries on its
screen."""

from django import template

from alerts import selectors as alert_reads

register = template.Library()


@register.simple_tag(takes_context=True)
def notifications_unread(context) -> int:
    """The signed-in person's unread notifications (0 for anyone else)."""
    user = getattr(context.get("request"), "user", None)
    if user is None or not user.is_authenticated:
        return 0
    return alert_reads.notification_unread_count(user=user)


@register.inclusion_tag("dashboard/_alert_failures.html")
def alert_failures(project):
    """The project's last failed alert deliveries (or failed attempts waiting for a retry), with their error."""
    return {"project": project, "failures": alert_reads.alert_deliveries_failing(project=project)}
