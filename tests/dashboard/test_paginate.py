"""dashboard.selectors.paginate: numbered pages read from the nearer end of an ordered queryset hold exactly the rows
OFFSET/LIMIT from the start would, in order, and a page past the middle asks for the smaller OFFSET."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audits.models import Page
from dashboard.selectors import paginate
from tests.factories import AuditFactory, PageFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages():
    audit = AuditFactory()
    for n in range(23):
        PageFactory(audit=audit, url=f"https://site.test/p{n:02d}", depth=n % 4)
    return Page.objects.filter(audit=audit).order_by("depth", "url")  # ties in the first column


@pytest.mark.parametrize("per_page", [5, 23, 40])
def test_every_page_holds_the_rows_of_its_place_in_order(pages, per_page):
    everything = [p.url for p in pages]
    shown = []
    last = paginate(pages, None, per_page=per_page).paginator.num_pages
    for number in range(1, last + 1):
        page = paginate(pages, number, per_page=per_page)
        assert page.number == number
        shown += [p.url for p in page]
    assert shown == everything
    assert [p.url for p in paginate(pages, "999", per_page=per_page)] == shown[(last - 1) * per_page :]  # the last


def test_a_page_past_the_middle_is_read_from_the_far_end(pages):
    with CaptureQueriesContext(connection) as seen:
        page = paginate(pages, 5, per_page=5)  # rows 21-23 of 23
        rows = [p.url for p in page]
    assert rows == [p.url for p in pages][20:]
    (select,) = [q["sql"] for q in seen.captured_queries if "COUNT(" not in q["sql"]]
    assert '"depth" DESC' in select and not re.search(r"OFFSET [1-9]", select)  # reversed, from the end
