"""Generate a deterministic static test site (pages, links, sitemaps, robots) and its manifest.

The manifest says exactly which URLs a correct, robots-obeying crawler stores, so benchmarks and
end-to-end tests can check the product's answer, not just its speed.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# Sitemaps, robots.txt and canonical links need absolute URLs, but the port is only known when the site
# is served: the generator writes this placeholder and the server substitutes the real base URL.
BASE_URL_PLACEHOLDER = "__SITEWARDEN_BASE_URL__"
# Files (relative to the site root) that contain the placeholder and are rendered per server.
DYNAMIC_FILES = ("robots.txt", "sitemap.xml", "sitemap-pages-1.xml", "sitemap-pages-2.xml.gz")
REDIRECTS_FILE = "_redirects.json"
REDIRECTS_NGINX_FILE = "_redirects.nginx.conf"
MANIFEST_FILE = "_manifest.json"

TREE_BRANCHING = 8  # children per page in the link tree: depth is about log8(pages)
NAV_LINKS = 20
CROSS_LINKS_PER_PAGE = 6
EXTERNAL_LINKS_PER_PAGE = 2
IMAGES_PER_PAGE = 4
IMAGE_FILES = 12
PARAGRAPH_POOL_SIZE = 600
PRIVATE_PAGES = 3
SITEMAP_LASTMOD = "2024-05-01"

XHTML_PATH = "/xhtml/page.html"
XHTML_ONLY_TARGET = "/xhtml-only-target.html"
REDIRECT_SOURCE = "/old-page"
REDIRECT_TARGET = "/moved/page.html"
MISSING_PATH = "/missing.html"
ORPHAN_PATH = "/orphan/sitemap-only.html"

_WORD_TEXT = (
    "audit crawl index search engine page site link anchor canonical robots sitemap meta title "
    "description heading image alt text content quality speed mobile desktop render script style "
    "server response status redirect error broken duplicate thin keyword ranking visibility traffic "
    "organic structure navigation footer header article section paragraph product service customer "
    "garden river mountain coffee bicycle window market harbour lantern orchard meadow village "
    "the a of and to in for with on by from about across under over between quickly carefully "
    "often rarely always never simply clearly new old large small bright quiet useful modern "
    "classic local global daily weekly report guide review tutorial checklist overview summary"
)
_WORDS = _WORD_TEXT.split()

_PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@dataclass
class SiteManifest:
    """What a correct crawler of the generated site finds. Paths are URL paths ("/a/b.html"; home is "/")."""

    pages: set[str] = field(default_factory=set)
    redirects: dict[str, str] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    disallowed: set[str] = field(default_factory=set)
    sitemap_only: set[str] = field(default_factory=set)
    xhtml_path: str | None = None
    xhtml_only_target: str | None = None

    def expected_urls(self, base_url: str) -> set[str]:
        """Every URL a correct crawler stores a row for: 200 pages, redirect sources, linked 404s,
        sitemap-only pages."""
        base = base_url.rstrip("/")
        paths = self.pages | set(self.redirects) | self.missing | self.sitemap_only
        return {base + path for path in paths}

    def sitemap_paths(self) -> set[str]:
        """Paths listed in the sitemaps: every page except those whose point is to be found only one way
        (the XHTML-only target through the XHTML page, the redirect target through the redirect)."""
        hidden = set(self.redirects.values()) | ({self.xhtml_only_target} if self.xhtml_only_target else set())
        return (self.pages - hidden) | self.sitemap_only

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        for key, value in data.items():
            if isinstance(value, set):
                data[key] = sorted(value)
        return data

    @classmethod
    def from_json(cls, data: dict) -> SiteManifest:
        kwargs = dict(data)
        for f in dataclasses.fields(cls):
            if f.name in ("pages", "missing", "disallowed", "sitemap_only"):
                kwargs[f.name] = set(kwargs.get(f.name, ()))
        return cls(**kwargs)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> SiteManifest:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


def _href(path: str) -> str:
    """Links always name home as "/", never "/index.html", so home has one URL."""
    return "/" if path == "/index.html" else path


class _Writer:
    """Builds page HTML from a seeded pool of paragraphs (fast: no per-word randomness per page)."""

    def __init__(self, rng: random.Random, page_kb: int):
        self.rng = rng
        self.page_bytes = page_kb * 1024
        self.paragraphs = [self._paragraph() for _ in range(PARAGRAPH_POOL_SIZE)]

    def _sentence(self) -> str:
        words = self.rng.choices(_WORDS, k=self.rng.randint(8, 18))
        return " ".join(words).capitalize() + "."

    def _paragraph(self) -> str:
        return " ".join(self._sentence() for _ in range(self.rng.randint(3, 7)))

    def words(self, k: int) -> str:
        return " ".join(self.rng.choices(_WORDS, k=k))

    def page(
        self,
        *,
        path: str,
        title: str,
        nav: list[tuple[str, str]],
        body_links: list[tuple[str, str]],
        footer: list[tuple[str, str]],
        xhtml: bool = False,
    ) -> bytes:
        rng = self.rng
        description = self.words(18).capitalize() + "."
        if xhtml:
            head = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
                '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
                '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">\n'
            )
        else:
            head = '<!DOCTYPE html>\n<html lang="en">\n'
        parts = [
            head,
            "<head>\n",
            '<meta charset="utf-8" />\n' if not xhtml else "",
            f"<title>{title}</title>\n",
            f'<meta name="description" content="{description}" />\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1" />\n',
            # Absolute, as search engines recommend; the server fills in the base URL.
            f'<link rel="canonical" href="{BASE_URL_PLACEHOLDER}{_href(path)}" />\n',
            '<link rel="stylesheet" href="/static/css/site.css" />\n',
            '<script src="/static/js/app.js" defer="defer"></script>\n',
            "</head>\n<body>\n<header>\n<nav>\n<ul>\n",
        ]
        parts += [f'<li><a href="{href}">{text}</a></li>\n' for href, text in nav]
        parts.append("</ul>\n</nav>\n</header>\n<main>\n<article>\n")
        parts.append(f"<h1>{title}</h1>\n")
        # Spread body links and images over the text so they sit inside paragraphs like real content.
        inline = [f'<a href="{href}">{text}</a>' for href, text in body_links]
        images = [
            f'<img src="/static/img/photo-{rng.randrange(IMAGE_FILES)}.png" alt="{self.words(4)}" '
            f'width="640" height="360" />'
            for _ in range(IMAGES_PER_PAGE)
        ]
        size = sum(len(p) for p in parts) + 1200
        section = 0
        while size < self.page_bytes or inline or images:
            paragraph = rng.choice(self.paragraphs)
            extra = ""
            if inline:
                extra += " See also " + ", ".join(inline[:3]) + "."
                del inline[:3]
            if section % 3 == 0:
                parts.append(f"<h2>{self.words(5).capitalize()}</h2>\n")
            if images and section % 2 == 1:
                parts.append(f"<figure>{images.pop()}</figure>\n")
            chunk = f"<p>{paragraph}{extra}</p>\n"
            parts.append(chunk)
            size += len(chunk) + 40
            section += 1
        parts.append("</article>\n</main>\n<footer>\n<ul>\n")
        parts += [f'<li><a href="{href}">{text}</a></li>\n' for href, text in footer]
        parts.append("</ul>\n<p>&#169; 2024 Example Widgets Ltd.</p>\n</footer>\n</body>\n</html>\n")
        return "".join(parts).encode("utf-8")


def _page_path(index: int, section_of: list[int]) -> str:
    if index == 0:
        return "/index.html"
    return f"/section-{section_of[index]}/page-{index}.html"


def _write(root: Path, path: str, data: bytes) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _urlset(paths: list[str]) -> bytes:
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ]
    for path in paths:
        lines.append(f"<url><loc>{BASE_URL_PLACEHOLDER}{_href(path)}</loc><lastmod>{SITEMAP_LASTMOD}</lastmod></url>")
    lines.append("</urlset>\n")
    return "\n".join(lines).encode("utf-8")


def generate_site(root: Path, pages: int, *, seed: int = 0, page_kb: int = 40, features: bool = True) -> SiteManifest:
    """Write a site of `pages` linked pages (plus a few feature pages) under `root`.

    Pages form a tree (branching TREE_BRANCHING) rooted at home plus seeded random cross-links, so every
    page is reachable from "/". Same seed, same bytes.
    """
    if pages < 1:
        raise ValueError("pages must be >= 1")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    writer = _Writer(rng, page_kb)

    parent = [-1] + [(i - 1) // TREE_BRANCHING for i in range(1, pages)]
    section_of = [0] * pages
    children: list[list[int]] = [[] for _ in range(pages)]
    for i in range(1, pages):
        section_of[i] = i if parent[i] == 0 else section_of[parent[i]]
        children[parent[i]].append(i)
    paths = [_page_path(i, section_of) for i in range(pages)]
    titles = ["Home | Example Widgets" if i == 0 else f"{writer.words(4).title()} {i}" for i in range(pages)]

    manifest = SiteManifest(pages={_href(p) for p in paths})
    nav = [("/", "Home")] + [(_href(paths[i]), f"Section {i}") for i in range(1, min(pages, NAV_LINKS))]
    footer = [("/", "Home")]
    footer += [(_href(paths[i]), f"Topic {i}") for i in range(1, min(pages, 6))]
    footer += [
        ("https://example.org/about", "About us"),
        ("https://example.org/contact?ref=footer", "Contact"),
        ("mailto:hello@example.org", "Email"),
        ("tel:+15555550100", "Call"),
    ]

    home_extra: list[tuple[str, str]] = []
    if features:
        manifest.redirects = {REDIRECT_SOURCE: REDIRECT_TARGET}
        manifest.missing = {MISSING_PATH}
        manifest.disallowed = {f"/private/page-{k}.html" for k in range(1, PRIVATE_PAGES + 1)}
        manifest.sitemap_only = {ORPHAN_PATH}
        manifest.xhtml_path = XHTML_PATH
        manifest.xhtml_only_target = XHTML_ONLY_TARGET
        manifest.pages |= {XHTML_PATH, XHTML_ONLY_TARGET, REDIRECT_TARGET}
        home_extra = [
            (XHTML_PATH, "XHTML page"),
            (REDIRECT_SOURCE, "Old page"),
            (MISSING_PATH, "Gone page"),
        ] + [(p, "Members area") for p in sorted(manifest.disallowed)]

    for i in range(pages):
        links = [(_href(paths[c]), titles[c]) for c in children[i]]
        if i != 0:
            links.append((_href(paths[parent[i]]), "Up"))
        for _ in range(CROSS_LINKS_PER_PAGE if pages > 1 else 0):
            target = rng.randrange(pages)
            suffix = "#comments" if rng.random() < 0.15 else ""
            links.append((_href(paths[target]) + suffix, titles[target]))
        for _ in range(EXTERNAL_LINKS_PER_PAGE):
            links.append((f"https://example.org/{writer.words(2).replace(' ', '-')}", "Elsewhere"))
        if i == 0:
            links += home_extra
        _write(
            root,
            paths[i],
            writer.page(path=paths[i], title=titles[i], nav=nav, body_links=links, footer=footer),
        )

    if features:
        back = [("/", "Home")]
        _write(
            root,
            XHTML_PATH,
            writer.page(
                path=XHTML_PATH,
                title="XHTML page",
                nav=nav,
                xhtml=True,
                body_links=[(XHTML_ONLY_TARGET, "Only reachable from the XHTML page")] + back,
                footer=footer,
            ),
        )
        _write(
            root,
            XHTML_ONLY_TARGET,
            writer.page(path=XHTML_ONLY_TARGET, title="XHTML-only target", nav=nav, body_links=back, footer=footer),
        )
        _write(
            root,
            REDIRECT_TARGET,
            writer.page(path=REDIRECT_TARGET, title="Moved page", nav=nav, body_links=back, footer=footer),
        )
        _write(
            root,
            ORPHAN_PATH,
            writer.page(path=ORPHAN_PATH, title="Sitemap-only page", nav=nav, body_links=back, footer=footer),
        )
        for path in sorted(manifest.disallowed):
            _write(
                root,
                path,
                writer.page(path=path, title="Members only", nav=nav, body_links=back, footer=footer),
            )

    # Static assets the pages reference, so a checker of assets finds no broken images or styles.
    _write(root, "/static/css/site.css", b"body{font-family:sans-serif;margin:0 auto;max-width:60em}\n")
    _write(root, "/static/js/app.js", b"document.documentElement.classList.add('js');\n")
    for k in range(IMAGE_FILES):
        _write(root, f"/static/img/photo-{k}.png", _PNG_1X1)

    in_sitemap = sorted(manifest.sitemap_paths(), key=lambda p: (p != "/", p))
    half = (len(in_sitemap) + 1) // 2
    _write(root, "/sitemap-pages-1.xml", _urlset(in_sitemap[:half]))
    # mtime=0 keeps the gzip bytes deterministic.
    _write(root, "/sitemap-pages-2.xml.gz", gzip.compress(_urlset(in_sitemap[half:]), mtime=0))
    index = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<sitemap><loc>{BASE_URL_PLACEHOLDER}/sitemap-pages-1.xml</loc></sitemap>\n"
        f"<sitemap><loc>{BASE_URL_PLACEHOLDER}/sitemap-pages-2.xml.gz</loc></sitemap>\n"
        "</sitemapindex>\n"
    )
    _write(root, "/sitemap.xml", index.encode("utf-8"))
    robots = f"User-agent: *\nDisallow: /private/\n\nSitemap: {BASE_URL_PLACEHOLDER}/sitemap.xml\n"
    _write(root, "/robots.txt", robots.encode("utf-8"))

    (root / REDIRECTS_FILE).write_text(json.dumps(manifest.redirects, indent=1, sort_keys=True) + "\n")
    (root / REDIRECTS_NGINX_FILE).write_text(
        "".join(f"location = {src} {{ return 301 {dst}; }}\n" for src, dst in sorted(manifest.redirects.items()))
    )
    manifest.save(root / MANIFEST_FILE)
    return manifest


def tree_depth(pages: int) -> int:
    """Depth of the link tree for `pages` pages (home is depth 0)."""
    return 0 if pages <= 1 else math.ceil(math.log(pages * (TREE_BRANCHING - 1) + 1, TREE_BRANCHING)) - 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate a static test site for Sitewarden benchmarks.")
    parser.add_argument("root", type=Path)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--page-kb", type=int, default=40)
    parser.add_argument("--no-features", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    manifest = generate_site(args.root, args.pages, seed=args.seed, page_kb=args.page_kb, features=not args.no_features)
    print(
        f"wrote {len(manifest.pages)} pages (+{len(manifest.disallowed)} disallowed, "
        f"{len(manifest.sitemap_only)} sitemap-only) to {args.root} in {time.perf_counter() - started:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
