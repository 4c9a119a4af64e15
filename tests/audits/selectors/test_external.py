"""audits.selectors.external: an audit's external targets filtered, sorted and keyset-paginated, counted per
outcome, and the pages linking to one target with their anchors."""

import pytest

from audits.models import ExternalLink
from audits.selectors import external
from audits.selectors.pagination import keyset_paginate
from tests.factories import AuditFactory
from tests.support.external_links import external_world

pytestmark = pytest.mark.django_db

Outcome = ExternalLink.Outcome


def _urls(rows):
    return [r.url for r in rows]


def test_filters_by_outcome_problems_host_and_url():
    audit, links, _pages = external_world()
    every = external.external_link_filter(audit=audit)
    assert every.count() == 5  # not the other audit's
    assert _urls(external.external_link_filter(audit=audit, outcome=Outcome.CLIENT_ERROR)) == [links["dead"].url]
    assert external.external_link_filter(audit=audit, outcome="no-such-outcome").count() == 0
    problems = set(_urls(external.external_link_filter(audit=audit, problems=True)))
    assert problems == {links["dead"].url, links["down"].url, links["nxdomain"].url}
    assert _urls(external.external_link_filter(audit=audit, host="DOWN.example")) == [links["down"].url]
    assert _urls(external.external_link_filter(audit=audit, url_contains="GONE")) == [links["dead"].url]


def test_problems_are_every_outcome_but_ok_and_redirected():
    assert set(external.PROBLEM_OUTCOMES) == set(Outcome.values) - {"ok", "redirected"}


def test_sorts_by_linking_pages_most_first_then_url_and_by_url():
    audit, links, _pages = external_world()
    by_pages = external.external_link_list(external.external_link_filter(audit=audit), sort="-pages")
    assert _urls(by_pages) == [
        links["dead"].url,  # 2 pages, https://d… before https://f…
        links["ok"].url,
        links["moved"].url,  # 1 page each, by URL
        links["down"].url,
        links["nxdomain"].url,
    ]
    by_url = external.external_link_list(external.external_link_filter(audit=audit), sort="url")
    assert _urls(by_url) == sorted(_urls(by_url))
    assert external.external_sort_key("nonsense") == external.DEFAULT_EXTERNAL_SORT


@pytest.mark.parametrize("sort", sorted(external.EXTERNAL_SORTS))
def test_keyset_pages_walk_every_target_once_in_order(sort):
    audit, _links, _pages = external_world()
    rows = external.external_link_list(external.external_link_filter(audit=audit), sort=sort)
    expected = _urls(rows)
    seen, cursor = [], None
    while True:
        page = keyset_paginate(
            rows,
            columns=external.external_keyset_columns(sort),
            cursor=cursor,
            tag=external.external_cursor_tag(audit.id, sort),
            per_page=2,
        )
        seen += _urls(page)
        if not page.has_next:
            break
        cursor = page.next_cursor
    assert seen == expected


def test_counts_per_outcome_are_zero_filled_with_the_problems_summed():
    audit, _links, _pages = external_world()
    counts = external.external_counts(audit=audit)
    assert [row.outcome for row in counts.by_outcome] == list(Outcome.values)
    assert counts.as_dict()["client_error"] == 1 and counts.as_dict()["timeout"] == 0
    assert counts.total == 5 and counts.problems == 3
    empty = external.external_counts(audit=AuditFactory())
    assert empty.total == 0 and all(row.count == 0 for row in empty.by_outcome)


def test_the_linking_pages_of_a_target_with_their_anchors():
    audit, links, (a, b) = external_world()
    rows = list(external.external_linking_pages(audit=audit, url=links["dead"].url))
    assert [(r["source_page__url"], r["anchor_text"]) for r in rows] == [(a.url, "Gone"), (b.url, "Gone again")]
    assert external.external_linking_pages_count(audit=audit, url=links["dead"].url) == 2
    # the internal edge to a similar URL and the other audit's rows are not its linking pages
    assert external.external_linking_pages_count(audit=audit, url=links["dead"].url + "?internal") == 0
    assert external.external_link_get(audit=audit, url=links["dead"].url) == links["dead"]
    assert external.external_link_get(audit=audit, link_id=links["ok"].id) == links["ok"]
    assert external.external_link_get(audit=AuditFactory(), url=links["dead"].url) is None
    sample = external.external_linking_sample(audit=audit, urls=[links["ok"].url], per_target=1)
    assert [r["anchor_text"] for r in sample[links["ok"].url]] == ["Fine"]


def test_checking_on_follows_the_audit_snapshot_then_the_project():
    audit = AuditFactory()
    audit.project.check_external_links = True  # the model's default (ProjectFactory turns it off: no network)
    assert external.external_checking_on(audit=audit) is True
    audit.project.check_external_links = False
    assert external.external_checking_on(audit=audit) is False
    audit.config = {**audit.config, "check_external_links": True}
    assert external.external_checking_on(audit=audit) is True
