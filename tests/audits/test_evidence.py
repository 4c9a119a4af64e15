"""Evidence in named columns for every issue type of the registry: the rows, the per-type CSV/JSON exports
and the all-issues exports carry the same flat columns, never a JSON blob."""

import csv
import io
import json

import pytest

from audits import exports
from audits.checks.registry import CHECKS
from audits.evidence import (
    UNIT_SINGULAR,
    check_coverage,
    evidence_columns,
    evidence_count_unit,
    evidence_group_count,
    evidence_note,
    evidence_rows,
)
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.factories import ProjectFactory, UserFactory

# What the checks store in Issue.details (audits/checks/page.py, site.py, pipeline/lighthouse.py), per type
# whose evidence reads more than the page URL.
SAMPLES = {
    "broken-internal-link": {"target_url": SITE + "/gone", "status_code": 404, "links": 2, "anchor_text": "Old"},
    "internal-link-to-redirect": {
        "target_url": SITE + "/old",
        "status_code": 301,
        "links": 1,
        "anchor_text": "Old",
        "redirect_url": SITE + "/new",
    },
    "redirect-chain": {
        "hops": [{"url": SITE + "/a", "status_code": 301}, {"url": SITE + "/b", "status_code": 302}],
        "hops_count": 2,
        "final_url": SITE + "/c",
        "final_status_code": 200,
        "followed_to_limit": False,
    },
    "duplicate-title": {"group_size": 3, "other_urls": [SITE + "/x", SITE + "/y"], "title": "Shop"},
    "hreflang-missing-return-link": {
        "missing_count": 2,
        "missing": [{"hreflang": "de", "href": SITE + "/de"}, {"hreflang": "fr", "href": SITE + "/fr"}],
    },
    "hreflang-invalid": {"values_count": 1, "values": [{"hreflang": "en-UK", "href": SITE + "/uk", "problem": "x"}]},
    "title-too-long": {"chars": 80, "max_chars": 60, "title": "A" * 80},
    "non-descriptive-link-text": {"links_count": 1, "links": [{"href": SITE + "/more", "text": "click here"}]},
    "robots-txt-invalid": {"invalid_count": 2, "lines": ["Dissallow: /", "foo"]},
    "poor-lcp": {"value": 4100, "threshold": 2500, "unit": "ms", "strategy": "mobile"},
    "multiple-titles": {"titles_count": 2, "titles": ["One", "Two"]},
    "missing-meta-description": {"present": False},
}


@pytest.fixture
def owner(db):
    return UserFactory(username="evidence-owner")


SITE_WIDE = {"sitemap-missing", "robots-txt-invalid", "crawl-rate-limited", "max-pages-reached", "crawl-urls-skipped"}
# Security headers are set once for the whole site: one issue per header, its pages listed as rows.
SITE_WIDE |= {"missing-hsts", "missing-x-content-type-options", "missing-x-frame-options", "missing-referrer-policy"}
SITE_WIDE |= {"external-links-unchecked"}  # what the external link pass's cap or budget left unchecked
SITE_WIDE |= {"sitemap-read-in-part"}  # sitemap URLs past discovery's caps


def keys(issue_type):
    return [key for key, _ in evidence_columns(issue_type)]


def test_every_registry_type_has_named_columns_and_a_unit():
    assert check_coverage() == []
    for spec in CHECKS:
        columns = evidence_columns(spec.type)
        assert columns, spec.type
        assert len({k for k, _ in columns}) == len(columns), f"{spec.type}: duplicate column keys"
        assert all(label.strip() for _, label in columns), spec.type
        assert evidence_count_unit(spec.type) in UNIT_SINGULAR, spec.type
        assert ("page_url" in keys(spec.type)) == (spec.type not in SITE_WIDE), spec.type


@pytest.mark.django_db
def test_rows_and_exports_have_the_named_flat_columns_for_every_type(owner):
    audit = finished_audit(ProjectFactory(owner=owner))
    for spec in CHECKS:
        page = None if spec.type in SITE_WIDE else make_page(audit, f"/{spec.type}")
        make_issue(audit, page, spec.type, spec.severity, **SAMPLES.get(spec.type, {}))
    for spec in CHECKS:
        expected = keys(spec.type)
        rows = list(evidence_rows(audit=audit, issue_type=spec.type))
        assert rows, spec.type
        for row in rows:
            assert list(row) == expected, spec.type
            assert all(isinstance(v, (str, int, float)) for v in row.values()), f"{spec.type}: not flat: {row}"
        reader = csv.reader(io.StringIO("".join(exports.issue_type_csv_rows(audit, spec.type))))
        assert next(reader) == expected, spec.type
        assert len(list(reader)) == len(rows)
        objects = json.loads("".join(exports.issue_type_json_chunks(audit, spec.type)))
        assert [list(o) for o in objects] == [expected] * len(rows), spec.type
    everything = json.loads("".join(exports.issues_json_chunks(audit)))
    assert {tuple(o) for o in everything} == {exports.ISSUE_COLUMNS}
    assert "details" not in exports.ISSUE_COLUMNS
    assert len(set(exports.ISSUE_COLUMNS)) == len(exports.ISSUE_COLUMNS)
    header = next(csv.reader(io.StringIO("".join(exports.issues_csv_rows(audit)))))
    assert tuple(header) == exports.ISSUE_COLUMNS


@pytest.mark.django_db
def test_broken_link_redirect_chain_duplicate_title_and_hreflang_evidence(owner):
    audit = finished_audit(ProjectFactory(owner=owner))
    home = make_page(audit, "/")
    for issue_type in ("broken-internal-link", "redirect-chain", "hreflang-missing-return-link"):
        make_issue(audit, home, issue_type, "warning", **SAMPLES[issue_type])
    for path in ("/x", "/y", "/z"):
        make_issue(audit, make_page(audit, path), "duplicate-title", "warning", title="Shop", group_size=3)
    make_issue(audit, make_page(audit, "/w"), "duplicate-title", "warning", title="About", group_size=1)

    (link,) = evidence_rows(audit=audit, issue_type="broken-internal-link")
    assert evidence_columns("broken-internal-link")[:4] == [
        ("page_url", "Source page"),
        ("target_url", "Target"),
        ("anchor_text", "Anchor text"),
        ("target_status_code", "Target status"),
    ]
    assert (link["page_url"], link["target_url"], link["anchor_text"], link["target_status_code"]) == (
        home.url,
        SITE + "/gone",
        "Old",
        404,
    )
    assert evidence_count_unit("broken-internal-link") == "links"

    (chain,) = evidence_rows(audit=audit, issue_type="redirect-chain")
    assert chain["hops"] == f"{SITE}/a (301) → {SITE}/b (302) → {SITE}/c (200)"

    titles = list(evidence_rows(audit=audit, issue_type="duplicate-title"))
    assert [r["title"] for r in titles] == ["About", "Shop", "Shop", "Shop"]  # a group's rows stay together
    assert evidence_group_count(audit=audit, issue_type="duplicate-title") == 2

    hreflang = list(evidence_rows(audit=audit, issue_type="hreflang-missing-return-link"))
    assert [(r["page_url"], r["hreflang"], r["target_url"]) for r in hreflang] == [
        (home.url, "de", SITE + "/de"),
        (home.url, "fr", SITE + "/fr"),
    ]
    assert "no hreflang link back" in hreflang[0]["missing"]


@pytest.mark.django_db
def test_a_capped_link_check_marker_is_a_note_not_a_row(owner):
    audit = finished_audit(ProjectFactory(owner=owner))
    make_issue(audit, make_page(audit, "/"), "broken-internal-link", "critical", **SAMPLES["broken-internal-link"])
    make_issue(audit, None, "broken-internal-link", "info", capped=True, message="7 more (page, link) pairs")
    assert len(list(evidence_rows(audit=audit, issue_type="broken-internal-link"))) == 1
    assert evidence_note(audit=audit, issue_type="broken-internal-link") == "7 more (page, link) pairs"
