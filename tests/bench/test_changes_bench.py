"""The changes benchmark's synthetic pair is honest: changes_store stores exactly the rows it planted per field."""

import pytest

from audits.models import PageChange
from bench.changes import KINDS, changes_measure, synthetic_pair_create

PAGES = 400


@pytest.mark.django_db(transaction=True)
def test_changes_store_on_the_synthetic_pair_finds_what_was_planted():
    pair = synthetic_pair_create(pages=PAGES, percent=2, seed=5)
    assert pair["baseline_pages"] == pair["audit_pages"] == PAGES - PAGES * 2 // 100

    result = changes_measure(audit_id=pair["audit_id"])

    assert result["baseline_id"] == pair["baseline_id"]
    assert result["fields"] == pair["expected"]
    # Every planted field by name, so an empty plan cannot pass the comparison above.
    fields = {field for rows in KINDS.values() for field in rows} | {"robots_txt"}
    assert set(result["fields"]) == fields and min(result["fields"].values()) >= 1
    assert result["rows"] == sum(pair["expected"].values()) == PageChange.objects.count()
