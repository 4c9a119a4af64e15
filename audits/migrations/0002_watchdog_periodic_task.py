"""Once created the reconciler's watchdog periodic task. It no longer does: `manage.py install_watchdog`
(audits.schedules.watchdog_install) is the one owner of the periodic tasks, run by the release step and by
`make run`, so there is one definition to change. Kept as a no-op so the migration graph stays as it was;
a database migrated before keeps its task, and install_watchdog repairs it idempotently."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
