"""In-app notifications: reading one marks it read; a person can mark them all read."""

from django.utils import timezone

from alerts.models import Notification


def notification_read(*, notification: Notification) -> Notification:
    """Mark it read (once: the first reading's time stays)."""
    if notification.read_at is None:
        notification.read_at = timezone.now()
        Notification.objects.filter(id=notification.id, read_at__isnull=True).update(read_at=notification.read_at)
    return notification


def notifications_read_all(*, user) -> int:
    """Mark every unread notification of the person read; returns how many were unread."""
    return Notification.objects.filter(user=user, read_at__isnull=True).update(read_at=timezone.now())
