"""`manage.py mcp --token sw_…`: the MCP server over stdio, for a desktop assistant that starts it itself.

The token is an API token (dashboard → API tokens); every tool acts as its user. It can also come from
SITEWARDEN_API_TOKEN, which keeps it out of the process list. Logs go to stderr: stdout is the protocol.
"""

import logging
import os
import sys

from django.core.management.base import BaseCommand, CommandError

from accounts.tokens import TokenRefused, token_authenticate
from assistants.identity import stdio_caller
from assistants.server import server

TOKEN_ENV = "SITEWARDEN_API_TOKEN"
BASE_URL_ENV = "SITEWARDEN_URL"


class Command(BaseCommand):
    help = "Serve the MCP server over stdio (for a desktop AI assistant), acting as the token's user."

    def add_arguments(self, parser):
        parser.add_argument("--token", default=os.environ.get(TOKEN_ENV, ""), help=f"API token (or ${TOKEN_ENV})")
        parser.add_argument(
            "--base-url",
            default=os.environ.get(BASE_URL_ENV, stdio_caller.base_url),
            help=f"Where the web process answers, for export links (or ${BASE_URL_ENV})",
        )

    def handle(self, *args, token: str, base_url: str, **options):
        if not token:
            raise CommandError(f"Give an API token: --token sw_… or ${TOKEN_ENV} (dashboard → API tokens).")
        try:
            token_authenticate(token)
        except TokenRefused as exc:
            raise CommandError(exc.detail) from None
        stdio_caller.plaintext, stdio_caller.base_url = token, base_url
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        server.run("stdio")
