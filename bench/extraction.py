"""Custom extraction's cost per page: in the crawl's own process (as before issue 24) against the sandbox's child
process (audits/extraction_sandbox.py), for a normal page and a few extractors; and what a cubic XPath costs.

python -m bench.extraction [--pages 300] [--page-kb 40]

CPU per page is the parent's CPU (process_time: pickling nothing, framing, the pipe, the lock) plus the child's
(its user + system time); the in-process figure is the parent's alone. Prints a block and one
`EXTRACTION_JSON {...}` line. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import django
import psutil

JSON_PREFIX = "EXTRACTION_JSON "
EXTRACTORS = [
    {"name": "price", "kind": "css", "expression": ".price::text"},
    {"name": "sku", "kind": "xpath", "expression": "//meta[@name='sku']/@content"},
    {"name": "code", "kind": "regex", "expression": r'data-code="(\w+)"'},
    {"name": "tags", "kind": "css", "expression": "li.tag", "multiple": True},
]
CUBIC = "count(//*[count(//*[count(//*) > 0]) > 0])"


def normal_page(kb: int) -> bytes:
    """A product page of about `kb` KiB: navigation, paragraphs, a price, tags, meta."""
    nav = "".join(f'<li><a href="/c/{i}">Category {i}</a></li>' for i in range(40))
    para = "<p>" + " ".join(f"word{i}" for i in range(120)) + "</p>"
    head = "<head><title>Product</title><meta name='sku' content='SKU-1'><meta name=description content=d></head>"
    body = f"<nav><ul>{nav}</ul></nav><h1>Product</h1><span class=price>€ 12</span><div data-code='ABC1'></div>"
    tags = "".join(f'<li class="tag">t{i}</li>' for i in range(8))
    html = f"<!doctype html><html>{head}<body>{body}<ul>{tags}</ul>"
    while len(html) < kb * 1024:
        html += para
    return (html + "</body></html>").encode()


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--page-kb", type=int, default=40)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    # why: after django.setup(): audits.extraction imports the models
    from audits.extraction import compile_extractors, extract
    from audits.extraction_eval import compiled, evaluate
    from audits.extraction_sandbox import sandbox

    body = normal_page(args.page_kb)
    extractors = compile_extractors(EXTRACTORS)
    inline = [compiled(e.kind, e.expression, e.multiple) for e in extractors]
    list(evaluate(inline, body))  # warm: the parser's imports
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    for _ in range(args.pages):
        before = list(evaluate(inline, body))
    in_process_cpu = (time.process_time() - started_cpu) / args.pages
    in_process_wall = (time.perf_counter() - started_wall) / args.pages

    warm = extract(extractors, body)  # starts the child (its imports are not a page's cost)
    assert list(warm.values.values()) == before, (warm.values, before)
    child = psutil.Process(sandbox()._child.pid)
    parent_cpu, child_cpu, started_wall = time.process_time(), _cpu(child), time.perf_counter()
    for _ in range(args.pages):
        extract(extractors, body)
    sandbox_parent = (time.process_time() - parent_cpu) / args.pages
    sandbox_child = (_cpu(child) - child_cpu) / args.pages
    sandbox_wall = (time.perf_counter() - started_wall) / args.pages
    child_rss = child.memory_info().rss

    cubic = compile_extractors([{"name": "cubic", "kind": "xpath", "expression": CUBIC}])
    cubic_rows = []
    for elements in (100, 200, 400):
        page = ("<html><body>" + "<p>x</p>" * elements + "</body></html>").encode()
        result = extract(cubic, page, budget_s=60)
        cubic_rows.append((elements, round(result.cpu_s, 3)))
    big = ("<html><body>" + "<p>x</p>" * 3000 + "</body></html>").encode()
    stopped = extract(cubic, big)

    figures = {
        "page_bytes": len(body),
        "extractors": len(EXTRACTORS),
        "pages": args.pages,
        "in_process_cpu_ms": round(in_process_cpu * 1000, 3),
        "in_process_wall_ms": round(in_process_wall * 1000, 3),
        "sandbox_parent_cpu_ms": round(sandbox_parent * 1000, 3),
        "sandbox_child_cpu_ms": round(sandbox_child * 1000, 3),
        "sandbox_cpu_ms": round((sandbox_parent + sandbox_child) * 1000, 3),
        "sandbox_wall_ms": round(sandbox_wall * 1000, 3),
        "child_rss_mib": round(child_rss / 2**20, 1),
        "cubic_cpu_s_by_elements": cubic_rows,
        "cubic_3000_stopped": stopped.stopped,
        "cubic_3000_cpu_s": round(stopped.cpu_s, 3),
    }
    print(f"page {len(body)} bytes, {len(EXTRACTORS)} extractors, {args.pages} pages")
    print(f"  in process (before): {figures['in_process_cpu_ms']} ms CPU/page, {figures['in_process_wall_ms']} ms wall")
    print(
        f"  sandbox (after):     {figures['sandbox_cpu_ms']} ms CPU/page (parent {figures['sandbox_parent_cpu_ms']}"
        f" + child {figures['sandbox_child_cpu_ms']}), {figures['sandbox_wall_ms']} ms wall; "
        f"child RSS {figures['child_rss_mib']} MiB"
    )
    print(f"  cubic XPath CPU (elements, s): {cubic_rows}; at 3,000 elements: stopped after {stopped.cpu_s:.2f} s")
    print(JSON_PREFIX + json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
