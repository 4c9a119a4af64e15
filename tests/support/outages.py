"""Outages of this test session's own PostgreSQL database, made from outside it: its connections cut (what
a restart does to clients), new connections refused (the server down), or every session read-only.

Only a database whose name starts with `test_` is ever touched, through the `postgres` maintenance
database: the machine's server and every other database keep running.
"""

import contextlib

import psycopg
from django.db import connection


class DatabaseOutage:
    def __init__(self):
        db = connection.settings_dict
        self.name = db["NAME"]
        if not self.name.startswith("test_"):
            raise RuntimeError(f"refusing to disturb database {self.name!r}: not a test database")
        self.dsn = dict(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname="postgres")

    def _admin(self, *statements: str) -> None:
        with psycopg.connect(**self.dsn, password=connection.settings_dict.get("PASSWORD") or None) as admin:
            admin.autocommit = True
            for statement in statements:
                admin.execute(statement)

    def cut_connections(self) -> None:
        """Terminate every session of the database (the test's own included), as a server restart does."""
        self._admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{self.name}' AND pid <> pg_backend_pid()"
        )

    def refuse_connections(self) -> None:
        self._admin(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        self.cut_connections()

    def read_only(self) -> None:
        self._admin(f'ALTER DATABASE "{self.name}" SET default_transaction_read_only = on')
        self.cut_connections()

    def restore(self) -> None:
        self._admin(
            f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true',
            f'ALTER DATABASE "{self.name}" RESET default_transaction_read_only',
        )
        self.cut_connections()  # sessions opened read-only stay read-only: make them reconnect
        with contextlib.suppress(Exception):
            connection.close()
