"""audits/pipeline/persist.py: the page upsert a batch makes (COPY into a stage on PostgreSQL)."""

import pytest
from django.db import connection, transaction
from django.utils import timezone

from audits.models import Page, page_id_for
from audits.pipeline.persist import pages_upsert
from tests.factories import AuditFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _page(audit, path: str, **fields) -> Page:
    url = f"http://127.0.0.1:1{path}"
    values = dict(status_code=200, fetch_class=Page.FetchClass.OK, content_type="text/html", fetched_at=timezone.now())
    return Page(id=page_id_for(audit.id, url), audit_id=audit.id, url=url, **{**values, **fields})


def test_pages_are_inserted_then_a_replay_updates_them_in_place():
    assert connection.vendor == "postgresql"
    audit = AuditFactory()
    first = [
        _page(audit, "/a", title="A", headings=[[1, "Ä «quoted» \\ back\tslash"]], open_graph={"og:title": "A"}),
        _page(audit, "/b", title="B", status_code=None, hreflang=[["de", "http://127.0.0.1:1/de/b"]]),
    ]
    with transaction.atomic():
        pages_upsert(first)
    stored = {p.url: p for p in Page.objects.filter(audit=audit)}
    assert len(stored) == 2
    a = stored["http://127.0.0.1:1/a"]
    assert a.title == "A" and a.headings == [[1, "Ä «quoted» \\ back\tslash"]] and a.open_graph == {"og:title": "A"}
    assert stored["http://127.0.0.1:1/b"].status_code is None
    assert stored["http://127.0.0.1:1/b"].hreflang == [["de", "http://127.0.0.1:1/de/b"]]

    # The same pages again (a replayed batch), changed, outside any transaction of the caller's: updated in place.
    again = [_page(audit, "/a", title="A2", word_count=7), _page(audit, "/b", title="B2", structured_data={"x": [1]})]
    pages_upsert(again)
    pages_upsert([])
    stored = {p.url: p for p in Page.objects.filter(audit=audit)}
    assert len(stored) == 2
    assert stored["http://127.0.0.1:1/a"].title == "A2" and stored["http://127.0.0.1:1/a"].word_count == 7
    assert stored["http://127.0.0.1:1/a"].headings == []  # every field is the new record's
    assert stored["http://127.0.0.1:1/b"].structured_data == {"x": [1]}


def test_two_batches_in_one_transaction_each_write_their_own_pages():
    audit = AuditFactory()
    with transaction.atomic():
        pages_upsert([_page(audit, "/one")])
        pages_upsert([_page(audit, "/two")])
    assert sorted(Page.objects.filter(audit=audit).values_list("url", flat=True)) == [
        "http://127.0.0.1:1/one",
        "http://127.0.0.1:1/two",
    ]
