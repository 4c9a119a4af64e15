"""The embedded default (`make run`): SQLite and kombu's filesystem transport, no servers at all."""

import json
import os
import signal
import sqlite3
import subprocess
import uuid

import pytest
import requests

from audits.models import set_issue_id_for
from tests.support.waits import wait_until
from tests.support.web import free_port, port_answers
from tests.support.workers import REPO_ROOT, run_cli

WEB_READY_TIMEOUT_S = 60
DEEP_PAGES_AT_DEPTH_2 = (
    "from audits.models import Audit; from audits.pipeline.depth import _deep_pages_store; "
    "audit = Audit.objects.get(); audit.config = {'checks': {'thresholds': {'deep-page': {'min_depth': 2}}}}; "
    "print(_deep_pages_store(audit))"
)


pytestmark = pytest.mark.slow  # child processes: the CLI in-process, a two-process worker and the web on SQLite


@pytest.fixture
def embedded_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "TEST_", "CELERY_", "DATABASE_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        SITEWARDEN_BROKER_DIR=str(tmp_path / "broker"),
        SITEWARDEN_MEDIA_ROOT=str(tmp_path / "media"),
    )
    migrate = run_cli("migrate", "--noinput", env=env)
    assert migrate.returncode == 0, migrate.stderr
    return env


def test_cli_runs_the_whole_pipeline_in_process(small_site, embedded_env):
    base, manifest = small_site
    done = run_cli("audit", base + "/", "--max-pages", "1000", "--json", env=embedded_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["pages_crawled"] == len(manifest.expected_urls(base))
    # Finalize stored every page's counts on SQLite too (audits.pipeline.page_totals' batched path), each inlink
    # figure the sum of the page's link edges.
    with sqlite3.connect(embedded_env["DATABASE_URL"].removeprefix("sqlite:///")) as db:
        rows = db.execute(
            "SELECT c.url, c.inlinks, (SELECT COALESCE(SUM(e.link_count), 0) FROM scratchpad_linkedge e "
            "WHERE e.audit_id = c.audit_id AND e.target_url = c.url) FROM audits_pagecounts c"
        ).fetchall()
        keys = db.execute(
            "SELECT c.depth IS p.depth, c.title = p.title AND c.title_len = LENGTH(p.title), "
            "c.word_count = p.word_count, c.html FROM audits_pagecounts c JOIN audits_page p ON p.id = c.page_id "
            "WHERE p.status_code = 200 AND p.content_type = 'text/html'"
        ).fetchall()
    assert len(rows) == result["pages_crawled"]
    assert all(stored == summed for _url, stored, summed in rows) and any(stored for _url, stored, _ in rows)
    assert keys and all(all(row) for row in keys)  # and a copy of its sort keys (page_sort_keys)
    # deep-page through the depth pass's Python path (PostgreSQL writes them in one statement), run again with a
    # threshold this shallow site reaches: a row a page fetched OK with a 2xx status 2+ clicks deep, with the id
    # that statement would give it.
    rerun = run_cli("shell", "-c", DEEP_PAGES_AT_DEPTH_2, env=embedded_env)
    assert rerun.returncode == 0, rerun.stderr
    with sqlite3.connect(embedded_env["DATABASE_URL"].removeprefix("sqlite:///")) as db:
        deep_pages = db.execute(
            "SELECT url FROM audits_page WHERE depth >= 2 AND fetch_class = 'ok' AND status_code BETWEEN 200 AND 299"
        ).fetchall()
        deep_issues = db.execute("SELECT id, audit_id, page_url FROM audits_issue WHERE type = 'deep-page'").fetchall()
    assert int(rerun.stdout.split()[-1]) == len(deep_pages) > 0  # after the shell's own banner
    assert sorted(url for _id, _audit, url in deep_issues) == sorted(url for (url,) in deep_pages)
    assert all(
        uuid.UUID(issue_id) == set_issue_id_for(uuid.UUID(audit_id), url, "deep-page")
        for issue_id, audit_id, url in deep_issues
    )


def test_worker_with_two_processes_runs_chords_on_sqlite(small_site, embedded_env):
    base, manifest = small_site
    worker = subprocess.Popen(
        [str(REPO_ROOT / ".venv/bin/celery"), "-A", "config", "worker", "--concurrency", "2",
         "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO_ROOT, env=embedded_env, start_new_session=True,
    )  # fmt: skip
    try:
        done = run_cli("audit", base + "/", "--max-pages", "1000", "--json", "--no-inline", env=embedded_env)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a warm shutdown still waiting on the transport: not under test
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["pages_crawled"] == len(manifest.expected_urls(base))


def test_the_web_process_make_run_starts_shows_the_products_error_pages(embedded_env):
    """`make run`'s uvicorn command on its settings (DEBUG off by default): the sign-in page and a static file
    answer, a mistyped share link is the product's 404 page (no URL patterns), an unknown API address is
    problem JSON."""
    env = {k: v for k, v in embedded_env.items() if k != "DJANGO_DEBUG"}
    port = free_port()
    cmd = [str(REPO_ROOT / ".venv/bin/uvicorn"), "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    web = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: web.poll() is not None or port_answers(port), WEB_READY_TIMEOUT_S, "uvicorn listening")
        assert web.poll() is None, f"uvicorn exited with {web.returncode}"
        home = requests.get(base + "/", timeout=10)
        assert home.status_code == 200 and "/accounts/login/" in home.url and "Sign in" in home.text
        css = requests.get(base + "/static/sitewarden.css", timeout=10)
        assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
        mistyped = requests.get(base + "/r/mistyped-share-link/", timeout=10)
        assert mistyped.status_code == 404 and "<h1>Not found</h1>" in mistyped.text
        assert "sitewarden.css" in mistyped.text
        assert "URLconf" not in mistyped.text and "urlpatterns" not in mistyped.text
        api = requests.get(base + "/api/v1/nonexistent", timeout=10)
        assert api.status_code == 404 and api.headers["Content-Type"] == "application/problem+json"
        assert api.json()["code"] == "not_found"
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
