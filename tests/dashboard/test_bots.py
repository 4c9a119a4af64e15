"""The dashboard's bot access: the overview's table (crawlers x start page and folders, the group that applies,
search or AI) and llms.txt, and the screen of the sampled pages side by side per agent, differences marked. An
audit run for real on the planted bot site served on 127.0.0.1; strangers get a 404."""

import re

import pytest
from django.urls import reverse

from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes
from tests.support.sites.bots import BLOG_PAGE, DOCS_PAGE, GPTBOT_TITLE, bot_routes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bot_audit(owner):
    with serve_routes(bot_routes(planted=True)) as site:
        project = ProjectFactory(owner=owner, base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=20, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    return site.url, audit


def _row(html: str, crawler: str) -> str:
    return re.search(rf'<tr data-crawler="{crawler}".*?</tr>', html, re.DOTALL).group(0)


def test_the_overview_shows_each_crawlers_group_and_where_it_is_blocked(owner_client, bot_audit):
    base, audit = bot_audit
    html = owner_client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert 'id="bot-access"' in html
    googlebot = _row(html, "Googlebot")
    assert "User-agent: Googlebot" in googlebot and "Search" in googlebot
    assert re.findall(r'data-column="([^"]+)">(\w+)', googlebot) == [
        ("/", "Allowed"), ("/blog/", "Allowed"), ("/docs/", "Allowed"), ("/private/", "Blocked"),
    ]  # fmt: skip
    gptbot = _row(html, "GPTBot")
    assert "User-agent: GPTBot" in gptbot and ">AI<" in gptbot
    assert set(re.findall(r'data-column="[^"]+">(\w+)', gptbot)) == {"Blocked"}
    assert set(re.findall(r'data-column="[^"]+">(\w+)', _row(html, "CCBot"))) == {"Allowed"}
    assert "Does not follow the format" in html and "must start with an H1 title" in html
    assert "1 broken" in html and f"{base}/gone" in html
    assert reverse("audits:audit-bots", args=[audit.id]) in html


def test_the_bots_screen_sets_each_agent_beside_the_browser_and_marks_what_differs(owner_client, stranger, client,
                                                                                 bot_audit):  # fmt: skip
    base, audit = bot_audit
    url = reverse("audits:audit-bots", args=[audit.id])
    html = owner_client.get(url).content.decode()
    sections = dict(re.findall(r'<h3 id="bot-page-\d+" class="url">([^<]+)</h3>(.*?)</section>', html, re.DOTALL))
    assert set(sections) == {base + "/", base + BLOG_PAGE, base + DOCS_PAGE, base + "/private/report"}
    assert "Every agent got the same page." in sections[base + "/"]
    docs = sections[base + DOCS_PAGE]
    assert "Served differently to a bot." in docs
    assert re.search(rf'class="differs"><span class="differs-mark"[^>]*>≠</span> {GPTBOT_TITLE}<', docs)
    blog = sections[base + BLOG_PAGE]
    assert re.search(r'class="differs"><span class="differs-mark"[^>]*>≠</span> 403<', blog)
    assert "HTTP 403" in blog  # the refusal row
    client.force_login(stranger)
    assert client.get(url).status_code == 404
