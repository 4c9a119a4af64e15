"""The Lighthouse phase: URL templates, sampling, tool discovery, one real Lighthouse run on 127.0.0.1,
failed runs, and idempotent results and issues (with a stand-in CLI that writes a canned report)."""

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from audits.models import Audit, Issue, LighthouseResult, Page, page_id_for
from audits.pipeline import lighthouse
from audits.pipeline.lighthouse import (
    LIGHTHOUSE_BIN_ENV,
    LIGHTHOUSE_MAX_PAGES,
    find_chromium,
    find_lighthouse,
    lighthouse_run_for_audit,
    parse_report,
    sample_pages,
    url_template,
)
from bench.serve import free_port, serve_site
from tests.factories import AuditFactory
from tests.support.waits import wait_until

pytestmark = pytest.mark.django_db

_LIGHTHOUSE_CMD, _LIGHTHOUSE_WHY = find_lighthouse()
_CHROMIUM, _CHROMIUM_WHY = find_chromium()
requires_lighthouse = pytest.mark.skipif(
    _LIGHTHOUSE_CMD is None or _CHROMIUM is None,
    reason=f"real Lighthouse run needs the CLI and Chromium (make lighthouse-install): "
    f"{_LIGHTHOUSE_WHY if _LIGHTHOUSE_CMD is None else _CHROMIUM_WHY}",
)

TEST_PAGE_HTML = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sitewarden Lighthouse test page</title>
  <meta name="description" content="A small static page the Sitewarden test suite serves to Lighthouse.">
</head>
<body>
  <h1>A page for Lighthouse</h1>
  <p>Some text so the page has content to paint, and a picture below it.</p>
  <img src="/square.svg" alt="A red square" width="120" height="120">
</body>
</html>
"""
SQUARE_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="120">'
    '<rect width="120" height="120" fill="#c00"/></svg>'
)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


def make_page(audit, url, *, depth=1, status=200, indexable=True, content_type="text/html; charset=utf-8"):
    return Page.objects.create(
        id=page_id_for(audit.id, url),
        audit=audit,
        url=url,
        status_code=status,
        fetch_class=Page.FetchClass.OK,
        content_type=content_type,
        depth=depth,
        is_indexable=indexable,
    )


# --- url_template ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "template"),
    [
        ("https://x.test/", "https://x.test/"),
        ("https://x.test", "https://x.test/"),
        ("https://X.Test/About", "https://x.test/About"),
        ("https://x.test/products/123", "https://x.test/products/{id}"),
        ("https://x.test/products/123/", "https://x.test/products/{id}/"),
        ("https://x.test/products/123.html", "https://x.test/products/{id}.html"),
        ("https://x.test/u/550e8400-e29b-41d4-a716-446655440000", "https://x.test/u/{uuid}"),
        ("https://x.test/u/550E8400E29B41D4A716446655440000", "https://x.test/u/{uuid}"),
        ("https://x.test/news/2024-01-31", "https://x.test/news/{date}"),
        ("https://x.test/news/20240131", "https://x.test/news/{date}"),
        ("https://x.test/news/20241399", "https://x.test/news/{id}"),  # not a date: a number
        ("https://x.test/blog/2024/01/31/my-first-post", "https://x.test/blog/{date}/{slug}"),
        ("https://x.test/blog/2024/1/my-first-post", "https://x.test/blog/{date}/{slug}"),
        ("https://x.test/archive/2024/02/", "https://x.test/archive/{date}/"),
        ("https://x.test/blog/how-to-audit-a-site", "https://x.test/blog/{slug}"),
        ("https://x.test/phones/iphone-15-review", "https://x.test/phones/{slug}"),
        ("https://x.test/post-42", "https://x.test/{slug}"),
        ("https://x.test/about-us", "https://x.test/about-us"),  # one hyphen, no digits: a fixed word
        ("https://x.test/api/v2", "https://x.test/api/v2"),
        ("https://x.test/Big-Title-Case-Words", "https://x.test/Big-Title-Case-Words"),
        ("https://x.test/search?q=shoes&page=2", "https://x.test/search"),
        ("https://x.test/c/12/items/34?sort=asc#top", "https://x.test/c/{id}/items/{id}"),
        ("http://127.0.0.1:8000/p/7", "http://127.0.0.1:8000/p/{id}"),
    ],
)
def test_url_template(url, template):
    assert url_template(url) == template


# --- sample_pages ------------------------------------------------------------------------------------


def test_sample_pages_start_page_first_then_one_per_template_shallowest_first():
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/")
    make_page(audit, "https://x.test/blog/b-post-two-here", depth=2)
    make_page(audit, "https://x.test/blog/a-post-one-here", depth=2)
    make_page(audit, "https://x.test/blog/a-deep-one-here", depth=1)  # shallowest of {slug}: chosen
    make_page(audit, "https://x.test/p/2", depth=3)
    make_page(audit, "https://x.test/p/1", depth=3)  # same depth: the smaller URL
    make_page(audit, "https://x.test/about", depth=1)
    make_page(audit, "https://x.test/sitemap-only", depth=None)  # no depth: after every linked page
    make_page(audit, "https://x.test/", depth=0)
    make_page(audit, "https://x.test/noindex", depth=1, indexable=False)
    make_page(audit, "https://x.test/gone", depth=1, status=404, indexable=False)
    make_page(audit, "https://x.test/moved", depth=1, status=301, indexable=False)
    make_page(audit, "https://x.test/file.pdf", depth=1, content_type="application/pdf")

    sample = sample_pages(audit)

    assert [p.url for p in sample] == [
        "https://x.test/",
        "https://x.test/about",
        "https://x.test/blog/a-deep-one-here",
        "https://x.test/p/1",
        "https://x.test/sitemap-only",
    ]
    assert all(isinstance(p, Page) for p in sample)
    assert sample_pages(audit) == sample  # deterministic


def test_sample_pages_caps_at_max_pages_and_finds_the_start_page_anywhere():
    audit = AuditFactory(start_url="https://x.test/home", site_url="https://x.test/home")
    for i in range(30):
        make_page(audit, f"https://x.test/section{i:02d}/page", depth=1)
    make_page(audit, "https://x.test/home", depth=None)  # the start page, even if it sorts last

    sample = sample_pages(audit)

    assert len(sample) == LIGHTHOUSE_MAX_PAGES
    assert sample[0].url == "https://x.test/home"
    assert [p.url for p in sample[1:]] == [f"https://x.test/section{i:02d}/page" for i in range(9)]


def test_sample_pages_of_an_audit_without_indexable_pages_is_empty():
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/")
    make_page(audit, "https://x.test/", depth=0, indexable=False)
    assert sample_pages(audit) == []


# --- parse_report ------------------------------------------------------------------------------------


def test_parse_report_scores_metrics_and_runtime_error():
    report = canned_report(performance=0.876, lcp_ms=1234.6, cls=0.01234, inp_ms=None)
    report["audits"]["experimental-interaction-to-next-paint"] = {"numericValue": 88.2}
    parsed = parse_report(report)
    assert parsed["status"] == "ok"
    assert (parsed["performance"], parsed["accessibility"], parsed["best_practices"], parsed["seo"]) == (
        88,
        90,
        100,
        92,
    )
    assert (parsed["lcp_ms"], parsed["cls"], parsed["tbt_ms"], parsed["inp_ms"], parsed["ttfb_ms"]) == (
        1235,
        0.0123,
        150,
        88,
        12,
    )

    del report["audits"]["experimental-interaction-to-next-paint"]
    assert parse_report(report)["inp_ms"] is None  # lab runs usually have no INP

    failed = parse_report({"runtimeError": {"code": "NO_FCP", "message": "x" * 2000}, "categories": {}})
    assert failed["status"] == "failed"
    assert failed["error"].startswith("NO_FCP: xxx")
    assert len(failed["error"]) <= 500
    assert failed["performance"] is None


# --- tools missing: the phase is skipped with a note --------------------------------------------------


def test_missing_chromium_skips_the_phase_with_a_note(monkeypatch, tmp_path):
    monkeypatch.setenv("CHROME_PATH", str(tmp_path / "no-chromium-here"))
    audit = AuditFactory(config={"lighthouse": True})
    make_page(audit, audit.start_url, depth=0)

    lighthouse_run_for_audit(audit=audit)

    audit.refresh_from_db()
    assert audit.lighthouse_note.startswith("Skipped: Chromium not found")
    assert "apt-get install chromium" in audit.lighthouse_note
    assert not LighthouseResult.objects.filter(audit=audit).exists()
    assert audit.status == Audit.Status.RUNNING


def test_missing_lighthouse_skips_the_phase_with_a_note(monkeypatch, tmp_path):
    monkeypatch.setenv(LIGHTHOUSE_BIN_ENV, str(tmp_path / "no-lighthouse-here"))
    audit = AuditFactory(config={"lighthouse": True})
    make_page(audit, audit.start_url, depth=0)

    lighthouse_run_for_audit(audit=audit)

    audit.refresh_from_db()
    assert audit.lighthouse_note.startswith("Skipped: Lighthouse not found")
    assert not LighthouseResult.objects.filter(audit=audit).exists()


# --- a stand-in CLI: idempotent rows, reports, issues --------------------------------------------------


def canned_report(*, performance, lcp_ms, cls, inp_ms=None, form_factor="mobile") -> dict:
    audits = {
        "largest-contentful-paint": {"numericValue": lcp_ms},
        "cumulative-layout-shift": {"numericValue": cls},
        "total-blocking-time": {"numericValue": 150.0},
        "server-response-time": {"numericValue": 12.3},
    }
    if inp_ms is not None:
        audits["interaction-to-next-paint"] = {"numericValue": inp_ms}
    return {
        "lighthouseVersion": "stand-in",
        "configSettings": {"formFactor": form_factor},
        "categories": {
            "performance": {"score": performance},
            "accessibility": {"score": 0.9},
            "best-practices": {"score": 1},
            "seo": {"score": 0.92},
        },
        "audits": audits,
    }


@pytest.fixture
def fake_cli(tmp_path, monkeypatch):
    """A stand-in `lighthouse` executable: writes a slow, shifting page's report; a URL with "crash" fails,
    one with "slow" hangs after starting a detached "browser" (as chrome-launcher does)."""
    script = tmp_path / "fake-lighthouse"
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""
            import json, sys
            args = sys.argv[1:]
            url = args[0]
            out = next(a.split("=", 1)[1] for a in args if a.startswith("--output-path="))
            assert "--output=json" in args and "--quiet" in args, args
            assert any(a.startswith("--chrome-flags=") and "--user-data-dir=" in a for a in args), args
            if "slow" in url:  # a hung run: ignores SIGINT, and its "browser" sits in its own session
                import signal, subprocess
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                flags = next(a for a in args if a.startswith("--chrome-flags="))
                browser = subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(60)", flags], start_new_session=True
                )
                open({str(tmp_path / "browser.pid")!r}, "w").write(str(browser.pid))
                import time; time.sleep(60)
            if "crash" in url:
                print("Runtime error encountered: boom", file=sys.stderr)
                sys.exit(1)
            if "held" in url:  # a run held up until the test lets it answer
                import os, time
                open({str(tmp_path / "held")!r}, "a").write(url)
                while not os.path.exists({str(tmp_path / "release")!r}):
                    time.sleep(0.05)
            report = {json.dumps(canned_report(performance=0.31, lcp_ms=4100.0, cls=0.25))}
            report["configSettings"]["formFactor"] = "desktop" if "--preset=desktop" in args else "mobile"
            report["requestedUrl"] = url
            with open(out, "w") as fh:
                json.dump(report, fh)
            """
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(LIGHTHOUSE_BIN_ENV, str(script))
    monkeypatch.setenv("CHROME_PATH", "/bin/true")  # found, never started by the stand-in
    return script


def test_results_reports_and_issues_are_stored_and_a_rerun_leaves_the_same_rows(fake_cli, media_root):
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/", config={"lighthouse": True})
    home = make_page(audit, "https://x.test/", depth=0)
    make_page(audit, "https://x.test/crash/page", depth=1)

    lighthouse_run_for_audit(audit=audit)
    first = {
        r.id: (r.status, r.performance, r.lcp_ms, r.report_path, r.report_bytes)
        for r in LighthouseResult.objects.filter(audit=audit)
    }
    first_issues = {i.id: (i.type, i.page_url, i.details) for i in Issue.objects.filter(audit=audit)}
    lighthouse_run_for_audit(audit=audit)

    rows = {r.strategy + " " + r.url: r for r in LighthouseResult.objects.filter(audit=audit)}
    assert set(rows) == {
        "mobile https://x.test/",
        "desktop https://x.test/",
        "mobile https://x.test/crash/page",
        "desktop https://x.test/crash/page",
    }
    ok = rows["mobile https://x.test/"]
    assert (ok.status, ok.performance, ok.accessibility, ok.best_practices, ok.seo) == ("ok", 31, 90, 100, 92)
    assert (ok.lcp_ms, ok.cls, ok.tbt_ms, ok.inp_ms, ok.ttfb_ms) == (4100, 0.25, 150, None, 12)
    assert ok.page_id == home.id and ok.template == "https://x.test/"
    for strategy in ("mobile", "desktop"):
        row = rows[f"{strategy} https://x.test/"]
        report = media_root / row.report_path
        assert row.report_path == f"lighthouse/{audit.id}/{row.id}.json"
        assert report.stat().st_size == row.report_bytes > 0
        assert json.loads(report.read_text())["configSettings"]["formFactor"] == strategy

    crashed = rows["mobile https://x.test/crash/page"]
    assert crashed.status == "failed"
    assert "exited with 1" in crashed.error and "boom" in crashed.error
    assert crashed.report_path == "" and crashed.performance is None

    # a rerun: same rows, same figures, same issues
    assert {r.id: (r.status, r.performance, r.lcp_ms, r.report_path, r.report_bytes) for r in rows.values()} == first
    issues = {i.id: (i.type, i.page_url, i.details) for i in Issue.objects.filter(audit=audit)}
    assert issues == first_issues
    by_type = sorted((t, d["strategy"], d["value"], d["threshold"]) for t, _, d in issues.values())
    assert by_type == [
        ("poor-cls", "desktop", 0.25, 0.1),
        ("poor-cls", "mobile", 0.25, 0.1),
        ("poor-lcp", "desktop", 4100, 2500),
        ("poor-lcp", "mobile", 4100, 2500),
        ("poor-performance-score", "desktop", 31, 50),
        ("poor-performance-score", "mobile", 31, 50),
    ]
    assert set(Issue.objects.filter(audit=audit).values_list("severity", flat=True)) == {"warning"}

    audit.refresh_from_db()
    assert audit.last_progress_at is not None
    assert audit.lighthouse_note == "2 of 4 Lighthouse runs failed"
    assert audit.status == Audit.Status.RUNNING


def test_a_hung_run_times_out_and_leaves_no_process_behind(fake_cli, tmp_path, monkeypatch):
    monkeypatch.setattr(lighthouse, "LIGHTHOUSE_KILL_GRACE_S", 0.2)
    result = lighthouse.lighthouse_run_page("https://x.test/slow", "mobile", timeout_s=2)
    assert result["status"] == "failed"
    assert result["error"] == "Lighthouse timed out after 2 s"
    browser_pid = int((tmp_path / "browser.pid").read_text())
    # SIGKILLed: gone, or a zombie until init reaps it
    wait_until(lambda: not _running(browser_pid), 5, f"the run's browser process {browser_pid} gone", every_s=0.1)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_the_pipeline_step_runs_the_phase_only_when_asked(fake_cli):
    from audits.pipeline.finalize import audit_lighthouse

    crawled = {"start_url": "https://x.test/", "site_url": "https://x.test/", "current_phase": Audit.Phase.CRAWLING}
    asked = AuditFactory(**crawled, config={"lighthouse": True})
    not_asked = AuditFactory(**crawled, config={})
    for audit in (asked, not_asked):
        make_page(audit, "https://x.test/", depth=0)

    assert audit_lighthouse(audit_id=asked.id) is True
    assert audit_lighthouse(audit_id=not_asked.id) is True
    assert LighthouseResult.objects.filter(audit=asked, status="ok").count() == 2
    assert not LighthouseResult.objects.filter(audit=not_asked).exists()
    asked.refresh_from_db()
    assert asked.current_phase == Audit.Phase.LIGHTHOUSE and asked.status == Audit.Status.RUNNING


def test_a_late_duplicate_of_the_step_does_not_take_the_audit_back_from_finalize(fake_cli):
    from audits.pipeline.finalize import audit_lighthouse

    audit = AuditFactory(
        start_url="https://x.test/", site_url="https://x.test/", config={"lighthouse": True},
        current_phase=Audit.Phase.FINALIZING,
    )  # fmt: skip
    make_page(audit, "https://x.test/", depth=0)
    assert audit_lighthouse(audit_id=audit.id) is False  # no second finalize either
    audit.refresh_from_db()
    assert audit.current_phase == Audit.Phase.FINALIZING
    assert not LighthouseResult.objects.filter(audit=audit).exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_audit_moved_on_to_finalize_writes_nothing(fake_cli, tmp_path):
    """Its twin (the message handed out again) finished first and finalize took the audit: this run's answers
    come too late and are not stored, nor its issues or note (audits.fencing.phase_atomic)."""
    import threading

    from django.db import connection

    from audits.pipeline.lifecycle import finalize_claim

    audit = AuditFactory(
        start_url="https://x.test/", site_url="https://x.test/", config={"lighthouse": True},
        current_phase=Audit.Phase.LIGHTHOUSE,
    )  # fmt: skip
    make_page(audit, "https://x.test/held/", depth=0)
    out = {}

    def stale_run():
        try:
            out["ran"] = lighthouse_run_for_audit(audit=audit, phase=Audit.Phase.LIGHTHOUSE)
        finally:
            connection.close()  # the thread's own

    run = threading.Thread(target=stale_run)
    run.start()
    wait_until((tmp_path / "held").exists, 60, "a Lighthouse run held up")
    assert finalize_claim(audit_id=audit.id) is not None
    (tmp_path / "release").touch()
    run.join(120)
    assert out == {"ran": False}
    audit.refresh_from_db()
    assert not LighthouseResult.objects.filter(audit=audit).exists()
    assert not Issue.objects.filter(audit=audit).exists()
    assert audit.lighthouse_note == ""


def test_report_files_are_removed_with_the_audit_s_reports(fake_cli, media_root):
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/", config={"lighthouse": True})
    make_page(audit, "https://x.test/", depth=0)
    lighthouse_run_for_audit(audit=audit)
    assert len(list((media_root / "lighthouse" / str(audit.id)).iterdir())) == 2
    lighthouse.lighthouse_reports_delete(audit_id=audit.id)
    assert not (media_root / "lighthouse" / str(audit.id)).exists()


def test_stale_lighthouse_issues_are_replaced(fake_cli):
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/", config={"lighthouse": True})
    make_page(audit, "https://x.test/", depth=0)
    lighthouse_run_for_audit(audit=audit)
    assert Issue.objects.filter(audit=audit).count() == 6

    LighthouseResult.objects.filter(audit=audit).update(performance=99, lcp_ms=900, cls=0.0)
    lighthouse.lighthouse_issues_for_audit(audit=audit)
    assert not Issue.objects.filter(audit=audit).exists()


def test_project_overrides_move_thresholds_severities_and_disable_checks(fake_cli):
    checks = {
        "thresholds": {"poor-lcp": {"max_ms": 5000}, "poor-performance-score": {"min_score": 40}},
        "severities": {"poor-cls": "critical"},
    }
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/", config={"checks": checks})
    make_page(audit, "https://x.test/", depth=0)
    lighthouse_run_for_audit(audit=audit)
    issues = {(i.type, i.details["strategy"]): i for i in Issue.objects.filter(audit=audit)}
    assert set(issues) == {
        ("poor-performance-score", "mobile"),  # 31 < 40
        ("poor-performance-score", "desktop"),
        ("poor-cls", "mobile"),
        ("poor-cls", "desktop"),
    }  # LCP 4100 ms is under the raised 5000 ms
    assert issues[("poor-cls", "mobile")].severity == "critical"
    assert issues[("poor-performance-score", "mobile")].details["threshold"] == 40

    audit.config = {"checks": {"disabled": ["poor-cls", "poor-lcp", "poor-performance-score"]}}
    audit.save()
    lighthouse.lighthouse_issues_for_audit(audit=audit)
    assert not Issue.objects.filter(audit=audit).exists()


# --- the real thing ----------------------------------------------------------------------------------


@pytest.fixture
def local_page(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(TEST_PAGE_HTML)
    (root / "square.svg").write_text(SQUARE_SVG)
    with serve_site(root) as base_url:
        yield base_url + "/"


@pytest.mark.browser
@requires_lighthouse
def test_real_lighthouse_run_on_a_local_page_and_a_closed_port(local_page, media_root):
    closed = f"http://127.0.0.1:{free_port()}/nothing-listens-here"
    audit = AuditFactory(start_url=local_page, site_url=local_page, config={"lighthouse": True})
    make_page(audit, local_page, depth=0)
    make_page(audit, closed, depth=1)

    lighthouse_run_for_audit(audit=audit)  # must not raise

    rows = {(r.url, r.strategy): r for r in LighthouseResult.objects.filter(audit=audit)}
    assert set(rows) == {(local_page, "mobile"), (local_page, "desktop"), (closed, "mobile"), (closed, "desktop")}
    for strategy in ("mobile", "desktop"):
        row = rows[(local_page, strategy)]
        assert row.status == "ok", row.error
        scores = (row.performance, row.accessibility, row.best_practices, row.seo)
        assert all(s is not None and 0 <= s <= 100 for s in scores), scores
        assert row.lcp_ms is not None and row.lcp_ms > 0
        assert row.cls is not None and row.ttfb_ms is not None
        report = media_root / row.report_path
        assert report.is_file() and report.stat().st_size == row.report_bytes > 0
        data = json.loads(report.read_bytes())
        assert data["finalDisplayedUrl"] == local_page
        assert data["configSettings"]["formFactor"] == strategy
        print(f"\nLighthouse {strategy} {local_page}: {dict(zip(('perf', 'a11y', 'bp', 'seo'), scores, strict=True))}"
              f" LCP {row.lcp_ms} ms CLS {row.cls} TBT {row.tbt_ms} ms TTFB {row.ttfb_ms} ms"
              f" in {row.duration_ms} ms")  # fmt: skip

    for strategy in ("mobile", "desktop"):
        row = rows[(closed, strategy)]
        assert row.status == "failed"
        assert row.error and len(row.error) <= 500
        assert row.performance is None

    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING
    assert audit.last_progress_at is not None
    assert audit.lighthouse_note == "2 of 4 Lighthouse runs failed"
    assert not [p for p in os.listdir(media_root / "lighthouse" / str(audit.id)) if p.endswith(".partial")]
