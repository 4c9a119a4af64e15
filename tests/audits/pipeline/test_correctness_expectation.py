"""Correctness is unchanged by the crawl's speed work: a fresh audit of each test site gives the same pages
(status, depth), link edges and issues as a stored expectation (tests/audits/expectations/*.json).

The expectation pins, per page, its status, depth, inlinks, outlinks, a digest of its outgoing edges (target,
link count, nofollow) and its issues by type, and the count of each issue type: one line per page, so a change
shows as the lines of the pages it changed, and a failure lists them in words. It was first recorded on the
layered (round-barrier) crawl before the barrier went. To regenerate after an intended change of behaviour, run
this module with SITEWARDEN_UPDATE_EXPECTATIONS=1 and review the JSON diff before committing it:

    SITEWARDEN_UPDATE_EXPECTATIONS=1 .venv/bin/python -m pytest tests/audits/pipeline/test_correctness_expectation.py
"""

import hashlib
import json
import os
import threading
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Max, Min

from audits.models import Audit, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from scratchpad.models import LinkEdge
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTATIONS_DIR = Path(__file__).resolve().parent.parent / "expectations"
UPDATE = os.environ.get("SITEWARDEN_UPDATE_EXPECTATIONS") == "1"
# Issues that depend on the machine's speed, not on the site: left out of the comparison.
TIMING_ISSUES = frozenset({"slow-response"})


def audit_summary(audit: Audit, base: str) -> dict:
    """A canonical, port-free summary of an audit: its pages (path, status, depth, inlinks, outlinks, the digest
    of its outgoing edges, its issues by type), issues on no crawled page, and the count of each issue type.
    Sorted, so two equal crawls give equal summaries."""

    def rel(url: str) -> str:
        return url[len(base) :] or "/" if url.startswith(base) else url

    page_rows = Page.objects.filter(audit=audit).values_list("id", "url", "status_code", "depth")
    page_urls = {page_id: rel(url) for page_id, url, _, _ in page_rows}
    edges = [
        [page_urls[src], rel(target), count, nofollow]
        for src, target, count, nofollow in LinkEdge.objects.filter(audit=audit).values_list(
            "source_page_id", "target_url", "link_count", "nofollow"
        )
    ]
    issues = Counter(
        (kind, rel(url or ""))
        for kind, url in Issue.objects.filter(audit=audit)
        .exclude(type__in=TIMING_ISSUES)
        .values_list("type", "page_url")
    )
    return summary_from_rows(
        pages=[[page_urls[page_id], status, depth] for page_id, _, status, depth in page_rows],
        edges=edges,
        issues=[[kind, path, n] for (kind, path), n in issues.items()],
    )


def summary_from_rows(*, pages: list, edges: list, issues: list) -> dict:
    """The summary of pages ([path, status, depth]), edges ([source, target, link_count, nofollow]) and issue
    counts ([type, path, n])."""
    outgoing: dict[str, list] = {}
    inlinks = Counter()
    for source, target, count, nofollow in edges:
        outgoing.setdefault(source, []).append([target, count, nofollow])
        inlinks[target] += 1
    page_issues: dict[str, dict] = {}
    paths = {path for path, _, _ in pages}
    other_issues = []
    for kind, path, n in sorted(issues):
        if path in paths:
            page_issues.setdefault(path, {})[kind] = n
        else:
            other_issues.append([kind, path, n])
    rows = [
        {
            "path": path,
            "status": status,
            "depth": depth,
            "inlinks": inlinks[path],
            "outlinks": len(outgoing.get(path, [])),
            "edges": _edges_digest(outgoing.get(path, [])),
            "issues": page_issues.get(path, {}),
        }
        for path, status, depth in sorted(pages)
    ]
    counts = Counter()
    for kind, _, n in issues:
        counts[kind] += n
    return {"pages": rows, "other_issues": other_issues, "issue_counts": dict(sorted(counts.items()))}


def _edges_digest(outgoing: list) -> str:
    """12 hex digits standing for a page's outgoing edges: any other target, link count or nofollow changes it."""
    return hashlib.sha256(json.dumps(sorted(outgoing)).encode()).hexdigest()[:12]


def assert_matches_expectation(name: str, summary: dict) -> None:
    """Compare with the stored expectation (or write it, with SITEWARDEN_UPDATE_EXPECTATIONS=1)."""
    path = EXPECTATIONS_DIR / f"{name}.json"
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dump(summary))
        if not UPDATE:
            pytest.fail(f"no expectation stored yet: wrote {path}; review it and run again")
        return
    differences = summary_differences(json.loads(path.read_text()), summary)
    assert not differences, (
        f"{name} differs from {path} in {len(differences)} ways (expected -> got; "
        "SITEWARDEN_UPDATE_EXPECTATIONS=1 rewrites it):\n  " + "\n  ".join(differences[:DIFFERENCES_SHOWN])
    )


DIFFERENCES_SHOWN = 40


def summary_differences(want: dict, got: dict) -> list[str]:
    """What differs between two summaries, one sentence each: pages missing or unexpected, a page's fields
    (expected -> got), issues on no page, issue counts by type."""
    out = []
    want_pages = {row["path"]: row for row in want["pages"]}
    got_pages = {row["path"]: row for row in got["pages"]}
    for path in sorted(want_pages.keys() | got_pages.keys()):
        if path not in got_pages:
            out.append(f"page {path}: missing (expected {_page_words(want_pages[path])})")
        elif path not in want_pages:
            out.append(f"page {path}: unexpected ({_page_words(got_pages[path])})")
        else:
            changed = [
                f"{key} {want_pages[path][key]} -> {got_pages[path][key]}"
                for key in want_pages[path]
                if key != "path" and want_pages[path][key] != got_pages[path].get(key)
            ]
            if changed:
                out.append(f"page {path}: " + "; ".join(changed))
    for row in want["other_issues"]:
        if row not in got["other_issues"]:
            out.append(f"issue on no crawled page missing: {row}")
    for row in got["other_issues"]:
        if row not in want["other_issues"]:
            out.append(f"issue on no crawled page unexpected: {row}")
    for kind in sorted(want["issue_counts"].keys() | got["issue_counts"].keys()):
        before, after = want["issue_counts"].get(kind, 0), got["issue_counts"].get(kind, 0)
        if before != after:
            out.append(f"issue type {kind}: {before} -> {after}")
    return out


def _page_words(row: dict) -> str:
    return ", ".join(f"{key} {value}" for key, value in row.items() if key != "path")


def _dump(summary: dict) -> str:
    """One page per line: a reviewable diff."""

    def rows(items: list) -> str:
        return "[\n" + ",\n".join("  " + json.dumps(row) for row in items) + "\n ]" if items else "[]"

    return (
        f'{{\n "pages": {rows(summary["pages"])},\n "other_issues": {rows(summary["other_issues"])},\n'
        f' "issue_counts": {json.dumps(summary["issue_counts"])}\n}}\n'
    )


def run_audit(base: str, *, max_pages: int = 1000) -> Audit:
    project = ProjectFactory(base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=max_pages, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _html(title: str, body: str, head: str = "") -> str:
    return (
        f'<!doctype html><html lang="en"><head><title>{title}</title>'
        f'<meta name="description" content="{title}: a page of the trap site.">{head}</head>'
        f"<body><h1>{title}</h1><p>{'Words about ' + title + ' for the content checks. ' * 20}</p>{body}</body></html>"
    )


def trap_site_routes(site) -> None:
    """A small site with the traps that decide depths, edges and issues: a redirect chain, a nofollow link,
    a meta-nofollow page, a canonical to another page, a broken link, a duplicate title, a noindex page, a
    sitemap-only orphan, a page linked many times, and a deep chain."""
    base = site.url
    site.add(
        "/robots.txt", f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap.xml\n", content_type="text/plain"
    )
    sitemap_urls = ["/", "/a", "/orphan", "/chain/1"]
    site.add(
        "/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{base}{p}</loc></url>" for p in sitemap_urls)
        + "</urlset>",
        content_type="application/xml",
    )
    site.add(
        "/",
        _html(
            "Home",
            '<a href="/a">A</a> <a href="/b">B</a> <a href="/a">A again</a> <a href="/old">Old</a>'
            ' <a href="/hidden" rel="nofollow">Hidden</a> <a href="/meta-nofollow">Meta</a>'
            ' <a href="/private/x">Private</a> <a href="https://example.invalid/out">Out</a>'
            ' <a href="/chain/1">Chain</a>',
        ),
    )
    site.add("/a", _html("A", '<a href="/b">B</a> <a href="/broken">Broken</a> <a href="/dup">Dup</a>'))
    site.add("/b", _html("B", '<a href="/a">A</a> <a href="/canon">Canon</a>'))
    site.add("/dup", _html("A", '<a href="/">Home</a>'))  # same title as /a
    site.add("/old", status=301, headers={"Location": f"{base}/older"}, body=b"")
    site.add("/older", status=302, headers={"Location": f"{base}/new"}, body=b"")
    site.add("/new", _html("New", '<a href="/">Home</a> <a href="/noindex">Noindex</a>'))
    site.add("/hidden", _html("Hidden", ""))
    site.add(
        "/meta-nofollow",
        _html("Meta nofollow", '<a href="/behind-meta">Behind</a>', '<meta name="robots" content="nofollow">'),
    )
    site.add("/behind-meta", _html("Behind meta", ""))
    site.add("/canon", _html("Canon", "", f'<link rel="canonical" href="{base}/canonical-target">'))
    site.add("/canonical-target", _html("Canonical target", ""))
    site.add("/noindex", _html("Noindex", "", '<meta name="robots" content="noindex">'))
    site.add("/orphan", _html("Orphan", '<a href="/">Home</a>'))
    site.add("/private/x", _html("Private", ""))
    for i in range(1, 8):
        site.add(f"/chain/{i}", _html(f"Chain {i}", f'<a href="/chain/{i + 1}">next</a>'))


def test_generated_site_matches_expectation(small_site):
    base, _ = small_site
    audit = run_audit(base)
    assert_matches_expectation("small_site", audit_summary(audit, base))


def test_trap_site_matches_expectation():
    with serve_routes() as site:
        trap_site_routes(site)
        audit = run_audit(site.url)
        summary = audit_summary(audit, site.url)
    assert_matches_expectation("trap_site", summary)


AUDITS_WAIT_S = 300


def test_two_audits_interleaving_in_one_process_leave_no_duplicates(small_site):
    """Two audits of the same site crawled at once by one process (a thread each, as a threaded worker runs
    them): their chunks interleave, claim from the same tables in slices and insert pages, edges and issues
    side by side. Each audit still stores exactly the expected crawl, with no duplicate Page, LinkEdge or
    Issue row."""
    base, _ = small_site
    audits = [
        audit_start(project=ProjectFactory(base_url=base + "/"), start_url=base + "/", max_pages=1000, dispatch=False)
        for _ in range(2)
    ]
    errors = []

    def run(audit_id):
        try:
            pipeline_run_inline(audit_id)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(audit.id,)) for audit in audits]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(AUDITS_WAIT_S)
    assert not errors and not any(t.is_alive() for t in threads), errors
    first, second = (
        Page.objects.filter(audit=a).aggregate(start=Min("fetched_at"), end=Max("fetched_at")) for a in audits
    )
    assert first["start"] < second["end"] and second["start"] < first["end"], "the two crawls overlapped"
    for audit in audits:
        audit.refresh_from_db()
        assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
        pages = Page.objects.filter(audit=audit)
        assert pages.values("url").distinct().count() == pages.count() == audit.pages_crawled
        edges = LinkEdge.objects.filter(audit=audit)
        assert edges.values("source_page_id", "target_url").distinct().count() == edges.count()
        issues = Issue.objects.filter(audit=audit)
        assert issues.values("type", "page_url", "details").distinct().count() == issues.count()
        assert_matches_expectation("small_site", audit_summary(audit, base))
