"""The bot-access test sites: a site whose robots.txt has separate groups for several crawlers, whose server answers
Googlebot's user agent with a 403 and Bingbot's with a redirect on one page, GPTBot's with another title on another
and with a 403 on a third, and whose llms.txt is malformed; and its clean twin (one group for everyone, the same page
for every user agent, a valid llms.txt). Pages are answered by user agent, so the audit's own crawler sees what a
browser sees."""

from tests.support.sites.pages import page

BLOG_PAGE = "/blog/post-one"  # Googlebot's user agent gets a 403 here, Bingbot's a redirect home (planted site)
DOCS_PAGE = "/docs/guide"  # GPTBot's user agent gets another title here (planted site)
PRIVATE_PAGE = "/private/report"  # robots.txt keeps Googlebot out of /private/; GPTBot gets a 403 (planted site)
GONE_LINK = "/gone"  # listed in the planted llms.txt, answers 404
GPTBOT_TITLE = "Guide, for language models"

PLANTED_ROBOTS = """\
User-agent: GPTBot
Disallow: /

User-agent: Googlebot
Disallow: /private/

User-agent: CCBot
Allow: /

User-agent: *
Allow: /
"""
CLEAN_ROBOTS = "User-agent: *\nAllow: /\n"

# Malformed: no H1 first, a section line that is not a link; and a link to a missing page.
PLANTED_LLMS = f"""\
Test site for bots

## Docs
- [Guide]({DOCS_PAGE}): how to use it
- [Gone]({GONE_LINK})
the report is private
"""
CLEAN_LLMS = f"""\
# Test site for bots

> A small site the bot tests serve.

Plain text about the site.

## Docs
- [Guide]({DOCS_PAGE}): how to use it
- [Post]({BLOG_PAGE})

## Optional
- [Report]({PRIVATE_PAGE})
"""

_PAGES = {
    "/": ("home", [(BLOG_PAGE, "Blog post"), (DOCS_PAGE, "Guide"), (PRIVATE_PAGE, "Report")]),
    BLOG_PAGE: ("post-one", None),
    DOCS_PAGE: ("guide", None),
    PRIVATE_PAGE: ("report", None),
}


def _answer(handler, status: int, body: str, content_type: str = "text/html; charset=utf-8") -> None:
    data = body.encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _page_route(path: str, *, planted: bool):
    name, links = _PAGES[path]

    def respond(handler) -> None:
        user_agent = handler.headers.get("User-Agent", "")
        if planted and (
            (path == BLOG_PAGE and "Googlebot" in user_agent) or (path == PRIVATE_PAGE and "GPTBot" in user_agent)
        ):
            _answer(handler, 403, "<html><head><title>Forbidden</title></head><body>Forbidden</body></html>")
            return
        if planted and path == BLOG_PAGE and "bingbot" in user_agent:
            handler.send_response(301)
            handler.send_header("Location", "/")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        title = GPTBOT_TITLE if planted and path == DOCS_PAGE and "GPTBot" in user_agent else None
        _answer(handler, 200, page(name, links=links, **({"title": title} if title else {})))

    return respond


def bot_routes(*, planted: bool) -> dict:
    """path -> route of the planted site (planted=True) or of its clean twin."""
    routes: dict = {path: _page_route(path, planted=planted) for path in _PAGES}
    robots, llms = (PLANTED_ROBOTS, PLANTED_LLMS) if planted else (CLEAN_ROBOTS, CLEAN_LLMS)
    routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, robots.encode())
    routes["/llms.txt"] = (200, {"Content-Type": "text/markdown; charset=utf-8"}, llms.encode())
    return routes
