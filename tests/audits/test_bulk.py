"""audits/bulk.py on PostgreSQL: rows go in through COPY, a replayed row is kept or updated as asked, JSON and the
times a save would set arrive as a save would store them, and two batches can share a transaction."""

import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from audits.bulk import issues_insert, rows_insert, rows_stored
from audits.models import Issue, Page
from tests.factories import AuditFactory

pytestmark = pytest.mark.django_db


def _issue(audit, n: int, **details) -> Issue:
    return Issue(
        id=uuid.uuid5(uuid.NAMESPACE_URL, f"{audit.id}/{n}"),
        audit_id=audit.id,
        page_url=f"https://example.com/{n}",
        type="broken-internal-link",
        severity=Issue.Severity.CRITICAL,
        details=details,
    )


def test_issues_arrive_as_a_save_would_store_them():
    audit = AuditFactory()
    details = {"target": 'https://example.com/é?q="x"\t', "sources": [1, None, True], "nested": {"a": []}}
    assert issues_insert([_issue(audit, 1, **details), _issue(audit, 2)]) == 2
    stored = {i.page_url: i for i in Issue.objects.filter(audit=audit)}
    assert stored["https://example.com/1"].details == details
    assert stored["https://example.com/2"].details == {}
    assert stored["https://example.com/1"].severity == "critical" and stored["https://example.com/1"].page_id is None
    assert all(i.created_at is not None for i in stored.values())  # auto_now_add, set as a save sets it


def test_a_replayed_issue_is_kept_as_first_stored():
    audit = AuditFactory()
    issues_insert([_issue(audit, 1, first=True)])
    issues_insert([_issue(audit, 1, first=False), _issue(audit, 2)])  # a retried batch meets its own rows
    assert Issue.objects.filter(audit=audit).count() == 2
    assert Issue.objects.get(page_url="https://example.com/1").details == {"first": True}


def test_issues_stream_in_batches_within_one_transaction(monkeypatch):
    from audits import bulk

    monkeypatch.setattr(bulk, "ISSUE_WRITE_BATCH", 3)
    audit = AuditFactory()
    with transaction.atomic():
        assert issues_insert(_issue(audit, n) for n in range(10)) == 10  # four batches through one stage table
        assert issues_insert([]) == 0
    assert Issue.objects.filter(audit=audit).count() == 10


def test_update_fields_replace_a_stored_row_but_its_key():
    audit = AuditFactory()
    page_id = uuid.uuid4()
    rows_insert(Page, [Page(id=page_id, audit=audit, url="https://example.com/", title="Old", hreflang=[["en", "/"]])])
    again = Page(id=page_id, audit=audit, url="https://example.com/", title="New", hreflang=[])
    rows_insert(Page, [again], update_fields=["title"])
    stored = Page.objects.get(id=page_id)
    assert (stored.title, stored.hreflang) == ("New", [["en", "/"]])  # only the fields named


def test_on_postgresql_rows_come_from_the_copy_stage():
    assert connection.vendor == "postgresql"  # the path under test; SQLite's is the embedded test's
    audit = AuditFactory()
    seen = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        issues_insert([_issue(audit, 1)])
    inserts = [sql for sql in seen if sql.startswith("INSERT")]
    assert len(inserts) == 1 and "FROM audits_issue_stage_" in inserts[0] and "ON CONFLICT DO NOTHING" in inserts[0]


def _statements(action) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        action()
    return [query["sql"] for query in queries.captured_queries]


def test_fresh_rows_are_copied_straight_into_the_table():
    audit = AuditFactory()
    statements = _statements(lambda: issues_insert([_issue(audit, 1, a=1), _issue(audit, 2)], fresh=True))
    assert not [sql for sql in statements if "_stage_" in sql or sql.startswith("INSERT")]
    assert sorted(Issue.objects.filter(audit=audit).values_list("page_url", "details")) == [
        ("https://example.com/1", {"a": 1}),
        ("https://example.com/2", {}),
    ]
    assert all(i.created_at is not None for i in Issue.objects.filter(audit=audit))


def test_fresh_rows_with_a_repeated_key_go_through_the_stage_and_keep_one():
    audit = AuditFactory()
    statements = _statements(lambda: issues_insert([_issue(audit, 1), _issue(audit, 1)], fresh=True))
    assert [sql for sql in statements if "FROM audits_issue_stage_" in sql]
    assert Issue.objects.filter(audit=audit).count() == 1


def test_fresh_issues_whose_id_an_earlier_batch_of_the_call_held_go_through_the_stage(monkeypatch):
    from audits import bulk

    monkeypatch.setattr(bulk, "ISSUE_WRITE_BATCH", 2)
    audit = AuditFactory()
    issues = [_issue(audit, 1), _issue(audit, 2), _issue(audit, 1), _issue(audit, 3)]  # 1 again in the 2nd batch
    statements = _statements(lambda: issues_insert(issues, fresh=True))
    staged = [sql for sql in statements if sql.startswith("INSERT") and "FROM audits_issue_stage_" in sql]
    assert len(staged) == 1  # the 2nd batch only
    assert sorted(Issue.objects.filter(audit=audit).values_list("page_url", flat=True)) == [
        "https://example.com/1",
        "https://example.com/2",
        "https://example.com/3",
    ]


def test_rows_stored_names_the_keys_the_table_holds():
    audit = AuditFactory()
    issues_insert([_issue(audit, 1)])
    stored, missing = _issue(audit, 1).id, _issue(audit, 2).id
    assert rows_stored(Issue, [stored, missing]) == {stored}
    assert rows_stored(Issue, []) == set()
