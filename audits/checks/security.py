"""Security checks: forms posting to http, target=_blank without noopener, protocol-relative resources (one page
at a time), and the security headers of the site's HTML responses (finalize: one issue per header, the
pages without it as evidence, because a header is set once in the server or CDN configuration for all pages).

`mixed-content` and `insecure-page` (http pages on an https site) live in audits/checks/page.py.
"""

from django.db.models import Q

EXAMPLES_MAX = 5
HEADER_EXAMPLES_MAX = 20  # pages named per missing header; the count says how many in all
HEADER_VALUE_MAX_CHARS = 300
HTML_TYPES = ("text/html", "application/xhtml+xml")
KEPT_HEADERS = (
    "strict-transport-security", "x-content-type-options", "x-frame-options", "content-security-policy",
    "referrer-policy",
)  # fmt: skip

HEADER_TYPES = (
    "missing-hsts", "missing-x-content-type-options", "missing-x-frame-options", "missing-referrer-policy",
)  # fmt: skip


def security_headers_kept(headers: dict) -> dict:
    """The response headers the security checks read (lower-cased names), values bounded."""
    return {name: str(headers[name])[:HEADER_VALUE_MAX_CHARS] for name in KEPT_HEADERS if name in headers}


def _hsts_ok(value: str) -> bool:
    for part in value.lower().split(";"):
        name, _, number = part.strip().partition("=")
        if name.strip() == "max-age":
            return number.strip().strip('"').isdigit() and int(number.strip().strip('"')) > 0
    return False


def header_missing(issue_type: str, url: str, headers: dict) -> bool:
    """Whether a 2xx HTML response at `url` lacks what `issue_type` asks for."""
    if issue_type == "missing-hsts":
        return url.lower().startswith("https://") and not _hsts_ok(headers.get("strict-transport-security", ""))
    if issue_type == "missing-x-content-type-options":
        return headers.get("x-content-type-options", "").strip().lower() != "nosniff"
    if issue_type == "missing-x-frame-options":
        csp = headers.get("content-security-policy", "").lower()
        return not headers.get("x-frame-options", "").strip() and "frame-ancestors" not in csp
    if issue_type == "missing-referrer-policy":
        return not headers.get("referrer-policy", "").strip()
    raise KeyError(issue_type)


def security_page_checks(page, data, add, settings) -> None:
    https_page = page.url.lower().startswith("https://")
    if data.form_http_actions and (https_page or settings.site_https):
        add(
            "form-posts-to-http", forms_count=len(data.form_http_actions), actions=data.form_http_actions[:EXAMPLES_MAX]
        )
    if data.blank_without_noopener:
        add(
            "target-blank-without-noopener",
            links_count=data.blank_without_noopener_total,
            links=data.blank_without_noopener[:EXAMPLES_MAX],
        )
    if data.protocol_relative_resources:
        add(
            "protocol-relative-resource",
            resources_count=len(data.protocol_relative_resources),
            resources=data.protocol_relative_resources[:EXAMPLES_MAX],
        )


def security_header_checks(audit, out, judged_pages) -> None:
    """One site-level issue per security header some 2xx HTML pages lack: how many, and the first of them."""
    wanted = [t for t in HEADER_TYPES if out.settings.enabled(t)]
    if not wanted:
        return
    rows = (
        judged_pages.filter(status_code__gte=200, status_code__lt=300, content_type__in=HTML_TYPES)
        .filter(~Q(security_headers=None))
        .order_by("url")
        .values_list("url", "security_headers")
    )
    checked = dict.fromkeys(wanted, 0)
    missing = dict.fromkeys(wanted, 0)
    examples: dict[str, list[str]] = {t: [] for t in wanted}
    for url, headers in rows.iterator(chunk_size=2000):
        headers = headers if isinstance(headers, dict) else {}
        for issue_type in wanted:
            if issue_type == "missing-hsts" and not url.lower().startswith("https://"):
                continue  # browsers ignore HSTS over http: only https pages are judged
            checked[issue_type] += 1
            if header_missing(issue_type, url, headers):
                missing[issue_type] += 1
                if len(examples[issue_type]) < HEADER_EXAMPLES_MAX:
                    examples[issue_type].append(url)
    for issue_type in wanted:
        if missing[issue_type]:
            out.add(
                issue_type,
                pages_missing=missing[issue_type],
                pages_checked=checked[issue_type],
                examples=examples[issue_type],
            )
