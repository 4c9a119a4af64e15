"""Template helpers for the dashboard. Crawled text is never marked safe: these build markup with
format_html, which escapes every argument, and link a crawled URL only when it is http(s)."""

from datetime import timedelta

from django import template
from django.utils.html import format_html

from audits import events

register = template.Library()

SAFE_SCHEMES = ("http://", "https://")


def is_web_url(url) -> bool:
    return isinstance(url, str) and url.strip().lower().startswith(SAFE_SCHEMES)


@register.simple_tag
def crawled_link(url, text=None):
    """<a href> to a crawled URL when its scheme is http/https, else the URL as plain text."""
    label = url if text in (None, "") else text
    if is_web_url(url):
        return format_html('<a href="{}" rel="noopener noreferrer nofollow" class="ext">{}</a>', url.strip(), label)
    return format_html("<span>{}</span>", label)


@register.filter
def event_sentence(event) -> str:
    return events.event_sentence(event)


@register.filter
def event_label(kind) -> str:
    return events.event_label(kind)


@register.filter
def event_rows(event) -> list[tuple[str, str]]:
    return events.event_rows(event)


@register.filter
def duration(value) -> str:
    """A timedelta as `1 h 02 min`, `3 min 05 s` or `12 s`."""
    if not isinstance(value, timedelta):
        return "–"
    seconds = max(int(value.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


@register.simple_tag(takes_context=True)
def query(context, **changes) -> str:
    """The current query string with `changes` applied (None removes a key), for pagination and sorting."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.simple_tag(takes_context=True)
def page_query(context, param, number) -> str:
    """The current query string with page parameter `param` set to `number`."""
    params = context["request"].GET.copy()
    params[param] = number
    return f"?{params.urlencode()}"
