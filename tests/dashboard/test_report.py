"""The client report (dashboard.report, dashboard.pdf, templates/dashboard/share/): a cover with the account's
branding, the score in words, new and fixed since the previous audit, and for each top issue its fix and up to 10
example URLs with their evidence, read in bounded queries. Printed by real Chromium on A4 and Letter: pypdf reads
the text back (cover, examples, counts, page numbers, branding) and pdftoppm renders the pages to look at. The
branding is part of the printed HTML, so its fingerprint: the same branding is the same stored PDF, a change is a
new one."""

import io
import shutil
import struct
import subprocess
import unicodedata
import zlib
from dataclasses import asdict
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.branding import accent_on_white, contrast_ratio, readable_text_on, report_branding_save
from accounts.models import ReportBranding
from audits.checks.score import score_breakdown
from audits.models import Audit, Page, ReportPdf
from audits.report_pdfs import report_pdf_open, report_pdf_request, report_pdf_store
from audits.segments import resolve_segment
from audits.selectors.reports import EXAMPLE_URLS, TOP_ISSUES
from audits.sharing import share_link_create
from dashboard import pdf
from dashboard.report import report_summary
from dashboard.tasks import render_report_pdf
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.factories import ProjectFactory

SHOTS = Path("/tmp/report-shots")
LONG_SEGMENT = "a-very-long-path-segment-that-a-cms-made-up-" * 3
EXTRA_PAGES = 14  # more than EXAMPLE_URLS pages with one problem, so the report lists 10 and says "4 more"

# Letter and A4 in PDF points (1/72 inch), as Chromium writes the media box (rounded).
PAPER_POINTS = {"A4": (595, 842), "Letter": (612, 792)}


def png_bytes(width: int = 8, height: int = 4, rgb: tuple = (200, 30, 30)) -> bytes:
    """A real, tiny PNG (no Pillow needed): IHDR, one IDAT of solid colour, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _text(body: bytes) -> tuple[str, list]:
    from pypdf import PdfReader

    pages = PdfReader(io.BytesIO(body)).pages
    text = " ".join((page.extract_text() or "") for page in pages)
    return " ".join(unicodedata.normalize("NFKC", text).split()), pages


def _fingerprint(audit: Audit) -> str:
    audit = Audit.objects.select_related("project").get(id=audit.id)
    return pdf.html_fingerprint(pdf.report_html(report_summary(audit=audit)))


@pytest.fixture
def client_report(results):
    """The dashboard's two audits, plus pages with long URLs missing their H1 (more than EXAMPLE_URLS of them) and
    the account's branding with a logo."""
    audit = results.audit
    for i in range(EXTRA_PAGES):
        page = make_page(audit, f"/blog/{LONG_SEGMENT}{i:02d}", title=f"Post {i}")
        make_issue(audit, page, "missing-h1", "warning")
    make_issue(
        audit,
        results.home,
        "broken-internal-link",
        "critical",
        target_url=SITE + "/old-pricing",
        status_code=404,
        anchor_text="Pricing",
        links=2,
    )
    # As finalize would: the stored score is the formula's on these rows (the fixture's own 67 is not).
    Audit.objects.filter(id=audit.id).update(pages_crawled=3 + EXTRA_PAGES)
    Audit.objects.filter(id=audit.id).update(health_score=score_breakdown(audit=audit).score)
    audit.refresh_from_db()
    report_branding_save(
        account=results.project.account,
        name="Northwind SEO Partners",
        contact="Ada Lovelace · ada@northwind.test · +44 20 7946 0000",
        accent_color="#FFD700",  # gold: white text on it would not read; the report must pick black
        paper_size=ReportBranding.PaperSize.A4,
        logo=png_bytes(),
    )
    return results


@pytest.mark.django_db
def test_the_report_context_has_examples_changes_and_branding(client_report, django_assert_max_num_queries):
    audit = client_report.audit
    with CaptureQueriesContext(connection) as queries:
        report = report_summary(audit=audit)
    top = report["top_issues"]
    example_queries = [q for q in queries.captured_queries if "LIMIT 10" in q["sql"]]
    assert len(example_queries) == len(top)  # one bounded query per top issue, whatever the audit's size
    # The section scores: two grouped queries a section, plus their choice and figures (cached once ended).
    assert len(queries.captured_queries) < len(top) + 2 * len(report["segments"]) + 17

    # Asked again (every PDF request works out the fingerprint): the comparison of the two ended audits is cached,
    # so no query joins the previous audit's issues any more (this audit has no stored figures: its counts are
    # counted; tests/audits/test_stats.py shows a completed one's report then runs only bounded reads).
    previous_hex = client_report.previous.id.hex
    assert any(previous_hex in q["sql"] and "audits_issue" in q["sql"] for q in queries.captured_queries)
    with CaptureQueriesContext(connection) as again:
        assert report_summary(audit=audit)["changes"]["new"] == report["changes"]["new"]
    assert not [q for q in again.captured_queries if previous_hex in q["sql"] and "audits_issue" in q["sql"]]
    assert len(again.captured_queries) < len(top) + 15  # the section scores were kept too

    h1 = next(t for t in top if t.type == "missing-h1")
    assert len(h1.examples) == EXAMPLE_URLS and h1.more_examples == EXTRA_PAGES - EXAMPLE_URLS
    assert all(LONG_SEGMENT in e["url"] for e in h1.examples)
    broken = next(t for t in top if t.type == "broken-page")
    assert broken.examples == [{"url": client_report.missing.url, "target": "", "detail": "Status: 404"}]
    thin = next(t for t in top if t.type == "thin-content")
    assert thin.examples[0]["detail"] == "Words: 40"
    link = next(t for t in top if t.type == "broken-internal-link")
    assert link.examples[0]["url"] == client_report.home.url  # the page the link is on, and where it points
    assert link.examples[0]["target"] == SITE + "/old-pricing" and "Pricing" in link.examples[0]["detail"]
    site = next(t for t in top if t.type == "sitemap-missing")
    assert site.examples[0]["url"] == ""  # a site-wide finding: "The whole site"

    changes = report["changes"]
    assert not changes["first"] and changes["previous"].id == client_report.previous.id
    by_type = {r["type"]: (r["new"], r["fixed"]) for r in changes["rows"]}
    # new: the meta description of /about, the thin page, the broken page and link, the missing sitemap, 14 H1s;
    # fixed: the short title of / (crawled again); the H1 of /gone is not fixed: /gone was not crawled this time
    assert by_type["title-too-short"] == (0, 1) and by_type["missing-h1"] == (EXTRA_PAGES, 0)
    assert (changes["new"], changes["fixed"]) == (5 + EXTRA_PAGES, 1)

    b = report["branding"]
    assert (b.name, b.paper_size, b.accent) == ("Northwind SEO Partners", "A4", "#ffd700")
    assert b.logo_data_uri.startswith("data:image/png;base64,")
    assert b.accent_text == "#000000" and contrast_ratio(b.accent_ink, "#ffffff") >= 4.5
    section = report["score_section"]
    breakdown = score_breakdown(audit=audit)
    assert section["score"] == breakdown.score == audit.health_score
    assert section["categories"] == [asdict(c) for c in breakdown.categories] and len(section["categories"]) > 5
    assert section["pages_without_errors"] == breakdown.pages_without_errors
    assert [row["label"] for row in report["segments"]] == ["/blog/", "Other"]  # top-level folders with pages
    assert len(top) <= TOP_ISSUES


@pytest.mark.django_db
def test_a_first_audit_says_so(owner):
    audit = finished_audit(ProjectFactory(owner=owner, name="Fresh"))
    make_issue(audit, make_page(audit, "/"), "missing-h1", "warning")
    report = report_summary(audit=audit)
    assert report["changes"]["first"] and report["changes"]["rows"] == []
    html = pdf.report_html(report)
    assert "This is the first audit of the site" in html
    assert report["branding"].name == "Sitewarden" and not report["branding"].is_set  # nothing set: defaults


def test_colours_stay_readable():
    for accent in ("#ffd700", "#ffffff", "#000000", "#1f4e79", "#777777", "#00ff00"):
        text = readable_text_on(accent)
        assert contrast_ratio(text, accent) >= 4.5, accent
        assert contrast_ratio(accent_on_white(accent), "#ffffff") >= 4.5, accent
    assert accent_on_white("#1f4e79") == "#1f4e79"  # already dark enough: unchanged


@pytest.mark.django_db
def test_the_first_page_says_the_score_in_words_without_formula_symbols(client_report):
    html = pdf.report_html(report_summary(audit=client_report.audit))
    cover = html[html.index('class="report-cover"') : html.index('class="report-summary"')]
    assert f"The site scores {client_report.audit.health_score} out of 100" in cover
    assert "Prepared by" in cover and "Northwind SEO Partners" in cover and "ada@northwind.test" in cover
    for jargon in ("×", "=", "weight", "share of crawled"):
        assert jargon not in cover.replace('="', ""), jargon
    assert "priority = severity weight" not in html  # the ranking is said in words, the score rule too


@pytest.mark.django_db
def test_the_pdf_fingerprint_follows_the_branding(client_report, django_capture_on_commit_callbacks):
    """Same audit and branding: the same fingerprint, so the same ReportPdf row (no second print). A new logo,
    colour, name or paper size: a new fingerprint (the logo is a data: URI inside the HTML)."""
    audit, account = client_report.audit, client_report.project.account
    first = _fingerprint(audit)
    with django_capture_on_commit_callbacks() as sent:
        rows = {report_pdf_request(audit=audit, fingerprint=_fingerprint(audit)).id for _ in range(3)}
    assert len(rows) == 1 and len(sent) == 1 and _fingerprint(audit) == first

    seen = {first}
    base = {"name": "Northwind SEO Partners", "contact": "", "accent_color": "#ffd700", "paper_size": "A4"}
    for change in (
        {"logo": png_bytes(rgb=(0, 0, 255))},
        {"accent_color": "#004488"},
        {"name": "Northwind Digital"},
        {"paper_size": "Letter"},
    ):
        report_branding_save(account=account, **{**base, **change})
        base.update({k: v for k, v in change.items() if k != "logo"})
        now = _fingerprint(audit)
        assert now not in seen, change
        seen.add(now)
    same = _fingerprint(audit)
    report_branding_save(account=account, **base)  # saved again unchanged: the same report
    assert _fingerprint(audit) == same
    with django_capture_on_commit_callbacks() as sent:
        report_pdf_request(audit=audit, fingerprint=same)
    assert len(sent) == 1 and ReportPdf.objects.filter(audit=audit).count() == 2  # a new row for the new look


def _pdftoppm(body: bytes, name: str) -> list[Path]:
    """The PDF's pages as PNGs (pdftoppm -png -r 60) under SHOTS, to look at."""
    tool = shutil.which("pdftoppm")
    if tool is None:
        pytest.skip("pdftoppm is not installed (apt-get install poppler-utils; `make test-tools` does it)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    source = SHOTS / f"{name}.pdf"
    source.write_bytes(body)
    for old in SHOTS.glob(f"{name}-*.png"):
        old.unlink()
    subprocess.run([tool, "-png", "-r", "60", str(source), str(SHOTS / name)], check=True, timeout=120)
    return sorted(SHOTS.glob(f"{name}-*.png"))


@pytest.mark.browser
@pytest.mark.django_db
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_the_printed_pdf_holds_the_client_report(client_report, paper):
    """Printed by the worker's task (real Chromium): cover, branding, new/fixed counts, every top issue with its
    example URLs, "Page N of M" on every page, on the account's paper."""
    audit, account = client_report.audit, client_report.project.account
    ReportBranding.objects.filter(account=account).update(paper_size=paper)
    fingerprint = _fingerprint(audit)
    render_report_pdf(str(audit.id), fingerprint)
    stored = ReportPdf.objects.get(audit=audit, fingerprint=fingerprint)
    assert stored.status == ReportPdf.Status.READY, stored.error
    with report_pdf_open(stored) as handle:
        body = handle.read()
    text, pages = _text(body)

    width, height = PAPER_POINTS[paper]
    for page in pages:
        assert (round(float(page.mediabox.width)), round(float(page.mediabox.height))) == (width, height)
    assert len(pages) >= 3
    for n in range(1, len(pages) + 1):
        assert f"Page {n} of {len(pages)}" in text, (n, text[-400:])

    cover = " ".join(unicodedata.normalize("NFKC", pages[0].extract_text()).split())
    assert "Shop" in cover and "https://site.test/" in cover
    assert audit.created_at.strftime("%-d %B %Y") in cover
    assert "Prepared by" in cover and "Northwind SEO Partners" in cover and "ada@northwind.test" in cover
    assert f"The site scores {client_report.audit.health_score} out of 100" in cover
    assert "×" not in cover and "weight" not in cover

    report = report_summary(audit=audit)
    assert f"{report['changes']['new']} new problems" in text and f"{report['changes']['fixed']} fixed" in text
    squeezed = text.replace(" ", "")  # a long URL is broken over lines: compare without the breaks
    for issue in report["top_issues"]:
        assert issue.spec.title in text, issue.type
        for example in issue.examples:
            for url in (example["url"], example["target"]):
                assert url.replace(" ", "") in squeezed, (issue.type, url)
    assert "And 4 more" in text

    shots = _pdftoppm(body, f"report-{paper}")
    assert len(shots) == len(pages)


# The printable width of each paper at 96 px an inch: the sheet less dashboard.pdf.PDF_MARGIN's 12 mm a side.
PRINT_WIDTH_PX = {"A4": round((210 - 24) / 25.4 * 96), "Letter": round((215.9 - 24) / 25.4 * 96)}


@pytest.mark.browser
@pytest.mark.django_db
def test_nothing_in_the_printed_layout_is_wider_than_the_paper(client_report):
    """The printed HTML laid out for print at each paper's printable width: no horizontal overflow, and no card,
    URL or chart reaches past the right edge (what Chromium would clip off the page)."""
    from tests.support.browser import chromium_browser

    html = pdf.report_html(report_summary(audit=client_report.audit))
    with chromium_browser() as browser:
        tab = browser.new_page()
        tab.set_content(html)
        tab.emulate_media(media="print")
        for paper, width in PRINT_WIDTH_PX.items():
            tab.set_viewport_size({"width": width, "height": 1000})
            overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, (paper, overflow)
            past = tab.evaluate(
                """(w) => [...document.querySelectorAll(
                        '.report-cover, .top-issue, .example-url, .share-chart, .change-totals li, table')]
                    .filter(e => e.getBoundingClientRect().right > w + 0.5).map(e => e.className || e.tagName)""",
                width,
            )
            assert past == [], (paper, past)
            assert tab.locator(".example-url").count() >= 10


@pytest.mark.django_db
def test_score_categories_formula_and_segments_render_when_the_context_has_them(client_report):
    """The score module's breakdown and the segments are wired in at merge: the templates already render them
    (per-category rows, the formula in words at the end, a per-segment table), and nothing when absent."""
    report = report_summary(audit=client_report.audit)
    report["score_section"].update(categories=[], formula_words="", pages_without_errors=None)
    report["segments"] = None
    bare = pdf.report_html(report)
    assert "Score per category" not in bare and "How the score is calculated" not in bare
    assert "Score per section" not in bare

    report["score_section"].update(
        categories=[
            {"category": "content", "label": "Content", "score": 72, "issues": 31},
            {"category": "links", "label": "Links", "score": 95, "issues": 2},
        ],
        formula_words="Every problem lowers the score by how serious it is and how many pages it affects.",
        pages_without_errors=12,
        error_free_percent=70.6,
    )
    report["segments"] = [{"label": "/blog/", "score": 61, "pages": 14, "issues": 14}]
    html = pdf.report_html(report)
    assert "Score per category" in html and ">Content</th>" in html and ">72</span>" in html
    assert "How the score is calculated" in html and "how many pages it affects." in html
    assert "70.6 % of the crawled pages (12 of 17) have no error" in html
    assert "Score per section of the site" in html and ">/blog/</th>" in html
    cover = html[html.index('class="report-cover"') : html.index('class="report-summary"')]
    assert "How the score is calculated" not in cover  # the formula is never on the first page


# --- segments ---------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_report_scores_each_section_of_the_site(client_report):
    report = report_summary(audit=client_report.audit)
    by_label = {row["label"]: row for row in report["segments"]}
    blog = by_label["/blog/"]  # no segments of the project's own: its top-level folders stand in
    assert blog["pages"] == EXTRA_PAGES and blog["issues"] == EXTRA_PAGES
    blog_pages = Page.objects.filter(audit=client_report.audit, url__startswith=SITE + "/blog/")
    assert blog["score"] == score_breakdown(audit=client_report.audit, pages=blog_pages).score
    html = pdf.report_html(report)
    assert "Score per section of the site" in html and ">/blog/</th>" in html


@pytest.mark.django_db
def test_a_report_read_for_a_section_shows_that_section_only(client_report):
    audit = client_report.audit
    blog = resolve_segment(audit=audit, param="/blog/")
    report = report_summary(audit=audit, segment=blog)
    assert report["pages"] == EXTRA_PAGES and report["segments"] is None
    assert [t.type for t in report["top_issues"]] == ["missing-h1"]  # the home page's broken link is not on /blog/
    examples = report["top_issues"][0].examples
    assert len(examples) == EXAMPLE_URLS and all(e["url"].startswith(SITE + "/blog/") for e in examples)
    assert report["changes"]["new"] == EXTRA_PAGES and report["changes"]["fixed"] == 0
    blog_pages = Page.objects.filter(audit=audit, url__startswith=SITE + "/blog/")
    assert report["score_section"]["score"] == score_breakdown(audit=audit, pages=blog_pages).score
    html = pdf.report_html(report)
    cover = html[html.index('class="report-cover"') : html.index('class="report-summary"')]
    assert "Section: <strong>/blog/</strong>" in cover and "Health score of the section" in cover
    assert "The section /blog/ scores" in cover
    assert pdf.html_fingerprint(html) != _fingerprint(audit)  # another report, another PDF


@pytest.mark.django_db
def test_the_shared_report_reads_a_section_and_says_when_it_does_not_exist(client, client_report):
    audit = client_report.audit
    link, token = share_link_create(audit=audit, created_by=audit.project.owner, label="client")
    url = reverse("shared-report", args=[token])
    whole = client.get(url).content.decode()
    assert f'href="{url}?segment=%2Fblog%2F"' in whole  # the sections, each a link
    blog = client.get(url, {"segment": "/blog/"})
    assert blog.status_code == 200
    page = blog.content.decode()
    assert "Section: <strong>/blog/</strong>" in page and SITE + "/old-pricing" not in page
    assert f"{reverse('shared-report-pdf', args=[token])}?segment=%2Fblog%2F" in page
    unknown = client.get(url, {"segment": "/nowhere/"})
    assert unknown.status_code == 400 and "Unknown section" in unknown.content.decode()


@pytest.mark.django_db
def test_a_section_pdf_is_stored_beside_the_whole_site_pdf(client_report, django_capture_on_commit_callbacks):
    audit = client_report.audit
    blog = resolve_segment(audit=audit, param="/blog/")
    whole = _fingerprint(audit)
    section = pdf.html_fingerprint(pdf.report_html(report_summary(audit=audit, segment=blog)))
    report_pdf_request(audit=audit, fingerprint=section, segment=blog.key)
    assert ReportPdf.objects.get(audit=audit, fingerprint=section).segment == "/blog/"
    body = b"%PDF-1.4 stand-in"
    report_pdf_store(audit=audit, fingerprint=whole, body=body, render_ms=1)
    report_pdf_store(audit=audit, fingerprint=section, body=body, render_ms=1, segment="/blog/")
    # One PDF per segment: storing the section's does not drop the whole site's, nor the other way round.
    assert set(ReportPdf.objects.filter(audit=audit).values_list("segment", "status")) == {
        ("", "ready"),
        ("/blog/", "ready"),
    }
