"""An audit with external link targets of several outcomes and the pages linking to them, for the tests of the
faces that show them (selectors, dashboard, exports, API, MCP): rows made directly, as the finalize pass
(audits.pipeline.external) would leave them."""

from audits.models import ExternalLink
from tests.factories import AuditFactory, ExternalLinkFactory, LinkEdgeFactory, PageFactory

Outcome = ExternalLink.Outcome


def external_world(audit=None):
    """An audit whose two pages link to five external targets of every kind of answer, and a second audit with a
    target of the same URL (which must never show). Returns (audit, {name: ExternalLink}, [page_a, page_b])."""
    audit = audit or AuditFactory()
    audit.config = {**audit.config, "check_external_links": True}  # as an audit started with the pass on
    audit.save(update_fields=["config"])
    a = PageFactory(audit=audit, url=audit.start_url + "a")
    b = PageFactory(audit=audit, url=audit.start_url + "b")
    specs = {
        "ok": ("https://fine.example/", Outcome.OK, 200, [(a, "Fine"), (b, "Fine too")]),
        "moved": ("http://moved.example/old", Outcome.REDIRECTED, 200, [(a, "Moved")]),
        "dead": ("https://dead.example/gone", Outcome.CLIENT_ERROR, 404, [(a, "Gone"), (b, "Gone again")]),
        "down": ("https://down.example/", Outcome.SERVER_ERROR, 500, [(b, "Down")]),
        "nxdomain": ("https://no-such-host.invalid/", Outcome.DNS_ERROR, None, [(a, "")]),
    }
    links = {}
    for name, (url, outcome, status, sources) in specs.items():
        links[name] = ExternalLinkFactory(
            audit=audit, url=url, outcome=outcome, status_code=status, linking_pages=len(sources)
        )
        for page, anchor in sources:
            LinkEdgeFactory(audit=audit, source_page=page, target_url=url, anchor_text=anchor, internal=False)
    links["moved"].final_url, links["moved"].redirect_hops = "https://moved.example/new", 2
    links["moved"].save()
    # An internal edge to the same URL as a target (impossible in a crawl, but it must not count) and another audit.
    LinkEdgeFactory(audit=audit, source_page=b, target_url=links["dead"].url + "?internal", internal=True)
    other = AuditFactory()
    ExternalLinkFactory(audit=other, url="https://dead.example/gone", outcome=Outcome.CLIENT_ERROR)
    return audit, links, [a, b]
