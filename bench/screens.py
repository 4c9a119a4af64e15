"""Screens benchmark: every dashboard screen and API list timed on a synthetic completed audit of N pages.

python -m bench.screens [--pages 10000] [--repeat 5]

The audit is bench.finalize's synthetic crawl (pages, 50 link edges a page, planted issues), finalized, so
the screens read what a real audit of that size leaves. Each URL is requested `--repeat` times in process
through Django's test client (server time: view, queries, template; no network), and the median and the
slowest are printed against the 200 ms goal. The first request of each URL warms caches and is not counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

SCREEN_BUDGET_MS = 200  # every dashboard screen and API list should answer within this on a 10,000-page audit
DEFAULT_PAGES = 10_000
DEFAULT_REPEAT = 5
CHILD_JSON_PREFIX = "SCREENS_CHILD_JSON "
CHILD_TIMEOUT_S = 1800
USERNAME = "bench-screens"


def _screens(audit, page_id, issue_type: str, last_page: int) -> list[tuple[str, str]]:
    a = f"/audits/{audit.id}"
    p = audit.project_id
    return [
        ("projects", "/"),
        ("project", f"/projects/{p}/"),
        ("overview", f"{a}/"),
        ("live (status poll)", f"{a}/live/"),
        ("issues", f"{a}/issues/"),
        ("issues by pages", f"{a}/issues/?sort=-pages"),
        ("issue evidence", f"{a}/issues/{issue_type}/"),
        ("pages", f"{a}/pages/"),
        ("pages, last page", f"{a}/pages/?page={last_page}"),
        ("pages by inlinks", f"{a}/pages/?sort=-inlinks"),
        ("pages, titles view", f"{a}/pages/?view=titles&filter=duplicate"),
        ("pages, status 404", f"{a}/pages/?status=404"),
        ("page detail", f"{a}/pages/{page_id}/"),
        ("performance", f"{a}/performance/"),
        ("events", f"{a}/events/"),
        ("compare", f"{a}/compare/"),
        ("share", f"{a}/share/"),
        ("report preview", f"{a}/report/"),
        ("API audit", f"/api/v1/audits/{audit.id}/"),
        ("API issues", f"/api/v1/audits/{audit.id}/issues/"),
        ("API issues, last page", f"/api/v1/audits/{audit.id}/issues/?page=last"),
        ("API issue summary", f"/api/v1/audits/{audit.id}/issues/summary/"),
        ("API pages", f"/api/v1/audits/{audit.id}/pages/"),
        ("API pages, last page", f"/api/v1/audits/{audit.id}/pages/?page=last"),
        ("API page detail", f"/api/v1/audits/{audit.id}/pages/{page_id}/"),
    ]


def _measure(audit_id: str, repeat: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.models import Membership
    from accounts.tokens import token_create
    from audits.models import Audit, Issue, Page
    from audits.pipeline.finalize import audit_finalize

    started = time.perf_counter()
    audit_finalize(audit_id=audit_id)
    finalize_s = time.perf_counter() - started
    audit = Audit.objects.select_related("project").get(id=audit_id)
    user, _ = get_user_model().objects.get_or_create(username=USERNAME)
    Membership.objects.get_or_create(user=user, defaults={"account_id": audit.project.account_id})
    _, plaintext = token_create(user=user, name="bench")
    page_id = Page.objects.filter(audit=audit).order_by("url").values_list("id", flat=True).first()
    issue_type = Issue.objects.filter(audit=audit, type="broken-internal-link").values_list("type", flat=True).first()
    pages = Page.objects.filter(audit=audit).count()
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    rows = []
    for name, url in _screens(audit, page_id, issue_type or "missing-title", max(1, pages // 50)):
        http = api if url.startswith("/api/") else client
        status = http.get(url).status_code  # warm-up, not counted
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            http.get(url)
            times.append((time.perf_counter() - t0) * 1000)
        rows.append({"screen": name, "url": url, "status": status, "median_ms": statistics.median(times),
                     "max_ms": max(times)})  # fmt: skip
    return {"pages": pages, "finalize_s": finalize_s, "rows": rows}


def _child_main(args) -> int:
    import django

    django.setup()
    from bench.finalize import synthetic_crawl_create, tables_analyze

    crawl = synthetic_crawl_create(pages=args.pages, seed=0, name="screens")
    tables_analyze()
    result = _measure(crawl.audit_id, args.repeat)
    print(CHILD_JSON_PREFIX + json.dumps(result), flush=True)
    return 0


def run_screens_bench(pages: int = DEFAULT_PAGES, repeat: int = DEFAULT_REPEAT) -> dict:
    from bench.finalize import _child_env, database_reset
    from bench.run import PYTHON, REPO

    database_reset()
    done = subprocess.run(
        [str(PYTHON), "-m", "bench.screens", "--child", "--pages", str(pages), "--repeat", str(repeat)],
        cwd=REPO,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(CHILD_JSON_PREFIX) and done.returncode == 0:
            return json.loads(line[len(CHILD_JSON_PREFIX) :])
    raise SystemExit(f"bench.screens child failed ({done.returncode}):\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}")


def print_screens(result: dict) -> None:
    print(f"\n== screens on a {result['pages']:,}-page audit (finalize {result['finalize_s']:.1f} s) ==")
    print(f"  {'screen':<24}{'status':>7}{'median ms':>11}{'max ms':>9}")
    over = 0
    for row in result["rows"]:
        flag = "" if row["median_ms"] <= SCREEN_BUDGET_MS else f"  over {SCREEN_BUDGET_MS} ms"
        over += bool(flag)
        print(f"  {row['screen']:<24}{row['status']:>7}{row['median_ms']:>11.0f}{row['max_ms']:>9.0f}{flag}")
    print(f"  {len(result['rows']) - over} of {len(result['rows'])} within {SCREEN_BUDGET_MS} ms (median)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(args)
    print_screens(run_screens_bench(args.pages, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
