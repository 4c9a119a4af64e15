"""Changes benchmark: a synthetic pair of completed audits of N pages each (pages written by COPY), a few % of the
pages changed in each compared field, then `audits.pipeline.changes.changes_store` timed with the growth of the
process's peak RSS (sampled every 20 ms; the kernel's high-water mark as a cross-check), at two sizes: memory that
does not grow with the pages is what "bounded" means.

python -m bench.changes [--pages 100000] [--small 10000] [--percent 2] [--seed 0]

This process only orchestrates, without Django; generation and each size's measurement run in child processes of
their own (`--child ...`), so no figure carries another step's memory. PostgreSQL only (COPY), in its own database
(`sitewarden_bench_changes`, dropped and recreated).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import subprocess
import sys
import time

from bench.finalize import _child_env, _copy_rows, _hwm_bytes, _hwm_reset, database_reset, tables_analyze
from bench.rss import RssSampler

CHANGES_DB_NAME = "sitewarden_bench_changes"
SITE_URL = "https://www.bench-shop.example"
DEFAULT_PAGES = 100_000
DEFAULT_SMALL_PAGES = 10_000
DEFAULT_PERCENT = 2  # of the pages changed in each field (each field its own pages)
MIN_PAGES = 100  # one page per slot
SLOTS = 100  # page i falls in slot (i * SLOT_STRIDE + seed) % SLOTS; each planted kind owns `percent` slots
SLOT_STRIDE = 37  # coprime with SLOTS: every run of 100 consecutive pages fills each slot once
RSS_SAMPLE_INTERVAL_S = 0.02
CHILD_TIMEOUT_S = 1800
MIB = 1024 * 1024
CHILD_JSON_PREFIX = "CHANGES_CHILD_JSON "
JSON_PREFIX = "CHANGES_JSON "
ROBOTS_BEFORE = "User-agent: *\nDisallow: /cart\n"
ROBOTS_AFTER = "User-agent: *\nDisallow: /cart\nDisallow: /checkout\n"

# What each planted kind changes on its pages, and the change rows (field: rows a page) audits.pipeline.changes must
# store for it. "noise" moves words and inlinks below their thresholds: no row.
KINDS = {
    "added": {"added": 1},
    "removed": {"removed": 1},
    "status": {"status": 1, "indexability": 1},
    "redirect": {"status": 1, "redirect": 1, "indexability": 1},
    "noindex": {"robots": 1, "indexability": 1},
    "canonical": {"canonical": 1},
    "robots": {"robots": 1},
    "title": {"title": 1},
    "description": {"description": 1},
    "h1": {"h1": 1},
    "words": {"words": 1},
    "depth": {"depth": 1},
    "inlinks": {"inlinks": 1},
    "structured_data": {"structured_data": 1},
    "hreflang": {"hreflang": 1},
    "content": {"content": 1},
    "in_sitemap": {"in_sitemap": 1},
    "noise": {},
}
PAGE_COLUMNS = (
    "id", "audit_id", "url", "status_code", "redirect_url", "fetch_class", "content_type", "depth", "in_sitemap",
    "title", "meta_description", "canonical_url", "meta_robots", "h1", "word_count", "text_hash", "main_text_hash",
    "main_words", "structured_data", "hreflang", "is_indexable", "fetched_at",
)  # fmt: skip
COUNTS_COLUMNS = ("page_id", "audit_id", "url", "inlinks", "inlink_pages", "issues")  # PageCounts, as finalize stores


class ChangesBenchError(Exception):
    """The changes benchmark cannot produce a meaningful figure; the message says why."""


def _kind_of(i: int, percent: int, seed: int) -> str | None:
    slot = (i * SLOT_STRIDE + seed) % SLOTS
    names = list(KINDS)
    index = slot // percent
    return names[index] if index < len(names) else None


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - a stand-in for the main text's fingerprint


def _page_values(i: int, kind: str | None, *, changed: bool) -> dict | None:
    """Page i of the baseline (changed=False) or of the audit, or None when that audit has no such page."""
    if (kind == "added" and not changed) or (kind == "removed" and changed):
        return None
    url = f"{SITE_URL}/products/item-{i:06d}"
    page = {
        "url": url,
        "status_code": 200,
        "redirect_url": "",
        "fetch_class": "ok",
        "content_type": "text/html",
        "depth": 1 + i % 6,
        "in_sitemap": True,
        "title": f"Item {i} | Bench Shop",
        "meta_description": f"Buy item {i} at Bench Shop: specifications, reviews, sizes.",
        "canonical_url": "" if kind == "canonical" else url,
        "meta_robots": "",
        "h1": f"Item {i}",
        "word_count": 300 + i % 500,
        "main_text_hash": _sha1(url),
        "main_words": 250 + i % 400,
        "inlinks_count": 20 + i % 80,
        "structured_data": {"jsonld_blocks": 1, "jsonld_invalid": 0, "types": ["Product"]},
        "hreflang": [],
        "is_indexable": True,
    }
    if not changed or kind is None:
        return page
    if kind == "status":
        page.update(status_code=500, is_indexable=False)
    elif kind == "redirect":
        page.update(status_code=301, redirect_url=url + "-new", is_indexable=False)
    elif kind == "noindex":
        page.update(meta_robots="noindex", is_indexable=False)
    elif kind == "canonical":
        page.update(canonical_url=url)  # none before: a self-referencing canonical added, indexable either way
    elif kind == "robots":
        page.update(meta_robots="nofollow")
    elif kind == "title":
        page.update(title=f"Item {i}, now in stock | Bench Shop")
    elif kind == "description":
        page.update(meta_description=f"Item {i}: free delivery this week.")
    elif kind == "h1":
        page.update(h1=f"Item {i}, now in stock")
    elif kind == "words":
        page.update(word_count=page["word_count"] * 2)
    elif kind == "depth":
        page.update(depth=page["depth"] + 1)
    elif kind == "inlinks":
        page.update(inlinks_count=page["inlinks_count"] * 2)
    elif kind == "structured_data":
        page["structured_data"] = {**page["structured_data"], "types": ["Product", "Offer"]}
    elif kind == "hreflang":
        page.update(hreflang=[["en", url]])
    elif kind == "content":
        page.update(main_text_hash=_sha1("rewritten " + url))
    elif kind == "in_sitemap":
        page.update(in_sitemap=False)
    elif kind == "noise":
        page.update(word_count=page["word_count"] + 10, inlinks_count=page["inlinks_count"] + 2)
    return page


def expected_rows(pages: int, percent: int, seed: int) -> dict[str, int]:
    """{field: rows} changes_store must store for the planted pair."""
    expected: dict[str, int] = {"robots_txt": 1}  # one line added
    for i in range(pages):
        kind = _kind_of(i, percent, seed)
        for field, n in KINDS.get(kind, {}).items() if kind else ():
            expected[field] = expected.get(field, 0) + n
    return dict(sorted(expected.items()))


def synthetic_pair_create(*, pages: int, percent: int = DEFAULT_PERCENT, seed: int = 0, name: str = "bench") -> dict:
    """Two completed crawl audits of one project, the baseline first, their pages written by COPY. Returns the ids,
    the pages of each and the rows expected per field."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.services import account_get_or_create_for_user
    from audits.models import Audit, Page, PageCounts, Project, page_id_for

    if percent * len(KINDS) > SLOTS:
        raise ChangesBenchError(f"{percent} % a kind is too many for {len(KINDS)} kinds")
    started = time.perf_counter()
    user, _ = get_user_model().objects.get_or_create(username=f"bench-changes-{name}")
    account = account_get_or_create_for_user(user=user)
    project = Project.objects.create(
        account=account, owner=user, name=f"changes {name} {pages}", base_url=SITE_URL + "/", max_pages=pages
    )
    now = timezone.now()
    fields = {name: Page._meta.get_field(name) for name in ("structured_data", "hreflang")}

    def audit_create(robots_txt: str) -> Audit:
        return Audit.objects.create(
            project=project,
            start_url=SITE_URL + "/",
            site_url=SITE_URL + "/",
            status=Audit.Status.COMPLETED,
            current_phase=Audit.Phase.COMPLETED,
            config={"mode": "crawl", "max_pages": pages},
            robots_txt=robots_txt,
            robots_status=200,
            started_at=now,
            completed_at=now,
            pages_crawled=pages,
        )

    baseline, audit = audit_create(ROBOTS_BEFORE), audit_create(ROBOTS_AFTER)
    counts = {}
    for target, changed in ((baseline, False), (audit, True)):
        written = 0
        stored_counts = []

        def rows(target=target, changed=changed, stored_counts=stored_counts):
            nonlocal written
            for i in range(pages):
                page = _page_values(i, _kind_of(i, percent, seed), changed=changed)
                if page is None:
                    continue
                written += 1
                page["text_hash"] = page["main_text_hash"]
                for key, field in fields.items():
                    page[key] = field.get_db_prep_save(page[key], connection)
                page.update(id=page_id_for(target.id, page["url"]), audit_id=target.id, fetched_at=now)
                stored_counts.append((page["id"], target.id, page["url"], page.pop("inlinks_count"), 1, 0))
                yield tuple(page[c] for c in PAGE_COLUMNS)

        with transaction.atomic():
            _copy_rows(Page, PAGE_COLUMNS, rows())
            _copy_rows(PageCounts, COUNTS_COLUMNS, stored_counts)
        counts[str(target.id)] = written
    return {
        "baseline_id": str(baseline.id),
        "audit_id": str(audit.id),
        "pages": pages,
        "baseline_pages": counts[str(baseline.id)],
        "audit_pages": counts[str(audit.id)],
        "expected": expected_rows(pages, percent, seed),
        "seconds": time.perf_counter() - started,
    }


def changes_measure(*, audit_id) -> dict:
    """Run changes_store once on `audit_id`: wall time, the peak RSS over what the process held before (sampled;
    the kernel's high-water mark as a cross-check), rows stored per field."""
    import psutil
    from django.db import connection

    from audits.models import Audit, PageChange
    from audits.pipeline.changes import changes_store
    from audits.stats import change_stats_count

    audit = Audit.objects.get(id=audit_id)
    connection.ensure_connection()
    gc.collect()
    before = psutil.Process().memory_info().rss
    hwm_reset = _hwm_reset()
    with RssSampler(tree=False, interval_s=RSS_SAMPLE_INTERVAL_S) as rss:
        started = time.perf_counter()
        baseline = changes_store(audit)
        seconds = time.perf_counter() - started
    hwm = _hwm_bytes() if hwm_reset else None
    counts = change_stats_count(audit_id=audit_id)
    return {
        "seconds": seconds,
        "baseline_id": str(baseline.id) if baseline else None,
        "rows": PageChange.objects.filter(audit_id=audit_id).count(),
        "fields": {k: v for k, v in counts.items() if k != "baseline"},
        "rss_before_bytes": before,
        "rss_peak_delta_bytes": rss.peak - before,
        "rss_hwm_delta_bytes": hwm - before if hwm else None,
        "rss_samples": rss.samples,
    }


# --- orchestration (no Django in this process) -------------------------------------------------------


def _run_child(*args: str) -> dict:
    from bench.run import PYTHON, REPO

    done = subprocess.run(
        [str(PYTHON), "-m", "bench.changes", "--child", *args],
        cwd=REPO,
        env=_child_env(CHANGES_DB_NAME),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(CHILD_JSON_PREFIX) and done.returncode == 0:
            return json.loads(line[len(CHILD_JSON_PREFIX) :])
    raise ChangesBenchError(
        f"bench.changes --child {' '.join(args)} failed ({done.returncode}):\n"
        f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    )


def run_changes_bench(sizes: list[int], *, percent: int = DEFAULT_PERCENT, seed: int = 0) -> dict:
    """Recreate the database, generate a pair per size, then measure each size in a fresh process."""
    from bench.finalize import FinalizeBenchError

    try:
        database_reset(CHANGES_DB_NAME)
    except FinalizeBenchError as exc:
        raise ChangesBenchError(str(exc)) from exc
    results = []
    for pages in sizes:
        pair = _run_child("generate", "--pages", str(pages), "--percent", str(percent), "--seed", str(seed))
        run = _run_child("measure", "--audit-id", pair["audit_id"])
        if run["baseline_id"] != pair["baseline_id"]:
            raise ChangesBenchError(f"changes_store compared with {run['baseline_id']}, not {pair['baseline_id']}")
        mismatches = {
            f: (pair["expected"].get(f, 0), run["fields"].get(f, 0))
            for f in sorted({*pair["expected"], *run["fields"]})
            if pair["expected"].get(f, 0) != run["fields"].get(f, 0)
        }
        results.append({**pair, **run, "percent": percent, "mismatches": mismatches})
    return {"sizes": results}


def print_changes(result: dict) -> None:
    sizes = result["sizes"]
    for r in sizes:
        print(f"\n== changes_store on a pair of {r['pages']:,}-page audits ({r['percent']} % changed in each field) ==")
        print(
            f"  pages: baseline {r['baseline_pages']:,}, audit {r['audit_pages']:,} "
            f"(written by COPY in {r['seconds_generate']:.1f} s)"
        )
        print(f"  changes_store: {r['seconds']:.2f} s ({r['seconds'] / r['pages'] * 1000:.3f} ms a page)")
        hwm = f" (kernel high-water mark +{r['rss_hwm_delta_bytes'] / MIB:.1f} MiB)" if r["rss_hwm_delta_bytes"] else ""
        print(
            f"  peak RSS growth: +{r['rss_peak_delta_bytes'] / MIB:.1f} MiB over {r['rss_before_bytes'] / MIB:.1f} MiB"
            f"{hwm}"
        )
        print(f"  rows stored: {r['rows']:,}")
        for field, n in sorted(r["fields"].items()):
            print(f"    {field:<18}{n:>8,}")
        if r["mismatches"]:
            print(f"  MISMATCH against the planted changes (field: expected, stored): {r['mismatches']}")
        else:
            print("  every field's rows match the planted changes")
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        growth = (large["rss_peak_delta_bytes"] / MIB, small["rss_peak_delta_bytes"] / MIB)
        print(
            f"\n  {large['pages']:,} / {small['pages']:,} pages: time x{large['seconds'] / small['seconds']:.1f}, "
            f"peak RSS growth {growth[0]:.1f} against {growth[1]:.1f} MiB (flat: memory bounded)"
        )
    print(JSON_PREFIX + json.dumps(result, sort_keys=True), flush=True)


def _child_main(args) -> int:
    import django

    django.setup()
    if args.child == "generate":
        pair = synthetic_pair_create(pages=args.pages, percent=args.percent, seed=args.seed, name=str(args.pages))
        tables_analyze()  # as autovacuum would have after a crawl of minutes
        pair["seconds_generate"] = pair.pop("seconds")
        print(CHILD_JSON_PREFIX + json.dumps(pair), flush=True)
    else:
        print(CHILD_JSON_PREFIX + json.dumps(changes_measure(audit_id=args.audit_id)), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="pages of the large pair")
    parser.add_argument("--small", type=int, default=DEFAULT_SMALL_PAGES, help="pages of the small pair (0: none)")
    parser.add_argument("--percent", type=int, default=DEFAULT_PERCENT, help="pages changed in each field, in %%")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", choices=("generate", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--audit-id", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(args)
    sizes = [n for n in (args.small, args.pages) if n]
    if any(n < MIN_PAGES for n in sizes):
        parser.error(f"each size must be at least {MIN_PAGES} pages")
    if not 1 <= args.percent or args.percent * len(KINDS) > SLOTS:
        parser.error(f"--percent must be 1 to {SLOTS // len(KINDS)}")
    try:
        print_changes(run_changes_bench(sizes, percent=args.percent, seed=args.seed))
    except ChangesBenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
