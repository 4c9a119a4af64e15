"""The response-vs-render site: pages whose scripts change the canonical, the robots directives, the title,
description and H1, or add links and text, each with what a rendered crawl must report; and clean twins whose
scripts touch the same values without changing them (crawled with rendering on in tests/audits/pipeline/test_render.py).
"""

from dataclasses import dataclass, field

from audits.checks.render import RENDER_TYPES
from tests.support.sites.pages import html_route, page

JS_ADDED_WORDS = 150  # words the links-content page's script writes
JS_LINK_PATHS = ("/render/from-js-a", "/render/from-js-b")  # targets only its script links to


@dataclass
class RenderCase:
    name: str
    path: str
    html: str
    present: set = field(default_factory=set)

    @property
    def absent(self) -> set:
        return set(RENDER_TYPES) - self.present


def _script(code: str) -> str:
    return f"<script>{code}</script>"


def render_cases(base: str) -> list[RenderCase]:
    clean_url = f"{base}/render/clean"
    canonical_url = f"{base}/render/canonical"
    home_links = [
        ("/render/clean", "Clean twin"),
        ("/render/canonical", "Canonical set by script"),
        ("/render/canonical-added", "Canonical added by script"),
        ("/render/noindex", "Noindex added by script"),
        ("/render/links-content", "Links and text added by script"),
        ("/render/title", "Title changed by script"),
    ]
    cases = [
        # Clean twins: the home page's script marks the document; the clean page's script writes every value it
        # could change back to what it already is.
        RenderCase(
            "home", "/", page("home", links=home_links, body=_script("document.documentElement.dataset.js = 'on';"))
        ),
        RenderCase(
            "clean",
            "/render/clean",
            page(
                "clean",
                head=f'<link rel="canonical" href="{clean_url}"><meta name="robots" content="index, follow">',
                body=_script(
                    "document.title = document.title;"
                    f"document.querySelector('link[rel=canonical]').href = '{clean_url}';"
                    "document.querySelector('meta[name=robots]').content = 'index, follow';"
                    "const h = document.querySelector('h1'); h.textContent = h.textContent;"
                    "document.body.appendChild(document.createElement('span'));"
                ),
            ),
        ),
        RenderCase(
            "canonical",
            "/render/canonical",
            page(
                "canonical",
                head=f'<link rel="canonical" href="{canonical_url}">',
                body=_script(f"document.querySelector('link[rel=canonical]').href = '{clean_url}';"),
            ),
            {"render-canonical-changed"},
        ),
        RenderCase(
            "canonical-added",
            "/render/canonical-added",
            page(
                "canonical-added",
                body=_script(
                    "const l = document.createElement('link'); l.rel = 'canonical'; l.href = '/render/clean';"
                    "document.head.appendChild(l);"
                ),
            ),
            {"render-canonical-changed"},
        ),
        RenderCase(
            "noindex",
            "/render/noindex",
            page(
                "noindex",
                body=_script(
                    "const m = document.createElement('meta'); m.name = 'robots'; m.content = 'noindex';"
                    "document.head.appendChild(m);"
                ),
            ),
            {"render-robots-changed"},
        ),
        RenderCase(
            "links-content",
            "/render/links-content",
            page(
                "links-content",
                body=_script(
                    "const d = document.createElement('div');"
                    f"d.innerHTML = '<p>' + 'scripted '.repeat({JS_ADDED_WORDS}) + '</p>'"
                    + "".join(f" + ' <a href=\"{path}\">More from script</a>'" for path in JS_LINK_PATHS)
                    + ";document.body.appendChild(d);"
                ),
            ),
            {"render-links-only-after-js", "render-content-only-after-js"},
        ),
        RenderCase(
            "title",
            "/render/title",
            page(
                "title",
                body=_script(
                    "document.title = 'A title written by the script';"
                    "document.querySelector('meta[name=description]').content = 'A description the script wrote.';"
                    "document.querySelector('h1').textContent = 'Heading from script';"
                ),
            ),
            {"render-title-changed", "render-meta-description-changed", "render-h1-changed"},
        ),
    ]
    cases += [RenderCase(path.rsplit("/", 1)[1], path, page(path.rsplit("/", 1)[1])) for path in JS_LINK_PATHS]
    return cases


def render_site_routes(base: str) -> dict:
    return {case.path: html_route(case.html) for case in render_cases(base)}
