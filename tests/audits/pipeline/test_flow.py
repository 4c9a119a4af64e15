"""Round planning's last step on PostgreSQL: when the crawl is over, what the pipeline sends next."""

import pytest

from audits import dispatch
from audits.pipeline import flow
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    """What the pipeline hands to the broker (name and arguments), recorded instead of sent."""
    messages: list[tuple] = []
    monkeypatch.setattr(dispatch, "task_send", lambda name, *args, **options: messages.append((name, *args)))
    return messages


def _audit_with_nothing_to_crawl(*, lighthouse: bool):
    # A running audit whose frontier holds nothing claimable and no live lease: its crawl is over.
    return audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"),
        start_url="http://127.0.0.1:9/",
        lighthouse=lighthouse,
        dispatch=False,
    )


def test_a_crawl_that_is_over_goes_straight_to_finalize_when_the_audit_runs_no_lighthouse(sent):
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    flow.step_send(audit_id=str(audit.id), step=flow.round_step(audit_id=str(audit.id), round_no=1))
    assert sent == [(dispatch.FINALIZE, str(audit.id))]


def test_a_crawl_that_is_over_goes_to_the_lighthouse_step_when_the_audit_asked_for_it(sent):
    audit = _audit_with_nothing_to_crawl(lighthouse=True)
    flow.step_send(audit_id=str(audit.id), step=flow.round_step(audit_id=str(audit.id), round_no=1))
    assert sent == [(dispatch.LIGHTHOUSE, str(audit.id))]
