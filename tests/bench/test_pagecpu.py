"""bench.pagecpu measures the crawl's per-page CPU path on generated pages: it runs that path for real (parse,
checks, signature, edges) and its fingerprint of what the pages came out as is repeatable, so a speed-up that
changes a finding shows as a changed fingerprint."""

from bench.pagecpu import run


def test_pagecpu_runs_the_page_path_and_its_fingerprint_is_repeatable():
    first = run(12)
    assert first["pages"] >= 12 and first["edges"] > first["pages"]  # every generated page links to several
    assert first["cpu_ms_per_page"] > 0 and first["baseline_cpu_ms_per_page"] > 0
    assert set(first["breakdown_ms"]) == {"parse", "checks", "signature", "other"}
    assert first["compiled_parsers_ms"]["lxml_tree"] > 0  # lexbor's lines only where selectolax is installed
    assert run(12)["fingerprint"] == first["fingerprint"]
    assert run(12, seed=1)["fingerprint"] != first["fingerprint"]  # other pages, another fingerprint
