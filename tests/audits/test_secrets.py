"""audits.secrets, the migration that encrypted the stored passwords and `manage.py rotate_secrets`: the database
holds tokens only, the code reads plain text, old rows are encrypted, rotation moves every secret to the newest
key so the old one can go, and a secret no key reads is never lost."""

import importlib
import io
import logging

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audits.models import Project
from audits.secrets import fernet_key, looks_encrypted, secret_decrypt, secret_encrypt, secret_keys
from tests.factories import ProjectFactory

PASSWORD = "s3cret-at-rest"
OLD_KEY, NEW_KEY = Fernet.generate_key().decode(), Fernet.generate_key().decode()
BEFORE, AFTER = "0020_i24_extract_event_kind", "0021_i24_creds_encrypt_passwords"


def _stored(project) -> str:
    """The password column as the database holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT auth_password FROM audits_project WHERE id = %s", [project.pk])
        return cursor.fetchone()[0]


def _store_raw(project, value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audits_project SET auth_password = %s WHERE id = %s", [value, project.pk])


def _rotate() -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("rotate_secrets", stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


# --- keys and tokens ------------------------------------------------------------------------------------


def test_a_token_reads_back_and_is_never_the_same_twice():
    first, second = secret_encrypt(PASSWORD), secret_encrypt(PASSWORD)
    assert first != second and PASSWORD not in first and looks_encrypted(first)
    assert secret_decrypt(first) == secret_decrypt(second) == PASSWORD
    assert secret_encrypt("") == "" and secret_decrypt("") == ""
    assert secret_decrypt(secret_encrypt("pässwörd")) == "pässwörd"  # Latin-1, as basic auth allows


def test_keys_default_to_ones_derived_from_the_django_secret_key(settings):
    settings.SITEWARDEN_SECRET_KEYS = []
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "current", ["previous"]
    assert secret_keys() == ("current", "previous")
    token = Fernet(fernet_key("previous")).encrypt(b"pw").decode()
    assert secret_decrypt(token) == "pw"  # written under the previous Django key, still read
    settings.SITEWARDEN_SECRET_KEYS = [NEW_KEY, "  ", "a passphrase"]
    assert secret_keys() == (NEW_KEY, "a passphrase")
    assert fernet_key(NEW_KEY) == NEW_KEY.encode()  # a Fernet key is used as it is
    assert fernet_key("a passphrase") == fernet_key("a passphrase") != fernet_key("another")  # derived, stable


def test_plain_text_does_not_look_encrypted():
    for value in ("hunter2", "gAAAAA", "x" * 200, "pässwörd", ""):
        assert not looks_encrypted(value)


# --- the column -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_database_holds_no_plain_text_password(api_client_for_password):
    project = api_client_for_password
    stored = _stored(project)
    assert PASSWORD not in stored and looks_encrypted(stored)
    assert Fernet(fernet_key(secret_keys()[0])).decrypt(stored.encode()).decode() == PASSWORD
    assert Project.objects.get(pk=project.pk).auth_password == PASSWORD  # the code reads plain text
    assert Project.objects.filter(auth_password="").count() == 0  # "" (no password) is still a lookup
    with connection.cursor() as cursor:  # nowhere in the table, whatever column
        cursor.execute("SELECT count(*) FROM audits_project WHERE audits_project::text LIKE %s", [f"%{PASSWORD}%"])
        assert cursor.fetchone()[0] == 0


@pytest.fixture
def api_client_for_password(db):
    """A project whose password went in through the API, as a person would store it."""
    from accounts.tokens import token_create
    from tests.api.conftest import bearer_client
    from tests.factories import UserFactory

    user = UserFactory()
    api = bearer_client(token_create(user=user, name="t")[1])
    created = api.post(
        "/api/v1/projects/",
        {"name": "Vault", "base_url": "http://127.0.0.1:8001/", "auth_username": "u", "auth_password": PASSWORD},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["has_auth_password"] is True and PASSWORD not in created.content.decode()
    return Project.objects.get(pk=created.json()["id"])


@pytest.mark.django_db
def test_a_secret_no_key_reads_is_absent_to_the_code_and_logged_not_raised(settings, caplog):
    settings.SITEWARDEN_SECRET_KEYS = [OLD_KEY]
    project = ProjectFactory(auth_username="u", auth_password=PASSWORD)
    settings.SITEWARDEN_SECRET_KEYS = [NEW_KEY]  # the old key dropped too early
    with caplog.at_level(logging.ERROR, logger="audits.secrets"):
        assert Project.objects.get(pk=project.pk).auth_password == ""
    assert "SITEWARDEN_SECRET_KEYS" in caplog.text and PASSWORD not in caplog.text


# --- rotation -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rotation_moves_every_password_to_the_new_key_and_the_old_key_can_go(settings):
    settings.SITEWARDEN_SECRET_KEYS = [OLD_KEY]
    projects = [ProjectFactory(auth_username="u", auth_password=f"{PASSWORD}-{n}") for n in range(3)]
    bare = ProjectFactory()
    before = [_stored(p) for p in projects]
    settings.SITEWARDEN_SECRET_KEYS = [NEW_KEY, OLD_KEY]
    assert [Project.objects.get(pk=p.pk).auth_password for p in projects] == [p.auth_password for p in projects]

    code, out, _ = _rotate()
    assert code == 0 and out.startswith("3 secret(s) re-encrypted with the newest key, 0 plain-text")
    after = [_stored(p) for p in projects]
    for old_token, new_token, project in zip(before, after, projects, strict=True):
        assert new_token != old_token
        assert Fernet(NEW_KEY).decrypt(new_token.encode()).decode() == project.auth_password
        with pytest.raises(InvalidToken):
            Fernet(OLD_KEY).decrypt(new_token.encode())
    assert _stored(bare) == ""

    settings.SITEWARDEN_SECRET_KEYS = [NEW_KEY]  # the old key dropped
    assert [Project.objects.get(pk=p.pk).auth_password for p in projects] == [p.auth_password for p in projects]


@pytest.mark.django_db
def test_rotation_encrypts_plain_text_left_over_and_keeps_what_it_cannot_read(settings):
    settings.SITEWARDEN_SECRET_KEYS = [OLD_KEY]
    lost = ProjectFactory(auth_username="u", auth_password="written-under-a-missing-key")
    lost_token = _stored(lost)
    plain = ProjectFactory(auth_username="u")
    _store_raw(plain, "left-in-plain-text")
    settings.SITEWARDEN_SECRET_KEYS = [NEW_KEY]

    code, out, err = _rotate()
    assert code == 1 and "0 secret(s) re-encrypted" in out and "1 plain-text secret(s) encrypted, 1 unreadable" in out
    assert "cannot be decrypted" in err
    assert _stored(lost) == lost_token  # untouched: adding its key back still recovers it
    assert Fernet(NEW_KEY).decrypt(_stored(plain).encode()) == b"left-in-plain-text"


def test_new_key_prints_a_fernet_key_and_changes_nothing():
    out = io.StringIO()
    call_command("rotate_secrets", "--new-key", stdout=out)
    key = out.getvalue().strip()
    assert Fernet(key) and fernet_key(key) == key.encode()


# --- the migration --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_migration_function_encrypts_a_plain_text_row_and_its_reverse_decrypts_it():
    from django.apps import apps

    migration = importlib.import_module(f"audits.migrations.{AFTER}")
    project = ProjectFactory(auth_username="u")
    _store_raw(project, "legacy-plain")
    empty = ProjectFactory()

    class Editor:  # what RunPython hands the function: only its connection is used
        pass

    editor = Editor()
    editor.connection = connection
    migration.passwords_encrypt(apps, editor)
    token = _stored(project)
    assert token != "legacy-plain" and secret_decrypt(token) == "legacy-plain" and _stored(empty) == ""
    migration.passwords_encrypt(apps, editor)  # a second run leaves tokens alone
    assert _stored(project) == token
    migration.passwords_decrypt(apps, editor)
    assert _stored(project) == "legacy-plain"


@pytest.mark.django_db(transaction=True)
def test_migrating_forward_encrypts_old_rows_and_backward_restores_them():
    executor = MigrationExecutor(connection)
    executor.migrate([("audits", BEFORE)])
    try:
        old_apps = MigrationExecutor(connection).loader.project_state([("audits", BEFORE)]).apps
        user = old_apps.get_model("auth", "User").objects.create(username="before-encryption")
        account = old_apps.get_model("accounts", "Account").objects.create(
            name="Acme", plan=old_apps.get_model("accounts", "Plan").objects.create(name="legacy")
        )
        old_project = old_apps.get_model("audits", "Project").objects.create(
            account=account, owner=user, name="Old", base_url="https://old.example/", auth_username="u",
            auth_password="stored-in-plain-text",
        )  # fmt: skip
        assert _stored(old_project) == "stored-in-plain-text"
    finally:
        # Forward to the newest migrations (AFTER among them): the models below are today's.
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    stored = _stored(old_project)
    assert looks_encrypted(stored) and "stored-in-plain-text" not in stored
    assert Project.objects.get(pk=old_project.pk).auth_password == "stored-in-plain-text"

    executor = MigrationExecutor(connection)
    executor.migrate([("audits", BEFORE)])
    try:
        assert _stored(old_project) == "stored-in-plain-text"
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
