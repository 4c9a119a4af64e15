"""bench.run's own judgement of an audit's summary (the audit itself runs only under `make bench`)."""

import pytest

from bench.baseline import BaselineResult
from bench.cpu import CpuUse
from bench.run import ProductResult, SizeResult, _absent_issues, _baseline_ms_per_page, _cpu_ratio, print_cpu


def test_a_finding_the_generated_site_cannot_have_is_named_with_its_count():
    summary = {"issues_by_type": {"near-duplicate-content": 161, "deep-page": 9099, "orphan-page": 1}}
    assert _absent_issues(summary) == {"near-duplicate-content": 161}


def test_none_reported_or_none_at_all_is_nothing_wrong():
    assert _absent_issues({"issues_by_type": {"orphan-page": 1, "near-duplicate-content": 0}}) == {}
    assert _absent_issues({}) == {}


def _size(product_ms: float, before_ms: float, after_ms: float | None) -> SizeResult:
    """A 1,000-page size with the machine's CPU a page of the audit and of the baseline before and after it."""
    pages = 1000

    def cpu(ms: float) -> CpuUse:
        return CpuUse(machine_s=ms * pages / 1000, own_s=0.0, cores=2)

    crawl = BaselineResult(pages=pages, seconds=1.0, pages_per_s=pages, peak_rss_bytes=1)
    product = ProductResult(pages=pages, seconds=1.0, pages_per_s=pages, peak_worker_rss_bytes=1, cpu=cpu(product_ms))
    if after_ms is None:
        return SizeResult(pages, pages, crawl, product, cpu(before_ms))
    return SizeResult(pages, pages, crawl, product, cpu(before_ms), crawl, cpu(after_ms))


def test_the_cpu_ratio_is_to_the_mean_of_the_baselines_before_and_after_the_audit():
    drifted = _size(product_ms=4.0, before_ms=1.8, after_ms=2.2)
    assert _baseline_ms_per_page(drifted) == pytest.approx([1.8, 2.2])
    assert _cpu_ratio(drifted) == pytest.approx(2.0)
    # a run without the second crawl (the audit failed before it) keeps the first
    assert _cpu_ratio(_size(product_ms=4.0, before_ms=1.6, after_ms=None)) == pytest.approx(2.5)


def test_the_drift_between_the_two_baselines_is_printed(capsys):
    print_cpu(_size(product_ms=4.0, before_ms=2.0, after_ms=2.5))
    out = capsys.readouterr().out
    assert "baseline after the audit: 2.50 CPU ms a page (before it 2.00, drift +25%)" in out
    assert "the ratio is to their mean, 2.25" in out
    assert "CPU a page ours/baseline: 1.78x" in out
