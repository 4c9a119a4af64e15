"""What the parser gives for one page: PageData and the links and anchor texts it holds, plain Python."""

from dataclasses import dataclass, field


@dataclass(slots=True)
class Link:
    """One distinct target of a page's links: every <a href>/<area href> to the same URL folds into it."""

    url: str  # absolute, normalised (crawler.urls.normalize); links that do not normalise are dropped
    anchor: str  # the first non-empty visible text (or img alt) of the links to url, collapsed, <= 200 chars
    # Every link to url is nofollow (rel, or the page is meta nofollow): one followed link is enough for a
    # search engine to follow the URL, so a target is nofollow only when all its links are.
    nofollow: bool
    tag: str = "a"  # a | area, of the first link
    count: int = 1  # links on the page to url
    internal: bool = True  # by the is_internal given to parse_html (default: same host as the page)


@dataclass(slots=True)
class AnchorUse:
    """One distinct link text of a page, for the link-text check (same-page #fragment links included)."""

    count: int
    href: str  # the first link with this text: absolute, fragment kept


@dataclass
class PageData:
    titles: list[str] = field(default_factory=list)
    meta_description: str | None = None  # None when absent; "" when present but empty
    meta_descriptions_count: int = 0
    meta_robots: str = ""  # content of all <meta name=robots|googlebot>, lower-cased, joined by ", "
    canonicals: list[str] = field(default_factory=list)  # href values as written (not resolved)
    canonical_url: str | None = None  # first canonical, resolved and normalised
    meta_refresh_url: str | None = None  # resolved URL of <meta http-equiv=refresh content="N; url=...">
    meta_refresh_delay_s: float | None = None  # its N; None when it gives none
    html_lang: str | None = None
    has_viewport: bool = False
    og: dict[str, str] = field(default_factory=dict)  # og:title, og:description, og:image, og:url, og:type
    headings: list[tuple[int, str]] = field(default_factory=list)  # (level 1-6, text) in document order
    word_count: int = 0  # words of visible text (script/style/noscript/template excluded)
    word_unit: str = ""  # "characters": word_count and main_word_count count CJK characters (crawler.parse.text)
    text_hash: str = ""  # sha1 hex of the normalised visible text ("" when no text)
    images_total: int = 0
    images_missing_alt: int = 0  # <img> without an alt attribute (alt="" is fine)
    images_missing_alt_srcs: list[str] = field(default_factory=list)  # up to 20
    # Distinct targets in the order first linked, <= MAX_LINK_TARGETS_PER_PAGE; links_total and the internal and
    # external totals count every crawlable <a href>/<area href> (http(s), not "#…"), capped or not.
    links: list[Link] = field(default_factory=list)
    links_total: int = 0
    internal_links_total: int = 0
    external_links_total: int = 0
    links_not_stored: int = 0  # links to targets past MAX_LINK_TARGETS_PER_PAGE (counted, not kept)
    anchor_texts: dict[str, AnchorUse] = field(default_factory=dict)  # <= MAX_ANCHOR_TEXTS_PER_PAGE
    hreflang: list[tuple[str, str]] = field(default_factory=list)  # (hreflang value, absolute href)
    jsonld_blocks: int = 0
    jsonld_invalid: int = 0
    structured_data_types: list[str] = field(default_factory=list)  # @type values from JSON-LD, microdata
    insecure_resources: list[str] = field(default_factory=list)  # http:// script/css/img/iframe src (up to 20)
    scripts_total: int = 0  # executable <script> elements (not JSON-LD, not templates)
    app_root: bool = False  # an empty app root element like <div id="root|app|__next|__nuxt">
    encoding: str = ""  # the encoding the text was decoded with
    base_url: str = ""  # <base href> if any, else the page URL
    # Main text: <main>/[role=main] when the page has one, else the visible text minus nav, header, footer and
    # aside, so two pages sharing a template are not duplicates of each other (content checks).
    main_text_hash: str = ""  # sha1 hex of the main text's words, lower-cased, joined by one space
    main_word_count: int = 0
    # The first MAX_MAIN_WORDS_KEPT words, lower-cased, joined by one space: one string, not a list of words (the
    # near-duplicate signature hashes it in bulk, audits/checks/content.text_signature).
    main_text: str = ""
    lorem_ipsum: bool = False  # "lorem ipsum" placeholder text in the main text, outside code samples
    lorem_excerpt: str = ""  # that wording with a little text around it, as written ("" when none)
    # The main text outside code samples (<pre>, <code>, <kbd>, <samp>: where wording is the subject, not the
    # page's voice), as written and collapsed, when the main text has at most SHORT_MAIN_TEXT_WORDS_MAX words.
    short_main_prose: str = ""
    # Security signals, examples up to MAX_LISTED_RESOURCES_PER_PAGE each, resolved against the base URL.
    form_http_actions: list[str] = field(default_factory=list)  # <form> whose action resolves to http://
    protocol_relative_resources: list[str] = field(default_factory=list)  # src/href written "//host/…"
    blank_without_noopener: list[str] = field(default_factory=list)  # target=_blank to another origin, no noopener
    blank_without_noopener_total: int = 0
    # Structured data: one entry per top-level entity, {"syntax": json-ld|microdata|rdfa, "type": short name,
    # "properties": sorted non-empty property names}, <= MAX_STRUCTURED_ITEMS_PER_PAGE (audits/checks/structured_data)
    structured_items: list[dict] = field(default_factory=list)
    # Images (audits/checks/images.py): distinct absolute http(s) srcs, <= MAX_IMAGE_URLS_PER_PAGE, and examples
    # (<= MAX_LISTED_RESOURCES_PER_PAGE) of <img> without both width and height, and with too long an alt.
    image_urls: list[str] = field(default_factory=list)
    images_missing_size: int = 0
    images_missing_size_srcs: list[str] = field(default_factory=list)
    image_alts: list[tuple[str, int]] = field(default_factory=list)  # (src, alt length) of the longest alts
    # Resources the page loads (audits/pipeline/resources.py): (kind, absolute http(s) URL), kind one of script,
    # stylesheet, icon, font (a preloaded font); distinct URLs in document order, <= MAX_RESOURCE_URLS_PER_PAGE.
    resource_urls: list[tuple[str, str]] = field(default_factory=list)
    # <link rel=next/prev> (pagination checks), resolved and normalised; None when absent.
    rel_next: str | None = None
    rel_prev: str | None = None

    @property
    def main_words(self) -> list[str]:
        """The main text's first MAX_MAIN_WORDS_KEPT words, lower-cased."""
        return self.main_text.split(" ") if self.main_text else []

    @property
    def refreshes_at_once(self) -> bool:
        """A 0-second meta refresh to another URL: the page is a redirect (search engines treat it as one), not
        content to judge."""
        return bool(self.meta_refresh_url) and self.meta_refresh_delay_s == 0
