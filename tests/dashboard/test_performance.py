"""The performance screen renders Lighthouse: scores, Core Web Vitals with Google's verdicts, the top
opportunities and diagnostics parsed when the run was stored, and the JSON report stays downloadable.

The report is a real Lighthouse 12.8.2 run (tests/dashboard/fixtures/lighthouse_report_mobile.json)."""

import json
from pathlib import Path

import pytest
from django.urls import reverse

from audits.models import LighthouseResult
from audits.pipeline.lighthouse import parse_report
from dashboard.pages import VITALS, vital_verdict
from tests.dashboard.conftest import finished_audit, make_page
from tests.factories import LighthouseResultFactory, ProjectFactory

REPORT = Path(__file__).parent / "fixtures" / "lighthouse_report_mobile.json"


@pytest.fixture
def measured(owner, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    audit = finished_audit(ProjectFactory(owner=owner, name="Perf"), config={"lighthouse": True})
    page = make_page(audit, "/")
    parsed = parse_report(json.loads(REPORT.read_text()))
    rel = f"lighthouse/{audit.id}/mobile.json"
    (tmp_path / "media" / rel).parent.mkdir(parents=True)
    (tmp_path / "media" / rel).write_bytes(REPORT.read_bytes())
    fields = {k: v for k, v in parsed.items() if k not in ("status", "error", "cls")}
    fields["cls_score"] = parsed["cls"]
    mobile = LighthouseResultFactory(
        audit=audit, page=page, url=page.url, strategy="mobile", report_path=rel, report_bytes=REPORT.stat().st_size,
        **fields,
    )  # fmt: skip
    LighthouseResultFactory(
        audit=audit, page=page, url=page.url, strategy="desktop", status="failed", error="NO_FCP: page blank",
        performance=None, lcp_ms=None, cls_score=None,
    )  # fmt: skip
    return audit, mobile


def test_parse_report_keeps_a_small_summary_of_the_real_report():
    parsed = parse_report(json.loads(REPORT.read_text()))
    assert parsed["fcp_ms"] == 3812 and parsed["lcp_ms"] == 23703 and parsed["tbt_ms"] == 1580
    summary = parsed["summary"]
    savings = [o["savings_ms"] for o in summary["opportunities"]]
    assert savings == sorted(savings, reverse=True) and len(savings) == 5
    assert summary["opportunities"][0]["title"] == "Serve images in next-gen formats"
    assert {d["id"] for d in summary["diagnostics"]} >= {"bootup-time", "mainthread-work-breakdown"}
    assert all(d["score"] < 0.9 for d in summary["diagnostics"])
    assert len(json.dumps(summary)) < 3000  # a small column, not the report again


def test_performance_screen_renders_scores_vitals_verdicts_and_opportunities(owner_client, measured):
    audit, mobile = measured
    response = owner_client.get(reverse("audits:audit-performance", args=[audit.id]))
    assert response.status_code == 200
    (sampled,) = response.context["sampled"]
    mobile_run, desktop_run = sampled["runs"]
    assert mobile_run["result"].strategy == "mobile" and desktop_run["result"].status == "failed"
    verdicts = {m["vital"].label: (m["value"], m["verdict"]) for m in mobile_run["vitals"]}
    assert verdicts == {
        "LCP": ("23.7 s", "poor"),
        "CLS": ("0", "good"),
        "TBT": ("1.6 s", "poor"),
        "FCP": ("3.8 s", "poor"),
        "TTFB": ("1 ms", "good"),
    }  # INP is left out: a lab run has no interaction, TBT stands in
    scores = {s["label"]: (s["value"], s["verdict"]) for s in mobile_run["scores"]}
    assert scores["Performance"] == (38, "poor") and scores["Best practices"] == (93, "good")
    html = response.content.decode()
    assert 'class="verdict verdict-poor">Poor<' in html and 'class="verdict verdict-good">Good<' in html
    assert "Serve images in next-gen formats" in html and "Reduce JavaScript execution time" in html
    assert "Run failed: NO_FCP: page blank" in html
    report_url = reverse("audits:lighthouse-report", args=[audit.id, mobile.id])
    assert report_url in html
    assert b"lighthouseVersion" in b"".join(owner_client.get(report_url).streaming_content)


@pytest.mark.parametrize(
    "label, value, verdict",
    [
        ("LCP", 2500, "good"),
        ("LCP", 2501, "needs-improvement"),
        ("LCP", 4000, "needs-improvement"),
        ("LCP", 4001, "poor"),
        ("CLS", 0.1, "good"),
        ("CLS", 0.25, "needs-improvement"),
        ("CLS", 0.26, "poor"),
        ("INP", 200, "good"),
        ("INP", 501, "poor"),
        ("FCP", 1800, "good"),
        ("FCP", 3001, "poor"),
        ("TBT", None, ""),
    ],
)
def test_vital_verdicts_use_google_s_thresholds(label, value, verdict):
    vital = next(v for v in VITALS if v.label == label)
    assert vital_verdict(vital, value) == verdict


def test_a_stored_run_keeps_its_summary(measured):
    _, mobile = measured
    mobile.refresh_from_db()
    assert LighthouseResult.objects.get(id=mobile.id).summary["opportunities"][0]["id"] == "modern-image-formats"


def test_sampled_pages_side_by_side_one_row_per_page_and_device(owner_client, measured):
    audit, mobile = measured
    other = make_page(audit, "/pricing")
    LighthouseResultFactory(
        audit=audit, page=other, url=other.url, strategy="desktop", performance=97, accessibility=88,
        best_practices=100, seo=45, lcp_ms=1200, cls_score=0.3, tbt_ms=150, fcp_ms=900, ttfb_ms=2000,
    )  # fmt: skip
    response = owner_client.get(reverse("audits:audit-performance", args=[audit.id]))
    comparison = response.context["comparison"]
    assert [v.label for v in comparison["vitals"]] == ["LCP", "CLS", "TBT", "FCP", "TTFB"]  # no lab INP
    rows = {(r["page"]["url"], r["result"].strategy): r for r in comparison["rows"]}
    assert set(rows) == {(mobile.url, "mobile"), (other.url, "desktop")}  # the failed run has no row
    pricing = rows[(other.url, "desktop")]
    assert [(s["value"], s["verdict"]) for s in pricing["scores"]] == [
        (97, "good"), (88, "needs-improvement"), (100, "good"), (45, "poor"),
    ]  # fmt: skip
    assert [(c["value"], c["verdict"]) for c in pricing["vitals"]] == [
        ("1.2 s", "good"), ("0.3", "poor"), ("150 ms", "good"), ("900 ms", "good"), ("2.0 s", "poor"),
    ]  # fmt: skip
    html = response.content.decode()
    assert "Sampled pages side by side" in html
    assert reverse("audits:lighthouse-report-html", args=[audit.id, mobile.id]) in html


def test_the_html_report_is_lighthouse_s_own_under_a_sandbox(owner_client, measured, client, stranger, settings):
    audit, mobile = measured
    url = reverse("audits:lighthouse-report-html", args=[audit.id, mobile.id])
    response = owner_client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "text/html; charset=utf-8"
    body = b"".join(response.streaming_content).decode()
    assert "__LIGHTHOUSE_JSON__" in body and '"lighthouseVersion":"12.8.2"' in body  # the renderer's page
    csp = response["Content-Security-Policy"]
    assert csp.startswith("sandbox allow-scripts") and "allow-same-origin" not in csp
    assert "default-src 'none'" in csp and "frame-ancestors 'self'" in csp
    assert (Path(settings.MEDIA_ROOT) / mobile.report_path).with_suffix(".html").is_file()  # rendered once, kept
    assert b"".join(owner_client.get(url).streaming_content).decode() == body
    client.force_login(stranger)
    assert client.get(url).status_code == 404
