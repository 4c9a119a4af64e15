"""Issue 24: anonymous PDF load cannot stall the web process. The web process `make run` starts (uvicorn serving
config.asgi, a child process) and a real Celery worker that prints PDFs, under 20 simultaneous anonymous requests
for one share link's report.pdf: /healthz keeps answering within 1 s (the issue's bound; nine answers in ten, and
none stalls for seconds, on a 2-core machine where Chromium prints at the same time) while they are answered and
the PDF is printed; the requests within the rate get "being prepared" (202), the excess 429, both with
Retry-After; the PDF is printed once, and later requests get that stored file."""

import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings

from audits.models import ReportPdf
from audits.sharing import share_link_create
from tests.support.waits import wait_until
from tests.support.web import asgi_server
from tests.support.workers import WorkerProcess, flush_test_broker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e, pytest.mark.browser]

BURST = 20  # simultaneous requests, as in the issue's probe
ALLOWED = 10  # REPORT_PDF_RATE_PER_LINK and _PER_CLIENT's default: 10/min
HEALTHZ_BOUND_S = 1.0  # the issue's: other requests answer within 1 s
HEALTHZ_WITHIN_BOUND_SHARE = 0.9  # of the answers: on 2 busy cores (Chromium printing) one may take a little longer
HEALTHZ_STALL_S = 3.0  # no answer slower: a web process that printed or waited for the print would stall past it
HEALTHZ_EVERY_S = 0.2
PRINT_WAIT_S = 180
WINDOW_MARGIN_S = 15  # the rate limit counts per clock minute: the burst must not straddle two


def _poll_healthz(base: str, stop: threading.Event, seen: list) -> None:
    while not stop.is_set():
        started = time.monotonic()
        try:
            status = requests.get(base + "/healthz", timeout=HEALTHZ_BOUND_S * 5).status_code
        except requests.RequestException as exc:
            status = repr(exc)
        seen.append((status, time.monotonic() - started))
        stop.wait(HEALTHZ_EVERY_S)


def test_twenty_simultaneous_pdf_requests_leave_the_web_process_answering(results, settings):
    from pypdf import PdfReader

    token = share_link_create(audit=results.audit, created_by=results.project.owner)[1]
    other_token = share_link_create(audit=results.audit, created_by=results.project.owner)[1]
    env = {"SITEWARDEN_MEDIA_ROOT": django_settings.MEDIA_ROOT, "TRUSTED_PROXY_COUNT": "1"}
    flush_test_broker()
    worker = WorkerProcess(concurrency=1, extra_env=env).start()
    stop, healthz = threading.Event(), []
    try:
        with asgi_server(**env) as base:
            url = f"{base}/r/{token}/report.pdf"
            poller = threading.Thread(target=_poll_healthz, args=(base, stop, healthz))
            poller.start()
            time.sleep(1)  # a few answers before the burst, for comparison

            if 60 - time.time() % 60 < WINDOW_MARGIN_S:
                time.sleep(60 - time.time() % 60)
            barrier = threading.Barrier(BURST)

            def ask(_):
                barrier.wait()
                return requests.get(url, headers={"X-Forwarded-For": "203.0.113.7"}, timeout=60)

            with ThreadPoolExecutor(BURST) as pool:
                burst = list(pool.map(ask, range(BURST)))
            statuses = sorted(r.status_code for r in burst)
            assert statuses == [202] * ALLOWED + [429] * (BURST - ALLOWED), statuses
            for response in burst:
                assert int(response.headers["Retry-After"]) > 0
                assert 'http-equiv="refresh"' in response.text  # a person's page tries again by itself

            stored = wait_until(
                lambda: ReportPdf.objects.filter(status__in=["ready", "failed"]).first(), PRINT_WAIT_S, "PDF printed"
            )
            assert stored.status == ReportPdf.Status.READY, stored.error
            time.sleep(1)  # /healthz after the print as well
            stop.set()
            poller.join()
            path = Path(django_settings.MEDIA_ROOT) / stored.file
            printed_at = path.stat().st_mtime_ns

            # the link used up its rate: even another address is told to wait
            refused = requests.get(url, headers={"X-Forwarded-For": "203.0.113.8"}, timeout=10)
            assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
            # another link to the same report, from other addresses: the stored file, printed once
            for n in range(3):
                response = requests.get(
                    f"{base}/r/{other_token}/report.pdf", headers={"X-Forwarded-For": f"198.51.100.{n}"}, timeout=10
                )
                assert response.status_code == 200 and response.headers["Content-Type"] == "application/pdf"
                assert response.content == path.read_bytes()
            text = " ".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(response.content)).pages)
            assert "Shop" in text and "Health score" in text
    finally:
        stop.set()
        worker.stop()
        flush_test_broker()

    assert list(ReportPdf.objects.values_list("id", "rendered_at")) == [(stored.id, stored.rendered_at)]
    assert path.stat().st_mtime_ns == printed_at
    assert len(healthz) >= 5, healthz
    assert all(status == 200 for status, _ in healthz), healthz
    elapsed = sorted(round(elapsed, 2) for _, elapsed in healthz)
    within = sum(e < HEALTHZ_BOUND_S for e in elapsed)
    assert within >= HEALTHZ_WITHIN_BOUND_SHARE * len(elapsed), elapsed
    assert elapsed[-1] < HEALTHZ_STALL_S, elapsed
