"""Page checks: the issues one fetched page shows on its own, computed without any database access.

`page_issues` runs in a fetch thread (audits.pipeline.page_record.build_page_record) on an unsaved Page, the parsed
PageData (None when the page was not parsed) and the FetchResult.
"""

import re

from audits.checks.content import content_page_checks, thin_content_check
from audits.checks.images import image_page_checks
from audits.checks.pixels import pixel_checks
from audits.checks.registry import PAGE_TYPES, CheckSettings, make_issue
from audits.checks.render import render_page_issues
from audits.checks.robots import robots_directives  # its home; imported from here by older callers too
from audits.checks.security import security_page_checks
from audits.checks.structured_data import structured_data_page_checks
from audits.checks.urls import url_checks
from crawler.blocked import refusal_for
from crawler.limits import MAX_HTML_BYTES
from crawler.parse import PageData
from crawler.urls import normalize

PAGE_CHECK_TYPES: tuple[str, ...] = PAGE_TYPES

EXAMPLES_MAX = 5  # offending srcs/hrefs/values listed in an issue's details
NON_DESCRIPTIVE_LINK_TEXTS = frozenset({"click here", "here", "more", "read more", "learn more", "link", "this page"})
# Decoration around a link's words ("Read more »", "here.", "→ more"), never characters that make it another
# text: "--link" (a command-line option) and "link()" (a function) are names, not "link".
_LINK_TEXT_DECORATION = " \t\n.,:;!?…»«›‹>→←<–—|"
_LINK_TEXT_WRAPPERS = {"(": ")", "[": "]", '"': '"', "'": "'", "“": "”", "‘": "’"}
_URL_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):", re.IGNORECASE)

# --- hreflang codes: ISO 639-1 languages (+ legacy aliases), any 3-letter ISO 639-2/3 code,
# an optional 4-letter script, an optional ISO 3166-1 alpha-2 region or UN M.49 3-digit area.
ISO_639_1 = frozenset(
    """aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv
    dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii
    ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk
    ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc
    sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve
    vi vo wa wo xh yi yo za zh zu iw in ji""".split()
)
ISO_3166_1 = frozenset(
    """ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bl bm bn bo bq br bs bt bv
    bw by bz ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg eh er es et
    fi fj fk fm fo fr ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im
    in io iq ir is it je jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md
    me mf mg mh mk ml mm mn mo mp mq mr ms mt mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe
    pf pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st
    sv sx sy sz tc td tf tg th tj tk tl tm tn to tr tt tv tw tz ua ug um us uy uz va vc ve vg vi vn vu wf ws
    ye yt za zm zw xk""".split()
)
_HREFLANG = re.compile(r"^(?P<lang>[a-z]{2,3})(?:-(?P<script>[a-z]{4}))?(?:-(?P<region>[a-z]{2}|\d{3}))?$")


def hreflang_problem(value: str) -> str | None:
    """Why `value` is not a valid hreflang (language[-script][-region] or x-default), or None."""
    code = (value or "").strip().lower()
    if code == "x-default":
        return None
    if not code:
        return "empty"
    if "_" in code:
        return "uses '_' instead of '-'"
    match = _HREFLANG.match(code)
    if not match:
        return "not a language(-region) code"
    lang, region = match.group("lang"), match.group("region")
    if len(lang) == 2 and lang not in ISO_639_1:
        return f"unknown language code {lang!r}"
    if region and not region.isdigit() and region not in ISO_3166_1:
        hint = " (the United Kingdom is GB)" if region == "uk" else ""
        return f"unknown region code {region.upper()!r}{hint}"
    return None


def _link_text_key(anchor: str) -> str:
    """The words of a link text, lower-cased, without decoration around them: "Read more »" -> "read more",
    "(here)" -> "here"; "--link" and "link()" stay what they are."""
    text = " ".join(anchor.lower().split()).strip(_LINK_TEXT_DECORATION)
    if len(text) > 2 and _LINK_TEXT_WRAPPERS.get(text[0]) == text[-1]:
        text = text[1:-1].strip(_LINK_TEXT_DECORATION)
    return text


def _canonical_problem(href: str) -> str | None:
    """canonical-relative or canonical-non-http for a canonical href as written, or None when it is absolute
    http(s)."""
    if re.match(r"^https?://", href, re.IGNORECASE):
        return None
    scheme = _URL_SCHEME.match(href)
    # "c:/x" would read as a scheme too; one letter is a Windows drive, written where a path was meant.
    return "canonical-non-http" if scheme and len(scheme.group(1)) > 1 else "canonical-relative"


def instant_refresh_target(data, url: str) -> str:
    """The target of a 0-second meta refresh to another URL (the page is then a redirect), else ""."""
    target = data.meta_refresh_url if data.refreshes_at_once else ""
    return target if target and target != url else ""


_ASK = object()  # page_issues' `refusal` left out: asked of crawler.blocked here


def page_issues(page, data, result, settings: CheckSettings, *, refusal=_ASK) -> list:
    """Unsaved Issue rows for one fetched page (page.is_indexable must already be set). Pure: no DB.

    `refusal` is crawler.blocked.refusal_for's answer for this page, decided once by the page record
    (audits.pipeline.page_record) and read here; a caller without a page record (a test, the benchmark) leaves it
    out and the same function is asked."""
    if refusal is _ASK:
        refusal = refusal_for(result, data)
    found: list = []

    def add(issue_type: str, dedupe_key: str = "", **details) -> None:
        issue = make_issue(
            page.audit_id, issue_type, page=page, details=details, dedupe_key=dedupe_key, settings=settings
        )
        if issue is not None:
            found.append(issue)

    def limit(issue_type: str, key: str):
        return settings.threshold(issue_type, key)

    status = result.status_code
    if status is None or result.error_kind:
        # No HTTP answer, or the answer broke off (then its body is partial and not judged).
        add(
            "fetch-error",
            error_kind=result.error_kind or "other",
            error=result.error or page.fetch_error or "",
            status_code=status,
        )
        return found

    if refusal is not None:
        add("blocked-page", status_code=status, reason=refusal.reason)
        return found
    if status == 429:
        add("rate-limited-page", status_code=status, retry_after=result.headers.get("retry-after", ""))
        return found
    if status >= 500:
        add("server-error", status_code=status)
        return found
    if status >= 400:
        add("broken-page", status_code=status)
        return found

    if result.response_time_ms is not None and result.response_time_ms > limit("slow-response", "max_ms"):
        add("slow-response", response_time_ms=result.response_time_ms, max_ms=limit("slow-response", "max_ms"))
    if not 200 <= status < 300:
        return found  # redirects (and 1xx oddities) are judged by the site checks

    if status == 200 and not result.is_html:
        add("non-html-content", content_type=result.content_type or "(none)")
    # deep-page is judged in finalize (audits.pipeline.depth) on exact depths: at crawl time a page's depth is
    # only the first path found to it.
    if len(page.url) > limit("long-url", "max_chars"):
        add("long-url", chars=len(page.url), max_chars=limit("long-url", "max_chars"))
    url_checks(page, data, add, limit)
    if settings.site_https and page.url.lower().startswith("http://"):
        add("insecure-page", https_url="https://" + page.url[len("http://") :])

    if data is None:
        if not (result.is_html and status == 200 and not result.body):
            return found
        data = PageData()  # an empty 200 HTML answer: judged as the empty page it is
    if instant_refresh_target(data, page.url):
        add("meta-refresh-redirect", target=data.meta_refresh_url)
        return found  # a redirect, not content: no on-page findings (its title, text and links are not the page)

    _content_checks(page, data, result, add, limit)
    pixel_checks(data, add, limit)
    content_page_checks(page, data, add, limit)
    security_page_checks(page, data, add, settings)
    structured_data_page_checks(data, add)
    image_page_checks(data, add, limit)
    found += render_page_issues(page, settings)  # rendered pages: what JavaScript changed (Issue 27 render)
    return found


def _content_checks(page, data, result, add, limit) -> None:
    directives = robots_directives(data.meta_robots, page.x_robots_tag)
    noindex = "noindex" in directives
    if noindex:
        add("noindex-page", meta_robots=data.meta_robots, x_robots_tag=page.x_robots_tag)
    if "nofollow" in directives:
        add("nofollow-page", meta_robots=data.meta_robots, x_robots_tag=page.x_robots_tag)

    # Canonicals
    html_canonicals = [c for c in (normalize(href, data.base_url or page.url) for href in data.canonicals) if c]
    distinct = list(dict.fromkeys(html_canonicals))
    if len(distinct) > 1 or (distinct and page.canonical_header and page.canonical_header not in distinct):
        add(
            "canonical-conflict",
            html_canonicals=distinct[:EXAMPLES_MAX],
            header_canonical=page.canonical_header or None,
            canonicals_count=len(data.canonicals),
        )
    canonical = page.canonical_url or page.canonical_header
    # page.is_indexable, and also not for robots "none" or a Link-header canonical pointing elsewhere.
    indexable = page.is_indexable and not noindex and canonical in ("", page.url)
    if canonical and canonical != page.url:
        add("canonicalized-page", canonical=canonical)
    problem = _canonical_problem(data.canonicals[0]) if data.canonicals else None
    if problem == "canonical-relative":
        add("canonical-relative", href=data.canonicals[0][:500], resolved=canonical or None)
    elif problem == "canonical-non-http":
        scheme = _URL_SCHEME.match(data.canonicals[0]).group(1).lower()
        add("canonical-non-http", href=data.canonicals[0][:500], scheme=scheme)

    words = data.word_count
    if (
        data.app_root
        and data.scripts_total > 0
        and words < limit("javascript-rendering-suspected", "min_words")
        and not data.headings
        and data.links_total == 0
        and data.images_total == 0
    ):
        add("javascript-rendering-suspected", words=words, scripts=data.scripts_total)

    # Title and description
    title = data.titles[0].strip() if data.titles else ""
    if not title:
        add("missing-title", titles_count=len(data.titles))
    if len(data.titles) > 1:
        add("multiple-titles", titles_count=len(data.titles), titles=[t[:200] for t in data.titles[:EXAMPLES_MAX]])
    if title and len(title) > limit("title-too-long", "max_chars"):
        add("title-too-long", chars=len(title), max_chars=limit("title-too-long", "max_chars"), title=title[:300])
    if title and len(title) < limit("title-too-short", "min_chars"):
        add("title-too-short", chars=len(title), min_chars=limit("title-too-short", "min_chars"), title=title)
    description = (data.meta_description or "").strip()
    if not description:
        add("missing-meta-description", present=data.meta_description is not None)
    elif len(description) > limit("meta-description-too-long", "max_chars"):
        add(
            "meta-description-too-long",
            chars=len(description),
            max_chars=limit("meta-description-too-long", "max_chars"),
            description=description[:400],
        )
    elif len(description) < limit("meta-description-too-short", "min_chars"):
        add(
            "meta-description-too-short",
            chars=len(description),
            min_chars=limit("meta-description-too-short", "min_chars"),
            description=description,
        )

    # Headings
    h1_texts = [text for level, text in data.headings if level == 1 and text.strip()]
    if not h1_texts:
        add("missing-h1", h1_count=len(h1_texts))
    elif len(h1_texts) > 1:
        add("multiple-h1", h1_count=len(h1_texts), h1=[t[:200] for t in h1_texts[:EXAMPLES_MAX]])
    max_jump = limit("heading-order-skip", "max_level_jump")
    levels = [level for level, _ in data.headings]
    skips = [f"h{a} -> h{b}" for a, b in zip(levels, levels[1:], strict=False) if b - a > max_jump]
    if skips:
        add("heading-order-skip", skips=skips[:EXAMPLES_MAX], skips_count=len(skips))

    if indexable:
        thin_content_check(data, add, limit)
    if data.images_missing_alt:
        add(
            "images-missing-alt",
            images_missing_alt=data.images_missing_alt,
            images_total=data.images_total,
            srcs=data.images_missing_alt_srcs[:EXAMPLES_MAX],
        )

    # Links
    if indexable and data.links_total == 0 and not result.truncated:
        add("no-outgoing-links")  # (a page cut at the cap may link past it: html-too-large says so)
    if data.links_total > limit("too-many-links", "max_links"):
        add("too-many-links", links=data.links_total, max_links=limit("too-many-links", "max_links"))
    if data.links_not_stored:
        add(
            "too-many-link-targets",
            targets_stored=len(data.links),
            links_not_stored=data.links_not_stored,
            links=data.links_total,
        )
    # Every link text, same-page "#…" links included; a text used by many links counts each of them.
    vague = [
        (text, use) for text, use in data.anchor_texts.items() if _link_text_key(text) in NON_DESCRIPTIVE_LINK_TEXTS
    ]
    if vague:
        add(
            "non-descriptive-link-text",
            links_count=sum(use.count for _, use in vague),
            links=[{"href": use.href, "text": text} for text, use in vague[:EXAMPLES_MAX]],
        )

    if not data.has_viewport:
        add("missing-viewport")
    if not (data.html_lang or "").strip():
        add("missing-html-lang", lang_attribute="empty" if data.html_lang is not None else "absent")
    if page.url.lower().startswith("https://") and data.insecure_resources:
        add(
            "mixed-content",
            resources_count=len(data.insecure_resources),
            resources=data.insecure_resources[:EXAMPLES_MAX],
        )
    if data.meta_refresh_url:
        add("meta-refresh-redirect", target=data.meta_refresh_url)
    if data.jsonld_invalid:
        add("invalid-structured-data", invalid_blocks=data.jsonld_invalid, jsonld_blocks=data.jsonld_blocks)
    max_bytes = limit("large-html", "max_bytes")
    size = max(len(result.body), result.bytes_read)
    if result.truncated:
        add("html-too-large", bytes_read=size, max_bytes=MAX_HTML_BYTES)
    elif size > max_bytes:
        add("large-html", bytes_read=size, max_bytes=max_bytes)

    invalid = [(lang, href, why) for lang, href in data.hreflang if (why := hreflang_problem(lang))]
    if invalid:
        add(
            "hreflang-invalid",
            values_count=len(invalid),
            values=[{"hreflang": lang, "href": href, "problem": why} for lang, href, why in invalid[:EXAMPLES_MAX]],
        )
