"""The audit screens' segment picker and the `?segment=` their links carry (audits.segments)."""

from urllib.parse import urlencode

from django import template

from audits.segments import SEGMENT_PARAM, segment_choices

register = template.Library()

# Parameters the picker does not carry over to the chosen segment: positions in a list of the old segment.
PICKER_DROPPED_PARAMS = frozenset({SEGMENT_PARAM, "page", "cursor", "in", "out"})


@register.simple_tag(takes_context=True)
def segment_query(context, joiner: str = "?") -> str:
    """`?segment=<key>` (or `&segment=…` with joiner "&") for a link of a screen read for a segment; "" without."""
    segment = context.get("segment")
    return f"{joiner}{urlencode({SEGMENT_PARAM: segment.key})}" if segment is not None else ""


@register.inclusion_tag("dashboard/_segment_picker.html", takes_context=True)
def segment_picker(context):
    """The picker: every segment of the audit (the project's own, or its top-level folders) and the whole site,
    with the screen's other parameters kept as hidden fields."""
    audit, request = context["audit"], context["request"]
    segment = context.get("segment")
    keep = [(k, v) for k, values in request.GET.lists() if k not in PICKER_DROPPED_PARAMS for v in values]
    return {
        "audit": audit,
        "choices": context.get("segment_choices") or (segment_choices(audit=audit) if audit is not None else []),
        "current": segment.key if segment is not None else request.GET.get(SEGMENT_PARAM, ""),
        "segment": segment,
        "keep": keep,
        "error": context.get("segment_error", ""),
    }
