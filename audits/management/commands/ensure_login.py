"""Create an admin login when the database has none, and say how to sign in and how to reset the password
(used by `make run`, which prints these lines last, once the server answers)."""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

USERNAME = "admin"
RESET_COMMAND = ".venv/bin/python manage.py changepassword {username}"


class Command(BaseCommand):
    help = "Create an 'admin' superuser with a random password if no superuser exists, and print the login."

    def handle(self, *args, **options):
        User = get_user_model()
        existing = User.objects.filter(is_superuser=True).order_by("id").first()
        if existing:
            self.stdout.write(f"Login: {existing.username} (password set earlier)")
            username = existing.username
        else:
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser(USERNAME, email="", password=password)
            self.stdout.write(f"Login created: {USERNAME} / {password}")
            username = USERNAME
        self.stdout.write(f"Forgot the password? Reset it with: {RESET_COMMAND.format(username=username)}")
