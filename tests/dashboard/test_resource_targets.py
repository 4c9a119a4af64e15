"""A broken resource on the issue screen (`?view=targets`): one row per resource URL with the pages that load it, on
a real audit of the resource site (tests.support.sites.resources) on 127.0.0.1 and a CDN on 127.0.0.2."""

import lxml.html
import pytest
from django.urls import reverse

from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory, UserFactory
from tests.support.sites.resources import ALSO_PAGE, BROKEN_PAGE, resource_sites

pytestmark = pytest.mark.django_db(transaction=True)  # the inline pipeline commits from its own connections


def test_a_broken_script_grouped_by_resource_lists_the_pages_that_load_it(client):
    owner = UserFactory(username="owner")
    client.force_login(owner)
    with resource_sites() as (site, cdn):
        project = ProjectFactory(owner=owner, base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=10, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED

    url = reverse("audits:audit-issue-type", args=[audit.id, "broken-script"])
    flat = client.get(url)
    assert flat.status_code == 200
    assert b"3 resource loads" in flat.content and b"Each page" in flat.content

    document = lxml.html.fromstring(client.get(url, {"view": "targets"}).content)
    table = document.get_element_by_id("evidence-by-target")
    assert [th.text_content() for th in table.xpath("./thead//th")][2:] == ["Pages loading it", "Links",
                                                                           "Pages that load it"]  # fmt: skip
    rows = [
        (
            tr.xpath("./td[1]")[0].text_content().strip(),
            tr.xpath("./td[2]")[0].text_content().strip(),
            [a.text_content() for a in tr.xpath("./td[5]//li/a")],
        )
        for tr in table.xpath("./tbody/tr")
    ]
    assert rows == [
        (site.url + "/js/missing.js", "404", [site.url + ALSO_PAGE, site.url + BROKEN_PAGE]),
        (cdn.url + "/mathjax/missing.js", "404", [site.url + BROKEN_PAGE]),
    ]
