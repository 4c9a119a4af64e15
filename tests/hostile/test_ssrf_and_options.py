"""The SSRF guard and the per-project crawl options (user agent, basic auth, query policy, depth, nofollow,
subdomains), seen from the server. Politeness is in tests/audits/pipeline/test_politeness.py."""

import socket

import pytest

from audits.errors import AuditRefused
from audits.models import Issue, Page
from audits.pipeline.start import audit_start
from crawler.bots import AGENTS
from crawler.fetch import build_session, fetch
from crawler.urls import set_allowed_networks
from tests.factories import ProjectFactory
from tests.support.sites.small import audit_small, serve_small

pytestmark = pytest.mark.django_db(transaction=True)


def test_user_agent_basic_auth_query_policy_and_max_depth():
    with serve_small(needs_auth=("crawler", "s3cret")) as (_, base, seen):
        audit = audit_small(
            base,
            user_agent="AgencyBot/2.0",
            auth_username="crawler",
            auth_password="s3cret",
            query_policy="keep_listed",
            query_keep_keys=["id"],
            max_depth=1,
        )
    urls = set(Page.objects.filter(audit=audit).values_list("url", flat=True))
    assert base + "/p3?id=3" in urls  # utm_source dropped, id kept
    assert not any("utm_source" in u for u in urls)
    assert base + "/deep/1" not in urls  # depth 2 > max depth 1
    assert Page.objects.filter(audit=audit, status_code=200).count() == len(urls)  # auth accepted everywhere
    # The bot pass asks for its sampled pages as named crawlers and browsers on purpose (what each is served, the
    # bot-access checks), and for nothing else so; every other request carries the project's user agent.
    bot_agents = {agent.user_agent for agent in AGENTS}
    assert all(h.get("User-Agent") == "AgencyBot/2.0" for _, p, h in seen if p != "/robots.txt"
               and h.get("User-Agent") not in bot_agents)  # fmt: skip
    audit.refresh_from_db()
    sampled = {url.removeprefix(base) or "/" for url in audit.bot_access["sample"]["urls"]}
    assert {p for _, p, h in seen if h.get("User-Agent") in bot_agents} == sampled
    assert "password" not in str(audit.config).lower() and "s3cret" not in str(audit.config)


def test_wrong_credentials_are_reported_as_the_crawler_being_blocked():
    with serve_small(needs_auth=("crawler", "s3cret")) as (_, base, _seen):
        audit = audit_small(base, auth_username="crawler", auth_password="wrong")
    home = Page.objects.get(audit=audit, url=base + "/")
    assert (home.status_code, home.fetch_class) == (401, "blocked")
    assert set(Issue.objects.filter(audit=audit, page=home).values_list("type", flat=True)) == {"blocked-page"}


# --- SSRF ---------------------------------------------------------------------------------------

FAKE_DNS = {"metadata.test": "169.254.169.254", "intranet.test": "10.0.0.1", "www.site.test": "10.0.0.1"}


@pytest.fixture
def fake_dns(monkeypatch):
    """Stand-in DNS for names that must resolve to private addresses (nothing is ever sent to them: the
    guard refuses before connecting). site.test resolves to 127.0.0.2, which the test allows."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in ("site.test", "blog.site.test"):
            return real("127.0.0.2", port, *args, **kwargs)
        if host in FAKE_DNS:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (FAKE_DNS[host], port or 80))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    set_allowed_networks(["127.0.0.2/32"])
    yield
    set_allowed_networks([])


@pytest.mark.parametrize("host", ["localhost", "metadata.test", "intranet.test", "127.0.0.1", "169.254.169.254"])
def test_start_urls_resolving_to_private_addresses_are_refused(settings, fake_dns, host):
    settings.ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(AuditRefused) as exc:
        audit_start(project=ProjectFactory(base_url=f"http://{host}/"), start_url=f"http://{host}/", dispatch=False)
    assert exc.value.code == "private_address"
    assert "private" in exc.value.message


def test_fetch_refuses_private_targets_before_connecting(fake_dns):
    for url in ("http://metadata.test/latest/meta-data/", "http://intranet.test/", "http://localhost:9/"):
        result = fetch(build_session(), url, allow_private=False)
        assert result.status_code is None and result.error_kind == "private_address", url


def test_redirect_from_an_allowed_site_into_private_addresses_is_refused(settings, fake_dns):
    settings.ALLOW_PRIVATE_TARGETS = False
    with serve_small(host="127.0.0.2") as (server, _, seen):
        port = server.server_address[1]
        base = f"http://site.test:{port}"
        server.RequestHandlerClass.redirects = {
            "/p1": f"http://www.site.test:{port}/admin",
            "/p2": "http://metadata.test/latest/meta-data/",
        }
        audit = audit_small(base)
    # www.site.test is the same site (www rule) and was queued, then refused at fetch time
    refused = Page.objects.get(audit=audit, url=f"http://www.site.test:{port}/admin")
    assert refused.fetch_class == "error" and "not a public address" in refused.fetch_error
    assert "10.0.0.1" not in refused.fetch_error  # what an internal name resolves to is never shown
    assert "fetch-error" in set(Issue.objects.filter(audit=audit, page=refused).values_list("type", flat=True))
    # metadata.test is another site: recorded as the redirect's target, never fetched
    p2 = Page.objects.get(audit=audit, url=f"{base}/p2?id=2&utm_source=x")
    assert (p2.status_code, p2.redirect_url) == (301, "http://metadata.test/latest/meta-data/")
    assert not Page.objects.filter(audit=audit, url__startswith="http://metadata.test").exists()
    assert all(path != "/admin" for _, path, _ in seen)  # nothing reached the site's private twin


def test_nofollow_and_subdomains_follow_the_project_options(fake_dns):
    extra = '<a rel="nofollow" href="/private-ish">nofollow</a> <a href="http://blog.site.test:{port}/post">blog</a>'
    with serve_small(host="127.0.0.2") as (server, _, _seen):
        port = server.server_address[1]
        server.RequestHandlerClass.extra_home = extra.format(port=port)
        base = f"http://site.test:{port}"
        default = set(Page.objects.filter(audit=audit_small(base)).values_list("url", flat=True))
        opened = set(
            Page.objects.filter(audit=audit_small(base, follow_nofollow=True, crawl_subdomains=True)).values_list(
                "url", flat=True
            )
        )
    assert base + "/private-ish" not in default and f"http://blog.site.test:{port}/post" not in default
    assert base + "/private-ish" in opened and f"http://blog.site.test:{port}/post" in opened
