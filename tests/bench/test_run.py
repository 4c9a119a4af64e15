"""bench.run's own judgement of an audit's summary (the audit itself runs only under `make bench`)."""

from bench.run import _absent_issues


def test_a_finding_the_generated_site_cannot_have_is_named_with_its_count():
    summary = {"issues_by_type": {"near-duplicate-content": 161, "deep-page": 9099, "orphan-page": 1}}
    assert _absent_issues(summary) == {"near-duplicate-content": 161}


def test_none_reported_or_none_at_all_is_nothing_wrong():
    assert _absent_issues({"issues_by_type": {"orphan-page": 1, "near-duplicate-content": 0}}) == {}
    assert _absent_issues({}) == {}
