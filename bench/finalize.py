"""Finalize benchmark: a synthetic completed crawl of N pages written straight into PostgreSQL, then
`audits.pipeline.finalize.audit_finalize` timed with its peak memory (RSS sampled every 20 ms, and tracemalloc).

python -m bench.finalize [--pages 10000] [--seed 0]

This process only orchestrates, without Django; generation, the timed run and the tracemalloc run each have
a child process of their own, so no figure carries another step's memory.
"""

# Why one module of over 600 lines: it is one script, run top to bottom and re-entered by its own child processes
# (`python -m bench.finalize --child ...`); most of it is the synthetic crawl (about 470 lines), whose planted
# findings the measurement then counts, so the plan and its check stay side by side. Only bench and its tests
# import it. (A comment, not the docstring: the docstring is the script's --help.)

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import json
import math
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass, field

from bench.rss import RssSampler

FINALIZE_DB_NAME = "sitewarden_bench_finalize"
SITE_URL = "https://www.bench-shop.example/"
DEFAULT_PAGES = 10_000
MIN_PAGES = 200  # below this the planted features crowd out the ordinary pages
LINK_EDGES_PER_PAGE = 50  # stored links per crawled page, on average (navigation + content + footer)
EXTERNAL_LINKS_PER_PAGE = 3
EXTRA_MAX_PAGES = 1000  # the audit's page budget is N plus this, so max-pages-reached never fires
PAGE_WRITE_BATCH = 1000
RSS_SAMPLE_INTERVAL_S = 0.02
CHILD_TIMEOUT_S = 1800
MIB = 1024 * 1024
CHILD_JSON_PREFIX = "FINALIZE_CHILD_JSON "
JSON_PREFIX = "FINALIZE_JSON "
BENCH_PLAN_NAME = "bench-finalize"


class FinalizeBenchError(Exception):
    """The finalize benchmark cannot produce a meaningful figure; the message says why."""


# --- the synthetic crawl -----------------------------------------------------------------------------


@dataclass
class _Page:
    url: str
    kind: str
    status: int
    depth: int | None
    in_sitemap: bool = False
    title: str = ""
    description: str | None = ""
    text_hash: str = ""
    canonical: str = ""
    redirect_url: str = ""
    meta_robots: str = ""
    hreflang: list = field(default_factory=list)
    lang: str = "en"
    content_type: str = "text/html"
    fetch_class: str = "ok"
    redirect_hops: int = 0
    source: str = "link"
    images_missing_alt: int = 0
    h1_count: int = 1
    extra_links: list = field(default_factory=list)  # planted links (404s, redirects) on top of the usual ones
    id: object = None  # the Page id, once the audit is known
    internal_links: int = 0

    @property
    def has_links(self) -> bool:
        return self.status == 200 and self.content_type == "text/html" and self.fetch_class == "ok"

    @property
    def indexable(self) -> bool:
        return self.has_links and "noindex" not in self.meta_robots and self.canonical in ("", self.url)


@dataclass
class SyntheticCrawl:
    audit_id: str
    pages: int
    link_edges: int
    frontier_rows: int
    page_issues: int
    # Site-check issue counts the planted structure must produce, computed from what was planted.
    expected: dict
    seconds: float = 0.0


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


ADJECTIVES = ["Waterproof", "Lightweight", "Classic", "Organic", "Compact", "Deluxe", "Vintage", "Ergonomic"]
NOUNS = ["Backpack", "Lamp", "Kettle", "Jacket", "Desk", "Headphones", "Tent", "Mug", "Chair", "Scarf"]
LONG_TITLE_SUFFIX = " - Free Shipping and 30-Day Returns"  # pushes a title past 60 characters
DEPTH_WEIGHTS = {2: 30, 3: 40, 4: 20, 5: 8, 6: 2}


def _plan_site(pages: int, seed: int, base: str) -> tuple[list[_Page], dict]:
    """Every page of the crawl with its planted features, and the site issues they must produce."""
    rnd = random.Random(seed)
    n = pages
    counts = {
        "categories": max(3, min(20, n // 50)),
        "not_found": max(3, n // 100),
        "redirects": max(4, n // 50),
        "chains": max(2, n // 1000),  # half of them 2 hops, half 3
        "noindex": max(3, n // 100),
        "variants": max(3, n // 100),  # ?color= variants canonicalized to their product
        "canonical_to_404": max(2, n // 2000),
        "orphans": max(2, n // 500),
        "blocked": 2,
        "pdfs": max(2, n // 500),
        "hreflang_pairs": max(5, n // 40),
    }
    chains_2 = counts["chains"] // 2
    chains_3 = counts["chains"] - chains_2
    fixed = 1 + 2 + 2 + 1  # home, /about + /about-us (site-wide redirect), the loop, canonical -> redirect
    special = (
        fixed
        + sum(v for k, v in counts.items() if k not in ("chains", "hreflang_pairs"))
        + 2 * chains_2
        + 3 * chains_3
        + 2 * counts["hreflang_pairs"]
    )
    products = n - special
    if products < n // 2:
        raise FinalizeBenchError(f"{n} pages are too few for the planted features (at least {MIN_PAGES})")

    site: list[_Page] = []

    def add(page: _Page) -> _Page:
        site.append(page)
        return page

    def depth() -> int:
        return rnd.choices(list(DEPTH_WEIGHTS), weights=list(DEPTH_WEIGHTS.values()))[0]

    home = add(_Page(base + "/", "home", 200, 0, True, "Bench Shop - Outdoor and Home", source="start"))
    home.description = "Bench Shop sells outdoor gear and home goods, shipped free across Europe within three days."
    cats = []
    for k in range(counts["categories"]):
        p = add(_Page(f"{base}/category/{NOUNS[k % len(NOUNS)].lower()}-{k}", "category", 200, 1, True))
        p.title = f"{NOUNS[k % len(NOUNS)]}s, range {k} | Bench Shop"
        cats.append(p)
    about = add(_Page(f"{base}/about", "about", 200, 1, True, "About us | Bench Shop"))
    about_us = add(_Page(f"{base}/about-us", "redirect", 301, 1, redirect_url=about.url))

    product_pages = []
    for i in range(products):
        name = f"{ADJECTIVES[i % len(ADJECTIVES)]} {NOUNS[(i // len(ADJECTIVES)) % len(NOUNS)]} {i:05d}"
        p = add(_Page(f"{base}/products/{name.lower().replace(' ', '-')}", "product", 200, depth()))
        p.in_sitemap = i % 10 != 9
        p.title = f"{name} | Bench Shop" + (LONG_TITLE_SUFFIX if i % 17 == 0 else "")
        p.description = None if i % 25 == 24 else f"Buy the {name} at Bench Shop: specifications, reviews, sizes."
        p.images_missing_alt = 2 if i % 7 == 0 else 0
        p.h1_count = 0 if i % 50 == 49 else 1
        product_pages.append(p)
    for p in [home, *cats, about, *product_pages]:
        p.canonical = p.url  # self-referencing canonicals, as most sites have
        p.text_hash = _sha1("text " + p.url)

    # Duplicates among indexable products: shared titles, shared descriptions, shared text.
    expected = {}
    for column, groups, sizes in (("title", max(2, n // 150), (2, 3, 4)), ("description", max(2, n // 150), (2, 3))):
        pool = [p for p in product_pages if column != "description" or p.description is not None]
        chosen = rnd.sample(pool, sum(sizes[g % len(sizes)] for g in range(groups)))
        start = 0
        for g in range(groups):
            size = sizes[g % len(sizes)]
            for p in chosen[start : start + size]:
                if column == "title":
                    p.title = f"Special offer {g} | Bench Shop"
                else:
                    p.description = f"Our special offer number {g}: while stocks last, free returns for a month."
            start += size
        expected["duplicate-" + ("title" if column == "title" else "meta-description")] = start
    content_groups = max(1, n // 400)
    for g, p in enumerate(rnd.sample(product_pages, 2 * content_groups)):
        p.text_hash = _sha1(f"shared text {g // 2}")
    expected["duplicate-content"] = 2 * content_groups

    variants = []
    for k in range(counts["variants"]):
        product = product_pages[(k * 37) % len(product_pages)]
        p = add(_Page(product.url + "?color=red", "variant", 200, product.depth + 1, k % 5 == 0, product.title))
        p.description, p.text_hash, p.canonical = product.description, product.text_hash, product.url
        product.extra_links.append(p.url)
        variants.append(p)
    not_found = [
        add(_Page(f"{base}/products/discontinued-{k}", "not_found", 404, 3, k % 5 == 0))
        for k in range(counts["not_found"])
    ]
    canonical_bad = []
    for k in range(counts["canonical_to_404"]):
        p = add(_Page(f"{base}/products/bundle-{k}", "canonical_404", 200, 3, False, f"Bundle {k} | Bench Shop"))
        p.canonical, p.text_hash = not_found[k % len(not_found)].url, _sha1(f"bundle {k}")
        canonical_bad.append(p)
    redirects = []
    for k in range(counts["redirects"]):
        # One old URL redirects to a page that is gone; the rest to live products.
        target = not_found[-1] if k == 1 else product_pages[(k * 53) % len(product_pages)]
        redirects.append(add(_Page(f"{base}/old/item-{k}", "redirect", 301, 3, k % 10 == 0, redirect_url=target.url)))
    p = add(_Page(f"{base}/products/gift-card", "canonical_redirect", 200, 2, False, "Gift card | Bench Shop"))
    p.canonical, p.text_hash = redirects[0].url, _sha1("gift card")
    canonical_bad.append(p)
    chain_heads = []
    for c in range(chains_2 + chains_3):
        hops = 2 if c < chains_2 else 3
        final = product_pages[(c * 71 + 5) % len(product_pages)]
        urls = [f"{base}/legacy/{c}/step-{h}" for h in range(1, hops + 1)]
        for h, url in enumerate(urls):
            nxt = urls[h + 1] if h + 1 < hops else final.url
            page = add(_Page(url, "chain", 301, 3, redirect_url=nxt, redirect_hops=h))
            page.source = "link" if h == 0 else "redirect"
            if h == 0:
                chain_heads.append(page)
    loop_a = add(_Page(f"{base}/loop/a", "loop", 301, 3, redirect_url=f"{base}/loop/b"))
    add(_Page(f"{base}/loop/b", "loop", 301, 3, redirect_url=loop_a.url, redirect_hops=1, source="redirect"))
    noindex = []
    for k in range(counts["noindex"]):
        p = add(_Page(f"{base}/tag/topic-{k}", "noindex", 200, 2, k % 4 == 0, f"Topic {k} | Bench Shop"))
        p.meta_robots, p.text_hash = "noindex, follow", _sha1(f"tag {k}")
        noindex.append(p)
    orphans = []
    for k in range(counts["orphans"]):
        p = add(_Page(f"{base}/landing/campaign-{k}", "orphan", 200, None, True, f"Campaign {k} | Bench Shop"))
        p.canonical, p.text_hash, p.source = p.url, _sha1(f"campaign {k}"), "sitemap"
        orphans.append(p)
    for k in range(counts["blocked"]):  # behind a login: 403; the first one is in the navigation
        url = f"{base}/account" + ("" if k == 0 else f"/orders-{k}")
        add(_Page(url, "blocked", 403, 1 if k == 0 else 2, fetch_class="blocked"))
        if k:
            home.extra_links.append(url)
    for k in range(counts["pdfs"]):
        url = f"{base}/files/manual-{k}.pdf"
        add(_Page(url, "pdf", 200, 3, content_type="application/pdf"))
    guides = []
    missing_return = 0
    for k in range(counts["hreflang_pairs"]):
        en = add(_Page(f"{base}/en/guide-{k}", "guide", 200, 2, True, f"Buying guide {k} | Bench Shop"))
        de = add(_Page(f"{base}/de/ratgeber-{k}", "guide", 200, 2, True, f"Ratgeber {k} | Bench Shop", lang="de"))
        pairs = [["en", en.url], ["de", de.url], ["x-default", en.url]]
        en.hreflang = pairs
        # Every tenth German page forgets its return links: the English page names it, it names only itself.
        de.hreflang = [["de", de.url]] if k % 10 == 0 else pairs
        missing_return += k % 10 == 0
        for p in (en, de):
            p.canonical, p.text_hash = p.url, _sha1("guide " + p.url)
        guides += [en, de]
    expected["hreflang-missing-return-link"] = missing_return
    if len(site) != n:
        raise AssertionError(f"planned {len(site)} pages for {n}")

    # Planted links: every 404, old URL, chain head and the loop is linked from one to three live pages.
    linkers = product_pages + guides
    broken_pairs = set()
    redirect_pairs = set()
    for targets, pairs in ((not_found, broken_pairs), ([*redirects, *chain_heads, loop_a], redirect_pairs)):
        for j, target in enumerate(targets):
            for r in range(1 + j % 3):
                source = linkers[(j * 131 + r * 977 + 3) % len(linkers)]
                source.extra_links.append(target.url)
                pairs.add((source.url, target.url))
    html = [p for p in site if p.has_links]
    redirect_pairs |= {(p.url, about_us.url) for p in html}  # the footer's "About us" is an old URL
    expected["broken-internal-link"] = _capped(len(broken_pairs))
    expected["internal-link-to-redirect"] = _capped(len(redirect_pairs))
    expected["redirect-chain"] = chains_2 + chains_3
    expected["redirect-loop"] = 1
    expected["canonical-target-not-ok"] = len(canonical_bad)
    expected["orphan-page"] = len(orphans)
    expected["sitemap-url-not-indexable"] = sum(
        1 for p in [*noindex, *variants, *not_found, *redirects] if p.in_sitemap
    )
    for absent in ("sitemap-missing", "robots-txt-invalid", "crawl-rate-limited", "max-pages-reached"):
        expected[absent] = 0
    return site, expected


def planted_mismatches(expected: dict, written: dict) -> dict:
    """{type: (expected, written)} wherever finalize's issue counts differ from what was planted."""
    return {t: (expected.get(t, 0), written.get(t, 0)) for t in sorted({*expected, *written}) if
            expected.get(t, 0) != written.get(t, 0)}  # fmt: skip


def _capped(pairs: int) -> int:
    from audits.checks.site import LINK_ISSUES_MAX

    return pairs if pairs <= LINK_ISSUES_MAX else LINK_ISSUES_MAX + 1  # the cap adds one marker issue


def _edges_for(site: list[_Page], base: str, seed: int):
    """Link rows of every live HTML page: navigation, content links, planted links, external links."""
    rnd = random.Random(seed + 1)
    html = [p for p in site if p.has_links]
    nav = [(p.url, p.title.split(" |")[0] or "Home", False) for p in site if p.kind in ("home", "category", "about")]
    nav += [(f"{base}/about-us", "About us", False), (f"{base}/account", "My account", True)]
    nav += [(f"{base}/cart", "Cart", True)]  # robots-disallowed: linked everywhere, never crawled
    linkable = [p for p in site if p.kind in ("product", "variant", "noindex", "guide", "pdf") or "canonical" in p.kind]
    per_page = max(10, round(LINK_EDGES_PER_PAGE * len(site) / len(html)))
    for page in html:
        source_id = page.id
        rows = [(source_id, url, anchor, nofollow, True) for url, anchor, nofollow in nav]
        rows += [(source_id, url, "see also", False, True) for url in page.extra_links]
        for _ in range(max(0, per_page - len(rows) - EXTERNAL_LINKS_PER_PAGE)):
            target = linkable[rnd.randrange(len(linkable))]
            rows.append((source_id, target.url, target.title[:60], False, True))
        rows += [
            (source_id, f"https://social{k}.example/benchshop", f"Social {k}", k == 2, False)
            for k in range(EXTERNAL_LINKS_PER_PAGE)
        ]
        page.internal_links = len(rows) - EXTERNAL_LINKS_PER_PAGE
        yield from rows


def synthetic_crawl_create(*, pages: int = DEFAULT_PAGES, seed: int = 0, name: str = "bench") -> SyntheticCrawl:
    """A running audit in phase crawling whose crawl is over: N pages, their link edges, a frontier all done,
    the page issues the crawl would have written and a discovery with sitemaps. PostgreSQL only (COPY)."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from accounts.models import Account, Plan
    from accounts.services import account_get_or_create_for_user
    from audits.checks import CheckSettings, make_issue
    from audits.limits import MAX_PAGES_CEILING
    from audits.models import Audit, Issue, Page, Project, page_id_for
    from audits.pipeline.start import audit_start
    from scratchpad.models import Frontier, LinkEdge

    started = time.perf_counter()
    # At the ceiling (100,000 pages) the budget equals the crawl: max-pages-reached may then fire, once.
    budget = min(pages + EXTRA_MAX_PAGES, MAX_PAGES_CEILING)
    plan, _ = Plan.objects.get_or_create(
        name=BENCH_PLAN_NAME,
        defaults={"pages_per_audit": MAX_PAGES_CEILING, "running_audits": 10, "monthly_units": 10_000_000},
    )
    user, _ = get_user_model().objects.get_or_create(username=f"bench-finalize-{name}")
    account = account_get_or_create_for_user(user=user)
    Account.objects.filter(id=account.id).update(plan=plan)
    # The external link pass is off: the synthetic crawl's external targets (social{k}.example) do not exist, and
    # the benchmark measures finalize's own work, not other sites' answers.
    project = Project.objects.create(
        account=account,
        owner=user,
        name=f"finalize {name}",
        base_url=SITE_URL,
        max_pages=budget,
        check_external_links=False,
    )
    audit = audit_start(project=project, start_url=SITE_URL, max_pages=budget, dispatch=False)
    base = audit.start_url.rstrip("/")
    site, expected = _plan_site(pages, seed, base)
    now = timezone.now()
    settings = CheckSettings.for_audit(audit)
    rows, issues = [], []
    for p in site:
        p.id = page_id_for(audit.id, p.url)
    edges = list(_edges_for(site, base, seed))  # also sets internal_links on each page
    for i, p in enumerate(site):
        html = p.has_links
        page = Page(
            id=p.id,
            audit_id=audit.id,
            url=p.url,
            status_code=p.status,
            redirect_url=p.redirect_url,
            fetch_class=p.fetch_class,
            content_type=p.content_type if p.status == 200 else "text/html",
            bytes=(20_000 + (i * 7919) % 60_000) if p.status == 200 else 0,
            response_time_ms=40 + (i * 31) % 700,
            depth=p.depth,
            in_sitemap=p.in_sitemap,
            title=p.title if html else "",
            titles_count=1 if html and p.title else 0,
            meta_description=(p.description if p.description != "" else f"{p.title}: all about it at Bench Shop.")
            if html
            else None,
            canonical_url=p.canonical if html else "",
            canonicals_count=1 if html and p.canonical else 0,
            meta_robots=p.meta_robots,
            open_graph={"og:title": p.title, "og:type": "product"} if p.kind == "product" else {},
            h1_count=p.h1_count if html else 0,
            heading_counts={"h1": p.h1_count, "h2": 3, "h3": 5} if html else {},
            heading_order=([1] * p.h1_count + [2, 3, 3, 2, 3, 3, 2, 3]) if html else [],
            word_count=300 + (i * 13) % 900 if html else 0,
            text_hash=p.text_hash if html else "",
            main_text_hash=p.text_hash if html else "",  # the planted pages have no boilerplate
            html_lang=p.lang if html else "",
            images_total=6 if html else 0,
            images_missing_alt=p.images_missing_alt,
            internal_links=p.internal_links,
            external_links=EXTERNAL_LINKS_PER_PAGE if html else 0,
            hreflang=p.hreflang,
            structured_data={"jsonld_blocks": 1, "jsonld_invalid": 0, "types": ["Product"]} if html else {},
            is_indexable=p.indexable,
            fetched_at=now,
        )
        rows.append(page)
        issues += _page_issues(audit.id, page, p, settings, make_issue)

    with transaction.atomic():
        Audit.objects.filter(id=audit.id).update(
            current_phase=Audit.Phase.CRAWLING,
            robots_txt=f"User-agent: *\nDisallow: /cart\n\nSitemap: {base}/sitemap.xml\n",
            robots_status=200,
            discovery={
                "robots_fetched": True,
                "robots_error": None,
                "sitemaps": [f"{base}/sitemap.xml", f"{base}/sitemap-products.xml"],
                "sitemap_documents": 2,
                "sitemap_urls": sum(p.in_sitemap for p in site),
                "sitemap_urls_out_of_scope": 0,
                "sitemap_capped": False,
                "sitemap_errors": [],
                "crawl_delay_s": None,
            },
            pages_crawled=len(site),
            pages_total=len(site),
            crawl_round=math.ceil(len(site) / 200),
            last_progress_at=now,
        )
        for start in range(0, len(rows), PAGE_WRITE_BATCH):
            Page.objects.bulk_create(rows[start : start + PAGE_WRITE_BATCH])
        Issue.objects.bulk_create(issues, batch_size=PAGE_WRITE_BATCH)
        _copy_rows(
            Frontier,
            ("audit_id", "url", "depth", "source", "in_sitemap", "redirect_hops", "state", "attempts"),
            ((audit.id, p.url, p.depth, _frontier_source(p), p.in_sitemap, p.redirect_hops, "done", 1) for p in site),
        )
        _copy_rows(
            LinkEdge,
            ("audit_id", "source_page_id", "target_url", "anchor_text", "nofollow", "internal"),
            ((audit.id, *row) for row in edges),
        )
    return SyntheticCrawl(
        audit_id=str(audit.id),
        pages=len(site),
        link_edges=len(edges),
        frontier_rows=len(site),
        page_issues=len(issues),
        expected=expected,
        seconds=time.perf_counter() - started,
    )


def _frontier_source(p: _Page) -> str:
    return "sitemap" if p.in_sitemap and p.source == "link" else p.source  # sitemap URLs are seeded first


def _copy_rows(model, columns: tuple[str, ...], rows) -> None:
    """COPY `rows` (tuples in `columns` order) into the model's table. Every other column but the id gets
    the model's default, so a field added to the model later does not break the generator."""
    from django.db import connection
    from django.utils import timezone

    rest = [f for f in model._meta.concrete_fields if not f.primary_key and f.column not in columns]
    defaults = tuple(
        timezone.now()
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
        else f.get_db_prep_save(f.get_default(), connection)
        for f in rest
    )
    names = ", ".join(connection.ops.quote_name(c) for c in (*columns, *(f.column for f in rest)))
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {connection.ops.quote_name(model._meta.db_table)} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row((*row, *defaults))


def _page_issues(audit_id, page, planned: _Page, settings, make_issue) -> list:
    """The page issues the crawl would have written for this page (a subset of the page checks)."""
    found = []

    def add(issue_type: str, **details) -> None:
        issue = make_issue(audit_id, issue_type, page=page, details=details, settings=settings)
        if issue is not None:
            found.append(issue)

    if planned.status == 404:
        add("broken-page", status_code=404)
    elif planned.fetch_class == "blocked":
        add("blocked-page", status_code=planned.status, reason="status 403")
    elif planned.status == 200 and not planned.has_links:
        add("non-html-content", content_type=planned.content_type)
    if not planned.has_links:
        return found
    min_depth = settings.threshold("deep-page", "min_depth")
    if page.depth is not None and page.depth >= min_depth:
        add("deep-page", depth=page.depth, min_depth=min_depth)
    if "noindex" in planned.meta_robots:
        add("noindex-page", meta_robots=planned.meta_robots, x_robots_tag="")
    if planned.canonical and planned.canonical != planned.url:
        add("canonicalized-page", canonical=planned.canonical)
    max_chars = settings.threshold("title-too-long", "max_chars")
    if len(page.title) > max_chars:
        add("title-too-long", chars=len(page.title), max_chars=max_chars, title=page.title)
    if page.meta_description is None:
        add("missing-meta-description", present=False)
    if not page.h1_count:
        add("missing-h1", h1_count=0)
    if page.images_missing_alt:
        add("images-missing-alt", images_missing_alt=page.images_missing_alt, images_total=6, srcs=[])
    return found


def tables_analyze() -> None:
    """VACUUM ANALYZE what was just bulk-loaded: after a crawl of minutes autovacuum has done so, and plans
    made on empty-table statistics would time the planner, not finalize."""
    from django.db import connection

    from audits.models import Issue, Page
    from scratchpad.models import Frontier, LinkEdge

    with connection.cursor() as cursor:
        for model in (Page, Issue, Frontier, LinkEdge):
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(model._meta.db_table)}")


# --- the measurement ---------------------------------------------------------------------------------


def _hwm_reset() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS; False where Linux does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _hwm_bytes() -> int | None:
    with contextlib.suppress(OSError):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return None


def finalize_measure(*, audit_id, trace: bool = False) -> dict:
    """Run `audit_finalize` once on `audit_id`: wall time, peak RSS (sampled; kernel mark as a cross-check),
    tracemalloc peak when `trace`, the site issues it wrote by type, the health score."""
    import psutil
    from django.db import connection
    from django.db.models import Count

    from audits.checks.site import SITE_CHECK_TYPES
    from audits.models import Audit, Issue
    from audits.pipeline.finalize import audit_finalize
    from scratchpad.models import Frontier

    def site_issues() -> dict:
        rows = (
            Issue.objects.filter(audit_id=audit_id, type__in=SITE_CHECK_TYPES)
            .values("type")
            .annotate(n=Count("id"))
            .order_by("type")
        )
        return {row["type"]: row["n"] for row in rows}

    before = site_issues()
    connection.ensure_connection()
    gc.collect()
    baseline = psutil.Process().memory_info().rss
    hwm_reset = _hwm_reset()
    with RssSampler(tree=False, interval_s=RSS_SAMPLE_INTERVAL_S) as rss:
        if trace:
            tracemalloc.start()
        started = time.perf_counter()
        completed = audit_finalize(audit_id=audit_id)
        seconds = time.perf_counter() - started
        traced_peak = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
    hwm = _hwm_bytes() if hwm_reset else None
    audit = Audit.objects.get(id=audit_id)
    return {
        "audit_id": str(audit_id),
        "completed": completed,
        "status": audit.status,
        "health_score": audit.health_score,
        "pages_crawled": audit.pages_crawled,
        "seconds": seconds,
        "rss_before_bytes": baseline,
        "rss_peak_bytes": rss.peak,
        "rss_peak_delta_bytes": rss.peak - baseline,
        "rss_samples": rss.samples,
        "rss_hwm_bytes": hwm,
        "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "tracemalloc_peak_bytes": traced_peak,
        "site_issues_before": before,
        "site_issues": site_issues(),
        "frontier_left": Frontier.objects.filter(audit_id=audit_id).count(),
    }


# --- orchestration (no Django in this process) -------------------------------------------------------


def _child_env(db_name: str = FINALIZE_DB_NAME) -> dict[str, str]:
    from bench.run import PG_SERVER_URL, product_env

    env = product_env()
    env["DATABASE_URL"] = f"{PG_SERVER_URL}/{db_name}"
    # A worker runs without DEBUG; with it Django would keep every query's SQL and inflate the memory figure.
    env["DJANGO_DEBUG"] = "false"
    return env


def database_reset(db_name: str = FINALIZE_DB_NAME) -> None:
    """Drop and recreate `db_name` (`sitewarden_bench_finalize`), then migrate it."""
    from bench.run import BenchError, reset_database

    try:
        reset_database(db_name, env=_child_env(db_name))
    except BenchError as exc:
        raise FinalizeBenchError(str(exc)) from exc


def _run_child(*args: str) -> dict:
    from bench.run import PYTHON, REPO

    done = subprocess.run(
        [str(PYTHON), "-m", "bench.finalize", "--child", *args],
        cwd=REPO,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(CHILD_JSON_PREFIX) and done.returncode == 0:
            return json.loads(line[len(CHILD_JSON_PREFIX) :])
    raise FinalizeBenchError(
        f"bench.finalize --child {' '.join(args)} failed ({done.returncode}):\n"
        f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    )


AUDIT_TABLES = (
    "audits_page",
    "audits_pagecounts",
    "audits_issue",
    "scratchpad_linkedge",
    "scratchpad_frontier",
    "audits_auditevent",
)


def audit_tables_bytes(db_name: str = FINALIZE_DB_NAME) -> int:
    """pg_total_relation_size (heap, TOAST, indexes) of the tables an audit fills, after VACUUM ANALYZE."""
    import psycopg

    from bench.run import PG_SERVER_URL

    with psycopg.connect(f"{PG_SERVER_URL}/{db_name}", autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        return sum(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0] for t in AUDIT_TABLES)


def run_finalize_bench(pages: int = DEFAULT_PAGES, *, seed: int = 0) -> dict:
    """Recreate the database, generate two identical crawls, finalize one timed and one under tracemalloc."""
    if pages < MIN_PAGES:
        raise FinalizeBenchError(f"the finalize benchmark needs at least {MIN_PAGES} pages, not {pages}")
    started = time.perf_counter()
    database_reset()
    generated = _run_child("generate", "--pages", str(pages), "--seed", str(seed))
    timed_crawl, traced_crawl = generated["crawls"]
    timed = _run_child("measure", "--audit-id", timed_crawl["audit_id"])
    traced = _run_child("measure", "--audit-id", traced_crawl["audit_id"], "--tracemalloc")
    for run in (timed, traced):
        if run["status"] != "completed":
            raise FinalizeBenchError(f"finalize left audit {run['audit_id']} {run['status']}")
    if timed["site_issues"] != traced["site_issues"]:
        raise FinalizeBenchError("the two identical crawls gave different issues: the generator is not deterministic")
    db_bytes = audit_tables_bytes()
    return {
        "db_bytes": db_bytes,
        # Two identical finalized crawls share the tables: half of them is one audit's.
        "db_bytes_per_page": db_bytes / (2 * timed_crawl["pages"]),
        "pages": timed_crawl["pages"],
        "link_edges": timed_crawl["link_edges"],
        "page_issues_planted": timed_crawl["page_issues"],
        "generate_seconds": generated["seconds"],
        "seconds": timed["seconds"],
        "rss_before_mib": timed["rss_before_bytes"] / MIB,
        "rss_peak_mib": timed["rss_peak_bytes"] / MIB,
        "rss_peak_delta_mib": timed["rss_peak_delta_bytes"] / MIB,
        "rss_hwm_mib": timed["rss_hwm_bytes"] / MIB if timed["rss_hwm_bytes"] else None,
        "tracemalloc_peak_mib": traced["tracemalloc_peak_bytes"] / MIB,
        "traced_seconds": traced["seconds"],
        "traced_rss_peak_delta_mib": traced["rss_peak_delta_bytes"] / MIB,
        "health_score": timed["health_score"],
        "status": timed["status"],
        "site_issues": timed["site_issues"],
        "site_issues_total": sum(timed["site_issues"].values()),
        "expected_site_issues": timed_crawl["expected"],
        "planted_mismatches": planted_mismatches(timed_crawl["expected"], timed["site_issues"]),
        "total_seconds": time.perf_counter() - started,
    }


def print_finalize(result: dict) -> None:
    issues = result["site_issues"]
    print(f"\n== finalize on a {result['pages']:,}-page crawl ({result['link_edges']:,} link edges) ==")
    print(f"  crawl generated in {result['generate_seconds']:.1f}s (two identical copies, COPY + bulk_create)")
    print(f"  finalize: {result['seconds']:.2f} s ({result['seconds'] / result['pages'] * 1000:.3f} ms a page)")
    print(
        f"  database: {result['db_bytes_per_page']:,.0f} bytes a page (pages, issues, link edges, frontier, events "
        f"with their indexes and TOAST: {result['db_bytes'] / MIB:,.1f} MiB for both copies)"
    )
    hwm = f"; kernel high-water mark {result['rss_hwm_mib']:.1f} MiB" if result["rss_hwm_mib"] else ""
    print(
        f"  peak RSS: {result['rss_peak_mib']:.1f} MiB (+{result['rss_peak_delta_mib']:.1f} MiB over "
        f"{result['rss_before_mib']:.1f} MiB before finalize{hwm})"
    )
    print(
        f"  tracemalloc peak: {result['tracemalloc_peak_mib']:.1f} MiB (separate run on the identical copy, "
        f"{result['traced_seconds']:.2f} s with tracing on)"
    )
    print(f"  health score {result['health_score']}, status {result['status']}")
    print(f"  site issues written: {result['site_issues_total']:,}")
    for issue_type, count in sorted(issues.items()):
        print(f"    {issue_type:<32}{count:>7,}")
    mismatches = result["planted_mismatches"]
    if mismatches:
        print(f"  MISMATCH against the planted structure (type: expected, written): {mismatches}")
    else:
        print("  every count matches the planted structure")
    print(JSON_PREFIX + json.dumps(result, sort_keys=True), flush=True)


def _child_main(args) -> int:
    import django

    django.setup()
    if args.child == "generate":
        crawls = [
            asdict(synthetic_crawl_create(pages=args.pages, seed=args.seed, name=name)) for name in ("timed", "traced")
        ]
        started = time.perf_counter()
        tables_analyze()
        seconds = sum(c["seconds"] for c in crawls) + time.perf_counter() - started
        print(CHILD_JSON_PREFIX + json.dumps({"crawls": crawls, "seconds": seconds}), flush=True)
    else:
        print(CHILD_JSON_PREFIX + json.dumps(finalize_measure(audit_id=args.audit_id, trace=args.tracemalloc)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="pages of the synthetic crawl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", choices=("generate", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--audit-id", help=argparse.SUPPRESS)
    parser.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pages < MIN_PAGES:
        parser.error(f"--pages must be at least {MIN_PAGES}")
    if args.child:
        return _child_main(args)
    try:
        print_finalize(run_finalize_bench(args.pages, seed=args.seed))
    except FinalizeBenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
