"""Screens benchmark: every dashboard screen and API list timed on a synthetic completed audit of N pages.

python -m bench.screens [--pages 10000] [--repeat 5] [--reuse | --database sitewarden_bench_scale]

The audit is bench.finalize's synthetic crawl (pages, 50 link edges a page, planted issues), finalized, so
the screens read what a real audit of that size leaves. Its pages are narrower than crawled ones (~0.8 KB a
row against ~2.6 KB), so `--database sitewarden_bench_scale` times the screens on the real crawl bench.scale
left instead (its last audit, 100,000 pages after `python -m bench.scale --pages 100000`).

Each URL is requested `--repeat` times in process through Django's test client (server time: view, queries,
template; no network), and the median and the slowest are printed against the 200 ms goal. The first request
of each URL warms caches and is not counted. Every sortable column of the pages grid is timed both ways.

The Changes screen and its API list (issue 28) need a baseline: the audit gets an earlier completed audit of its
project as one and PageChange rows on CHANGED_SHARE of its pages (`_changes_seed`, unless finalize already wrote
changes), so they are timed on a few thousand changes at 100,000 pages.
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
SCREENS_DB_NAME = "sitewarden_bench_screens"  # its own: `make bench` drops the finalize one


SORT_KEYS = (
    "url",
    "status",
    "depth",
    "inlinks",
    "title",
    "title_len",
    "description_len",
    "h1",
    "h1_len",
    "h1_count",
    "time",
    "size",
    "words",
    "issues",
)  # fmt: skip  (every sortable column of the pages grid, audits.selectors.pages.PAGE_SORTS)
DEEP_PAGE = 1500  # "a deep page" of the grid (rows 74,951-75,000 of 100,000), capped to the last page but one
API_PAGE_ROWS = 50  # api.pagination.API_PAGE_SIZE: a list of no more has no deep page to time
CHANGED_SHARE = 0.03  # pages changed since the baseline in the synthetic audit (issue 28's Changes screen)
BASELINE_AGE_DAYS = 7  # the seeded baseline is an audit this much older
# The fields the seeded changes cycle through, each with its direction and its values before and after.
SEEDED_CHANGES = (
    ("title", "changed", "Old title of {url}", "New title of {url}, a little longer than it was"),
    ("description", "changed", "", "A description written since the last audit"),
    ("indexability", "down", "indexable", "non-indexable: noindex"),
    ("status", "changed", "200", "404"),
    ("canonical", "changed", "{url}", "{url}?ref=canonical"),
    ("words", "up", "300", "900"),
    ("h1", "changed", "Old heading", "New heading"),
)


def _screens(audit, page_id, hub_id, issue_type: str, pages: int, evidence_rows: int, cursors) -> list:
    """(name, URL) of every screen; `cursors(kind, rows_before)` gives the keyset cursor of a deep page."""
    a = f"/audits/{audit.id}"
    p = audit.project_id
    last_page = max(1, -(-pages // 50))
    deep = min(DEEP_PAGE, last_page - 1) or 1
    deep_evidence = max(1, -(-evidence_rows // 50))
    screens = [
        ("projects", "/"),
        ("project", f"/projects/{p}/"),
        ("overview", f"{a}/"),
        ("live (status poll)", f"{a}/live/"),
        ("issues", f"{a}/issues/"),
        ("issues by pages", f"{a}/issues/?sort=-pages"),
        ("issue evidence", f"{a}/issues/{issue_type}/"),
        ("issue evidence, last", f"{a}/issues/{issue_type}/?page={deep_evidence}"),
        ("pages", f"{a}/pages/"),
        (f"pages, page {deep}", f"{a}/pages/?cursor={cursors('url', (deep - 1) * 50)}"),
        ("pages, last page", f"{a}/pages/?cursor={cursors('url', (last_page - 1) * 50)}"),
    ]
    screens += [(f"pages by {key} desc", f"{a}/pages/?sort=-{key}") for key in SORT_KEYS]
    screens += [(f"pages by {key}", f"{a}/pages/?sort={key}") for key in SORT_KEYS if key != "url"]
    screens += [
        (f"pages by inlinks, p{deep}", f"{a}/pages/?sort=-inlinks&cursor={cursors('-inlinks', (deep - 1) * 50)}"),
        ("pages, titles view", f"{a}/pages/?view=titles&filter=duplicate"),
        ("pages, status 404", f"{a}/pages/?status=404"),
        ("page detail", f"{a}/pages/{page_id}/"),
        ("page detail, hub", f"{a}/pages/{hub_id}/"),
        ("hub inlinks, last", f"{a}/pages/{hub_id}/?in={cursors('hub-inlinks-last', 0)}"),
        ("performance", f"{a}/performance/"),
        ("events", f"{a}/events/"),
        ("compare", f"{a}/compare/"),
        ("share", f"{a}/share/"),
        ("report preview", f"{a}/report/"),
        ("export pages csv (start)", f"{a}/pages/export.csv"),
        ("export issues csv (start)", f"{a}/export/issues.csv"),
        ("API audit", f"/api/v1/audits/{audit.id}/"),
        ("API issues", f"/api/v1/audits/{audit.id}/issues/"),
        ("API issues, last page", f"/api/v1/audits/{audit.id}/issues/?page=last"),
        ("API issues, type filter", f"/api/v1/audits/{audit.id}/issues/?type={issue_type}"),
        ("API issue summary", f"/api/v1/audits/{audit.id}/issues/summary/"),
        ("API pages", f"/api/v1/audits/{audit.id}/pages/"),
        ("API pages, last page", f"/api/v1/audits/{audit.id}/pages/?page=last"),
        ("API pages, status 200", f"/api/v1/audits/{audit.id}/pages/?status_code=200"),
        ("API page detail", f"/api/v1/audits/{audit.id}/pages/{page_id}/"),
        ("API page detail, hub", f"/api/v1/audits/{audit.id}/pages/{hub_id}/"),
    ]
    return screens


def _change_screens(audit, cursors, segment_key: str, changes: int) -> list:
    """(name, URL) of the Changes screen and the API's changes (issue 28): the first screen, one field, a segment,
    the last keyset page (the API's: 40 `next` links deep, when it has more than one page), the summary and the
    export's start."""
    from urllib.parse import quote

    a = f"/audits/{audit.id}"
    api = f"/api/v1/audits/{audit.id}/changes/"
    last = cursors("changes-last", 0)
    screens = [
        ("changes", f"{a}/changes/"),
        ("changes, title", f"{a}/changes/?field=title"),
        ("changes, direction down", f"{a}/changes/?direction=down"),
        ("changes, last page", f"{a}/changes/?cursor={last}" if last else f"{a}/changes/"),
        ("API changes", api),
        *([("API changes, last page", f"{api}?page=last")] if changes > API_PAGE_ROWS else []),
        ("API changes, field title", f"{api}?field=title"),
        ("API change summary", f"{api}summary/"),
        ("export changes csv (start)", f"{a}/changes/export.csv"),
    ]
    if segment_key:
        screens.insert(3, ("changes, segment", f"{a}/changes/?segment={quote(segment_key)}"))
        screens.append(("API changes, segment", f"{api}?segment={quote(segment_key)}"))
    return screens


def _changes_seed(audit) -> int:
    """A baseline for the audit (an earlier completed audit of its project, without pages of its own) and PageChange
    rows on CHANGED_SHARE of its pages, cycling through SEEDED_CHANGES, with the counts finalize stores, as the
    changes stage leaves them, and the comparison with that baseline finalize stores. Nothing when the audit has
    changes already (finalize measured them, or a previous run seeded them). Returns the audit's changes."""
    from collections import Counter
    from datetime import timedelta

    from audits.comparison import comparisons_count
    from audits.models import Audit, Page, PageChange, page_change_id_for

    existing = PageChange.objects.filter(audit=audit).count()
    if existing:
        return existing
    started = (audit.started_at or audit.created_at) - timedelta(days=BASELINE_AGE_DAYS)
    baseline = Audit.objects.create(
        project=audit.project,
        start_url=audit.start_url,
        site_url=audit.site_url,
        status=Audit.Status.COMPLETED,
        current_phase=Audit.Phase.COMPLETED,
        config=audit.config,
        started_at=started,
        completed_at=started + timedelta(minutes=10),
        pages_crawled=audit.pages_crawled,
        health_score=audit.health_score,
    )
    Audit.objects.filter(id=baseline.id).update(created_at=started)
    step = max(1, round(1 / CHANGED_SHARE))
    urls = Page.objects.filter(audit=audit).order_by("url").values_list("url", flat=True)
    rows = []
    for n, url in enumerate(urls.iterator(chunk_size=5000)):
        if n % step:
            continue
        field, direction, before, after = SEEDED_CHANGES[(n // step) % len(SEEDED_CHANGES)]
        rows.append(
            PageChange(
                id=page_change_id_for(audit.id, url, field),
                audit=audit,
                baseline=baseline,
                url=url,
                field=field,
                direction=direction,
                before=before.format(url=url),
                after=after.format(url=url),
            )
        )
    PageChange.objects.bulk_create(rows, batch_size=5000)
    counts = Counter(row.field for row in rows)
    # Finalize counts the comparison with the previous audit, which the baseline now is (audits.comparison).
    Audit.objects.filter(id=audit.id).update(baseline=baseline)
    comparisons = comparisons_count(audit=Audit.objects.get(id=audit.id))
    stats = {**audit.stats, "changes": {**counts, "baseline": str(baseline.id)}, "comparisons": comparisons}
    Audit.objects.filter(id=audit.id).update(stats=stats)
    return len(rows)


def _cursor_maker(audit, hub_id):
    """Keyset cursors of deep pages, found once with an OFFSET (untimed), as a person paging there would hold."""
    from urllib.parse import quote

    from audits.models import Page
    from audits.selectors import changes as change_reads
    from audits.selectors import links as link_reads
    from audits.selectors import pages as page_reads
    from audits.selectors.pagination import keyset_cursor

    def make(kind: str, rows_before: int) -> str:
        if kind == "changes-last":  # the Changes screen's last page
            rows = change_reads.change_list(audit=audit)
            rows_before = max(0, rows.count() - change_reads.CHANGES_PER_PAGE)
            if not rows_before:
                return ""
            tag = change_reads.change_cursor_tag(audit.id)
            return quote(keyset_cursor(rows[rows_before - 1], change_reads.CHANGE_KEYSET, tag))
        if kind == "hub-inlinks-last":
            links = link_reads.page_inlinks(page=Page.objects.get(id=hub_id))
            rows_before = max(0, links.count() - link_reads.LINKS_PER_PAGE)
            if not rows_before:
                return ""
            tag = link_reads.links_cursor_tag(hub_id, "in")
            return quote(keyset_cursor(links[rows_before - 1], link_reads.INLINK_KEYSET, tag))
        if rows_before <= 0:
            return ""
        counted = link_reads.page_counts_stored(audit=audit)
        rows = page_reads.page_list(pages=Page.objects.filter(audit=audit), columns=[], sort=kind, counted=counted)
        tag = page_reads.grid_cursor_tag(audit.id, kind)
        return quote(keyset_cursor(rows[rows_before - 1], page_reads.page_keyset_columns(kind, counted), tag))

    return make


def _follow_cursor(http, url: str, hops: int) -> str:
    """The URL `hops` pages into a cursor-paginated API list (its `next` links), for a deep-page timing."""
    for _ in range(hops):
        data = http.get(url).json()
        if not data.get("next"):
            break
        url = data["next"].replace("http://127.0.0.1", "")
    return url


class _SqlTimer:
    """Wall time spent inside SQL statements (connection.execute_wrapper): on a busy machine this and the
    process's CPU time say more than the request's wall time, which includes waiting for a core."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - t0


def _get_timed(http, url: str) -> tuple[int, float, float, float]:
    """(status, wall ms, this process's CPU ms, SQL ms) of one request."""
    from django.db import connection

    timer = _SqlTimer()
    t0, c0 = time.perf_counter(), time.process_time()
    with connection.execute_wrapper(timer):
        response = http.get(url)
        if response.streaming:  # an export: time to its first chunk, which is when a download starts
            next(iter(response.streaming_content), None)
            response.close()
    wall, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    return response.status_code, wall, cpu, timer.seconds * 1000


def _measure(audit_id: str, repeat: int, *, finalize: bool = True) -> dict:
    from django.contrib.auth import get_user_model
    from django.db.models import Count
    from django.test import Client

    from accounts.models import Membership
    from accounts.tokens import token_create
    from audits.models import Audit, Issue, Page, PageCounts
    from audits.pipeline.finalize import audit_finalize
    from audits.segments import audit_top_folders

    started = time.perf_counter()
    if finalize:
        audit_finalize(audit_id=audit_id)
    finalize_s = time.perf_counter() - started
    changes = _changes_seed(Audit.objects.get(id=audit_id))
    audit = Audit.objects.select_related("project").get(id=audit_id)
    user, _ = get_user_model().objects.get_or_create(username=USERNAME)
    Membership.objects.get_or_create(user=user, defaults={"account_id": audit.project.account_id})
    _, plaintext = token_create(user=user, name="bench")
    page_id = Page.objects.filter(audit=audit).order_by("url").values_list("id", flat=True).first()
    # The page with the most inlinks: its inlinks list is the longest the page detail can show.
    hub = PageCounts.objects.filter(audit=audit).order_by("-inlinks", "url").values_list("page_id", flat=True)
    hub_id = hub.first() or page_id  # an audit without stored counts: any page
    counts = Issue.objects.filter(audit=audit).order_by().values_list("type").annotate(n=Count("id"))
    by_type = dict(counts.values_list("type", "n"))
    issue_type = max(by_type, key=by_type.get) if by_type else "missing-title"
    pages = Page.objects.filter(audit=audit).count()
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    cursors = _cursor_maker(audit, hub_id)
    screens = _screens(audit, page_id, hub_id, issue_type, pages, by_type.get(issue_type, 0), cursors)
    folders = audit_top_folders(audit=audit)
    screens += _change_screens(audit, cursors, folders[0][0] if folders else "", changes)
    rows = []
    for name, url in screens:
        http = api if url.startswith("/api/") else client
        status = _get_timed(http, url)[0]  # warm-up, not counted
        if "page=last" in url and "cursor=" in (http.get(url.split("?")[0]).json().get("next") or ""):
            # A cursor-paginated list has no last page: walk its `next` links 40 pages deep instead.
            name, url = name.replace("last page", "page 40"), _follow_cursor(http, url.split("?")[0], 40)
            status = _get_timed(http, url)[0]
        runs = [_get_timed(http, url) for _ in range(repeat)]
        rows.append({
            "screen": name, "url": url, "status": status,
            "median_ms": statistics.median(r[1] for r in runs), "max_ms": max(r[1] for r in runs),
            "cpu_ms": statistics.median(r[2] for r in runs), "sql_ms": statistics.median(r[3] for r in runs),
        })  # fmt: skip
    return {"pages": pages, "finalize_s": finalize_s, "changes": changes, "rows": rows}


def _child_main(args) -> int:
    import django

    django.setup()
    from audits.models import Audit
    from bench.finalize import synthetic_crawl_create, tables_analyze

    existing = Audit.objects.filter(status=Audit.Status.COMPLETED).order_by("-created_at").first()
    if args.reuse and existing is not None:  # the last run's audit: re-time the screens without re-seeding
        result = _measure(str(existing.id), args.repeat, finalize=False)
    else:
        crawl = synthetic_crawl_create(pages=args.pages, seed=0, name="screens")
        tables_analyze()
        result = _measure(crawl.audit_id, args.repeat)
    print(CHILD_JSON_PREFIX + json.dumps(result), flush=True)
    return 0


def run_screens_bench(
    pages: int = DEFAULT_PAGES, repeat: int = DEFAULT_REPEAT, *, reuse: bool = False, database: str | None = None
) -> dict:
    """Time the screens on a new synthetic audit, or (`reuse`) on the last one, or on the last completed audit
    of another benchmark's `database` (neither reset nor seeded)."""
    from bench.finalize import _child_env, database_reset
    from bench.run import PYTHON, REPO

    reuse = reuse or database is not None
    if not reuse:
        database_reset(SCREENS_DB_NAME)
    done = subprocess.run(
        [str(PYTHON), "-m", "bench.screens", "--child", "--pages", str(pages), "--repeat", str(repeat)]
        + (["--reuse"] if reuse else []),
        cwd=REPO,
        env=_child_env(database or SCREENS_DB_NAME),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(CHILD_JSON_PREFIX) and done.returncode == 0:
            return json.loads(line[len(CHILD_JSON_PREFIX) :])
    raise SystemExit(f"bench.screens child failed ({done.returncode}):\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}")


def print_screens(result: dict) -> None:
    changes = f", {result['changes']:,} changes against its baseline" if result.get("changes") else ""
    print(f"\n== screens on a {result['pages']:,}-page audit (finalize {result['finalize_s']:.1f} s{changes}) ==")
    print(f"  {'screen':<28}{'status':>7}{'median ms':>11}{'max ms':>9}{'CPU ms':>8}{'SQL ms':>8}")
    over = 0
    for row in result["rows"]:
        flag = "" if row["median_ms"] <= SCREEN_BUDGET_MS else f"  over {SCREEN_BUDGET_MS} ms"
        over += bool(flag)
        print(
            f"  {row['screen']:<28}{row['status']:>7}{row['median_ms']:>11.0f}{row['max_ms']:>9.0f}"
            f"{row.get('cpu_ms', 0):>8.0f}{row.get('sql_ms', 0):>8.0f}{flag}"
        )
    print(f"  {len(result['rows']) - over} of {len(result['rows'])} within {SCREEN_BUDGET_MS} ms (median)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    parser.add_argument(
        "--reuse", action="store_true", help="time the screens on the last run's audit (no reset, no seeding)"
    )
    parser.add_argument(
        "--database", help="time the screens on this benchmark database's last completed audit (e.g. bench.scale's)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(args)
    print_screens(run_screens_bench(args.pages, args.repeat, reuse=args.reuse, database=args.database))
    return 0


if __name__ == "__main__":
    sys.exit(main())
