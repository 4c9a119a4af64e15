"""docs/CHECKS.md is generated from the registry and must not be stale."""

from pathlib import Path

from audits.checks.catalogue import CATALOGUE_PATH, render_catalogue
from audits.checks.registry import CHECKS
from tests.support.workers import REPO_ROOT, run_cli


def test_catalogue_file_is_up_to_date():
    on_disk = (Path(REPO_ROOT) / CATALOGUE_PATH).read_text(encoding="utf-8")
    assert on_disk == render_catalogue(), "docs/CHECKS.md is stale: run `python manage.py write_check_catalogue`"


def test_catalogue_lists_every_registered_type_once():
    text = render_catalogue()
    for spec in CHECKS:
        assert text.count(f"| `{spec.type}` |") == 1, spec.type


def test_command_check_mode_reports_staleness(tmp_path, settings):
    settings.BASE_DIR = tmp_path
    (tmp_path / "docs").mkdir()
    stale = tmp_path / CATALOGUE_PATH
    stale.write_text("old\n", encoding="utf-8")
    from django.core.management import call_command

    try:
        call_command("write_check_catalogue", "--check")
    except SystemExit as exc:
        assert exc.code == 1
    else:
        raise AssertionError("a stale catalogue must exit 1")
    call_command("write_check_catalogue")
    assert stale.read_text(encoding="utf-8") == render_catalogue()
    call_command("write_check_catalogue", "--check")


def test_command_runs_as_a_process():
    result = run_cli("write_check_catalogue", "--check")
    assert result.returncode == 0, result.stderr
