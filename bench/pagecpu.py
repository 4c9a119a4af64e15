"""Per-page CPU of the crawl path without the network or the database: parse, page checks, MinHash signature.

python -m bench.pagecpu [--pages 500] [--repeat 1] [--seed 0] [--page-kb 40]

Generates a site with bench.sitegen, reads its pages and times (process CPU, not wall clock: other processes on
the machine do not move it much) `build_page_record` over them, then each part on its own for a breakdown, and
the bare baseline's parse (parsel, bench/baseline.py) of the same bodies for the ratio. Informational: nothing
is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urldefrag, urljoin

BASE_URL = "http://127.0.0.1:8000"
WARMUP_PAGES = 20  # first calls fill caches (normalize, permutations, imports): not what a long crawl pays


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django  # why: the settings must be chosen before Django is imported and set up

    django.setup()


def _site_pages(pages: int, seed: int, page_kb: int, root: Path) -> list[tuple[str, bytes]]:
    """(url, body) of the generated site's HTML pages, placeholder filled as bench.serve does."""
    from bench.sitegen import BASE_URL_PLACEHOLDER, generate_site  # why: keeps `--help` free of imports

    generate_site(root, pages, seed=seed, page_kb=page_kb, features=True)
    found = []
    for path in sorted(root.rglob("*.html")):
        rel = "/" + path.relative_to(root).as_posix()
        url = BASE_URL + ("/" if rel == "/index.html" else rel)
        found.append((url, path.read_bytes().replace(BASE_URL_PLACEHOLDER.encode(), BASE_URL.encode())))
    return found


def _cpu_ms_per_page(fn: Callable[[str, bytes], object], pages: list[tuple[str, bytes]], repeat: int) -> float:
    for url, body in pages[:WARMUP_PAGES]:
        fn(url, body)
    start = time.process_time()
    for _ in range(repeat):
        for url, body in pages:
            fn(url, body)
    return (time.process_time() - start) * 1000 / (len(pages) * repeat)


def run(pages: int, *, repeat: int = 1, seed: int = 0, page_kb: int = 40) -> dict:
    _setup_django()
    # The product's modules import Django models: they can only be imported once Django is set up.
    from parsel import Selector  # why: the baseline's parser, imported with the product's modules below

    from audits.checks.content import text_signature  # why: after django.setup()
    from audits.checks.page import page_issues  # why: after django.setup()
    from audits.pipeline.page_record import _fill_from_html, _is_indexable, build_page_record  # why: after setup
    from audits.pipeline.scope import CrawlScope  # why: after django.setup()
    from crawler import speedups  # why: after django.setup(), with the rest
    from crawler.discovery import Robots  # why: after django.setup(), with the rest
    from crawler.fetch import FetchResult  # why: after django.setup(), with the rest
    from crawler.parse import parse_html  # why: after django.setup(), with the rest
    from scratchpad.services import ClaimedURL  # why: after django.setup()

    with tempfile.TemporaryDirectory(prefix="sitewarden-pagecpu-") as tmp:
        site = _site_pages(pages, seed, page_kb, Path(tmp))
    scope = CrawlScope(start_url=BASE_URL + "/", site_url=BASE_URL + "/", robots=Robots(None, "Sitewarden"))
    audit_id = 1

    def result_for(url: str, body: bytes) -> FetchResult:
        return FetchResult(
            url=url, status_code=200, headers={"content-type": "text/html; charset=utf-8"},
            content_type="text/html", charset="utf-8", body=body, bytes_read=len(body), response_time_ms=20,
        )  # fmt: skip

    results = {url: result_for(url, body) for url, body in site}
    claimed = {url: ClaimedURL(id=i, url=url, depth=1, in_sitemap=True, redirect_hops=0, handouts=1)
               for i, (url, _) in enumerate(site)}  # fmt: skip

    def whole(url, body):
        return build_page_record(audit_id, scope, claimed[url], results[url])

    def parse(url, body):
        return parse_html(body, url, content_type_charset="utf-8", is_internal=scope.is_internal)

    parsed = {url: parse(url, body) for url, body in site}
    records = {url: whole(url, body) for url, body in site}

    def signature(url, body):
        return text_signature(parsed[url].main_text)

    def checks(url, body):
        page = records[url].page
        _fill_from_html(page, parsed[url])
        page.is_indexable = _is_indexable(page)
        return page_issues(page, parsed[url], results[url], scope.checks)

    def baseline(url, body):
        selector = Selector(body=body, type="html", encoding="utf-8")
        return [urldefrag(urljoin(url, href.strip()))[0] for href in selector.css("a::attr(href)").getall()]

    total = _cpu_ms_per_page(whole, site, repeat)
    parts = {name: _cpu_ms_per_page(fn, site, repeat) for name, fn in
             (("parse", parse), ("checks", checks), ("signature", signature))}  # fmt: skip
    parts["other"] = total - sum(parts.values())  # by difference: within the noise when small (can be < 0)
    base = _cpu_ms_per_page(baseline, site, repeat)
    compiled = _compiled_parsers(site, repeat)
    issues = sum(len(r.issues) for r in records.values())
    # What the pages came out as (parsed data, signature, issues, edges): equal before and after a speed-up, or the
    # speed-up changed a finding.
    digest = hashlib.sha256()
    for url, _ in site:
        record = records[url]
        digest.update(repr(dataclasses.asdict(parsed[url])).encode())
        digest.update(record.page.text_signature.encode())
        digest.update(repr([(i.type, sorted(i.details.items())) for i in record.issues]).encode())
        digest.update(repr([dataclasses.astuple(e) for e in record.edges]).encode())
    return {
        "pages": len(site),
        "bytes_per_page": sum(len(b) for _, b in site) // len(site),
        "cpu_ms_per_page": round(total, 3),
        "breakdown_ms": {k: round(v, 3) for k, v in parts.items()},
        "baseline_cpu_ms_per_page": round(base, 3),
        "ratio_to_baseline": round(total / base, 2) if base else None,
        "compiled_parsers_ms": {k: round(v, 3) for k, v in compiled.items()},
        "issues": issues,
        "edges": sum(len(r.edges) for r in records.values()),
        "fingerprint": digest.hexdigest()[:16],
        "speedups_built": speedups.native is not None,
    }


# What the lexbor text costs is measured on: the body without the subtrees page_text leaves out (its own word rules
# are not applied: an estimate of the compiled walk's cost, not its output).
_LEXBOR_INVISIBLE = "script, style, noscript, template, svg"


def _compiled_parsers(site: list[tuple[str, bytes]], repeat: int) -> dict[str, float]:
    """CPU ms a page of the tree our parse builds (lxml, crawler.parse.document) and, when selectolax is installed
    (requirements/bench.txt), of lexbor's tree and its visible text on the same bodies: issue 29's "a compiled
    parser where it pays", measured against lxml on the same pages."""
    from crawler.parse.document import parse_document  # why: after django.setup(), with the product's modules

    found = {"lxml_tree": _cpu_ms_per_page(lambda url, body: parse_document(body, "utf-8"), site, repeat)}
    try:
        from selectolax.lexbor import LexborHTMLParser  # why: optional, a bench-only dependency
    except ImportError:
        return found

    def lexbor_text(url, body):
        tree = LexborHTMLParser(body)
        for node in tree.css(_LEXBOR_INVISIBLE):
            node.decompose()
        return tree.body.text(separator=" ") if tree.body is not None else ""

    found["lexbor_tree"] = _cpu_ms_per_page(lambda url, body: LexborHTMLParser(body), site, repeat)
    found["lexbor_tree_and_text"] = _cpu_ms_per_page(lexbor_text, site, repeat)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CPU per page of parse + page checks + signature (no DB).")
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1, help="passes over the pages per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--page-kb", type=int, default=40)
    parser.add_argument("--json", action="store_true", help="print one line of JSON only")
    args = parser.parse_args(argv)
    out = run(args.pages, repeat=args.repeat, seed=args.seed, page_kb=args.page_kb)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"pages: {out['pages']} ({out['bytes_per_page'] // 1024} KiB each), issues {out['issues']}, "
          f"edges {out['edges']}, fingerprint {out['fingerprint']}")  # fmt: skip
    signature_code = "C, crawler.speedups" if out["speedups_built"] else "numpy: crawler.speedups not built"
    print(f"build_page_record: {out['cpu_ms_per_page']:.2f} ms CPU per page (signature: {signature_code})")
    for name, ms in out["breakdown_ms"].items():
        print(f"  {name:<10} {ms:6.2f} ms  ({100 * ms / out['cpu_ms_per_page']:.0f} %)")
    print(f"baseline parse (parsel): {out['baseline_cpu_ms_per_page']:.2f} ms CPU per page; "
          f"ours / baseline = {out['ratio_to_baseline']}")  # fmt: skip
    compiled = out["compiled_parsers_ms"]
    print(f"tree alone: lxml (our parse's first step) {compiled['lxml_tree']:.2f} ms CPU per page", end="")
    if "lexbor_tree" in compiled:
        print(f"; lexbor (selectolax) {compiled['lexbor_tree']:.2f}, with the visible text "
              f"{compiled['lexbor_tree_and_text']:.2f}")  # fmt: skip
    else:
        print("; lexbor: selectolax not installed (pip install -r requirements/bench.txt)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
