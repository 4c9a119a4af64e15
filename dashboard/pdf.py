"""The report as a PDF: the report's HTML, rendered here with its CSS inlined, printed by Debian's Chromium
through Playwright. The page is loaded with set_content(), JavaScript off and every request aborted except
data: URLs, so nothing leaves the process and the printed page cannot fetch anything.

Printing runs in the `dashboard.render_report_pdf` task on the `reports` queue (report_pdf_render), never in a
web request; the web process only renders the HTML to learn its fingerprint and serves what the task stored
(audits.report_pdfs)."""

import hashlib
import os
import threading
import time
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string

from audits.models import Audit
from audits.report_pdfs import report_pdf_fail, report_pdf_get, report_pdf_store
from audits.segments import UnknownSegment, resolve_segment
from audits.services import CHROMIUM_BASE_FLAGS, find_chromium
from dashboard.report import report_summary

PDF_CONCURRENT_MAX = 2  # Chromiums printing at once in one process: each takes ~150 MB
PDF_WAIT_FOR_SLOT_S = 10  # a print waits this long for a free slot, then gives up
PDF_TIMEOUT_S = 60  # launch + load + print, after which the request gives up
PDF_STEP_TIMEOUT_MS = 30_000  # Playwright's own bound on each step
PDF_STYLESHEETS = ("sitewarden.css", "sitewarden/share.css")
PDF_MARGIN = {"top": "14mm", "bottom": "16mm", "left": "12mm", "right": "12mm"}  # the footer sits in the bottom one
# "Page 3 of 12" at the foot of every page, filled in by Chromium (printToPDF's footerTemplate: its own small page,
# styles inline, fonts not inherited). The paper itself is the HTML's @page size (print.html, preferCSSPageSize), so
# the account's A4 or Letter is part of the fingerprint.
PDF_HEADER_TEMPLATE = "<span></span>"
PDF_FOOTER_TEMPLATE = (
    '<div style="width:100%;font-size:8pt;color:#57606a;text-align:center;font-family:sans-serif">'
    'Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>'
)
# On top of the product's base flags (headless is Playwright's to set): names resolve to nothing and any
# request that got past the route handler would meet a closed port on loopback, never the network.
# Chromium prints on one CPU (dashboard/bin/chromium-one-cpu, the machine's last): on a small machine its start-up
# and layout would otherwise take both cores from the web process while a burst of requests asks for the PDF
# (test_share_load: a /healthz answer took 1.05 s on a 2-core CI run).
PDF_CHROMIUM_ONE_CPU = Path(__file__).resolve().parent / "bin" / "chromium-one-cpu"
PDF_CHROMIUM_FLAGS = (
    *(f for f in CHROMIUM_BASE_FLAGS if not f.startswith("--headless")),
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--disable-quic",
)

_slots = threading.BoundedSemaphore(PDF_CONCURRENT_MAX)


class PdfUnavailable(Exception):
    """No PDF now: Chromium is missing, busy or failed. The message is for people."""


def report_css() -> str:
    """The stylesheets the report page links, to inline into the printed HTML (which may fetch nothing)."""
    parts = []
    for name in PDF_STYLESHEETS:
        path = finders.find(name) or (Path(settings.STATIC_ROOT or "") / name)
        parts.append(Path(path).read_text(encoding="utf-8"))
    return "\n".join(parts).replace("</", "<\\/")  # the CSS sits in a <style> element


def report_html(report: dict) -> str:
    """The page Chromium prints for a report (dashboard.report.report_summary): everything the PDF shows."""
    return render_to_string("dashboard/share/print.html", {"report": report, "css": report_css()})


def html_fingerprint(html: str) -> str:
    """What names a stored PDF: the sha256 of the HTML it was printed from. Any change the PDF would show (the
    project's name, the audit's figures, the account's branding — its logo is a data: URI in the HTML, its paper
    the @page size —, the template, the CSS) is a new fingerprint, so a new print."""
    return hashlib.sha256(html.encode()).hexdigest()


def report_pdf(report: dict) -> bytes:
    """The PDF of a report (dashboard.report.report_summary), printed now."""
    return html_to_pdf(report_html(report))


def report_pdf_render(*, audit_id: str, fingerprint: str, segment: str = "") -> None:
    """The `dashboard.render_report_pdf` task's work: print what the audit's report shows now and store it
    (audits.report_pdfs). The report may have changed since a request asked for `fingerprint`: what is printed is
    stored under its own fingerprint, which drops the older rows; a PDF already stored is not printed again.
    `segment`: the ?segment= value the report was asked for (audits.segments); a segment gone since is recorded
    as the reason the PDF could not be made."""
    audit = Audit.objects.select_related("project").filter(id=audit_id).first()
    if audit is None or not audit.is_finished:
        return
    try:
        chosen = resolve_segment(audit=audit, param=segment)
    except UnknownSegment as exc:
        report_pdf_fail(audit=audit, fingerprint=fingerprint, error=str(exc), segment=segment)
        return
    html = report_html(report_summary(audit=audit, segment=chosen))
    current = html_fingerprint(html)
    if report_pdf_get(audit=audit, fingerprint=current) is not None:
        return  # a duplicate message, or two requests that asked before and after a change
    started = time.monotonic()
    try:
        body = html_to_pdf(html)
    except PdfUnavailable as exc:
        for failed in {current, fingerprint}:
            report_pdf_fail(audit=audit, fingerprint=failed, error=str(exc), segment=segment)
        return
    render_ms = round((time.monotonic() - started) * 1000)
    report_pdf_store(audit=audit, fingerprint=current, body=body, render_ms=render_ms, segment=segment)


def _abort_unless_data(route) -> None:
    if route.request.url.startswith("data:"):
        route.continue_()
    else:
        route.abort()


def _print(html: str, out: dict) -> None:
    try:
        _print_with_chromium(html, out)
    finally:
        _slots.release()  # here, not in the request: a print that outlived its request still holds its slot


def _print_with_chromium(html: str, out: dict) -> None:
    # why: imported on use, so a web process that never prints never loads Playwright
    from playwright.sync_api import Error, sync_playwright

    path, why = find_chromium()
    if path is None:
        out["error"] = why
        return
    args = list(PDF_CHROMIUM_FLAGS)
    if "--no-sandbox" not in args:
        # Containers seldom allow Chromium's sandbox; the page is our own escaped HTML with no script and no
        # network, so there is nothing for the sandbox to hold in.
        args.append("--no-sandbox")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(PDF_CHROMIUM_ONE_CPU),
                env={**os.environ, "SITEWARDEN_PDF_CHROMIUM": path},
                args=args,
                timeout=PDF_STEP_TIMEOUT_MS,
            )
            try:
                context = browser.new_context(java_script_enabled=False, offline=True)
                context.set_default_timeout(PDF_STEP_TIMEOUT_MS)
                context.route("**/*", _abort_unless_data)
                page = context.new_page()
                page.set_content(html, wait_until="load")
                page.emulate_media(media="print")
                out["pdf"] = page.pdf(
                    print_background=True,
                    margin=PDF_MARGIN,
                    prefer_css_page_size=True,
                    display_header_footer=True,
                    header_template=PDF_HEADER_TEMPLATE,
                    footer_template=PDF_FOOTER_TEMPLATE,
                )
            finally:
                browser.close()
    except Error as exc:
        out["error"] = f"Chromium could not print the report: {str(exc).splitlines()[0][:200]}"


def html_to_pdf(html: str) -> bytes:
    """Print HTML to PDF in a thread of its own: Playwright's sync API refuses to run on a thread that has an
    event loop (a test's browser, an ASGI server), and the thread bounds the time a print can take."""
    if not _slots.acquire(timeout=PDF_WAIT_FOR_SLOT_S):
        raise PdfUnavailable("Other reports are being printed right now; try again in a minute.")
    out: dict = {}
    worker = threading.Thread(target=_print, args=(html, out), name="report-pdf", daemon=True)
    try:
        worker.start()
    except BaseException:
        _slots.release()
        raise
    worker.join(PDF_TIMEOUT_S)
    if worker.is_alive():
        raise PdfUnavailable("Printing the report took too long; try again.")
    if "pdf" not in out:
        raise PdfUnavailable(out.get("error") or "Chromium could not print the report.")
    return out["pdf"]
