"""Server-rendered SVG charts, the one chart builder of the overview and the shared report (and its PDF): bars,
columns and the health history line.

Pure functions from figures to markup: no database, no script, no inline style (the CSP forbids both), so a
chart looks the same in the dashboard, a shared report and a printed PDF. Every argument is escaped by
format_html; colours come from CSS classes in static/sitewarden/overview.css. Each chart is an
<svg role="img"> with a <title> and a <desc> that reads out every figure for screen readers.
"""

from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

VIEW_W = 360  # px of the viewBox; the SVG scales to its box (see overview.css for the size on screen)
FONT_PX = 12
BAR_ROW_PX = 24  # height per horizontal bar, gap included
BAR_H_PX = 16
BAR_LABEL_W = 118  # px for the labels left of horizontal bars
BAR_VALUE_W = 62  # px kept right of the longest bar for its value
COLUMN_CHART_H = 150  # px of a column chart's plot area
COLUMN_AXIS_H = 32  # px under the plot for the labels
LINE_CHART_H = 120
LINE_PAD_X = 34
LINE_PAD_Y = 14
LABEL_MAX_CHARS = 18
LABEL_CHAR_W = 7.0  # px of viewBox per character of a column label at FONT_PX ("Sitemap" measures 48 px in Chromium)
LABEL_LINE_PX = 14  # px between the lines of a column label that wraps
LABEL_MAX_LINES = 2  # a column label longer than its column wraps onto this many lines, then is cut short


# The CSS class of a bar (overview.css, share.css) by the tone audits.stats.CHARTS gives it.
TONE_CSS = {"ok": "ok", "info": "info", "warning": "warn", "critical": "bad", "muted": "muted"}


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    css: str = ""  # extra class on the bar: ok, warn, bad, info, muted
    href: str = ""  # where a click on the bar goes (the matching filtered list)
    note: str = ""  # shown after the value, e.g. "12%"


@dataclass(frozen=True)
class Point:
    label: str  # e.g. the audit's date
    value: int | None  # 0-100; None when the audit had no score
    href: str = ""
    current: bool = False


def _n(value: float) -> str:
    """A coordinate with one decimal (format_html escapes its arguments to text before formatting)."""
    return f"{value:.1f}"


def _short(text: str) -> str:
    return text if len(text) <= LABEL_MAX_CHARS else text[: LABEL_MAX_CHARS - 1] + "…"


def _wrap(text: str, max_chars: int) -> list[str]:
    """A label as at most LABEL_MAX_LINES lines of at most `max_chars` (broken between words), so the labels
    of neighbouring columns never overlap ("5+" next to "Sitemap only"); what does not fit ends with "…"."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= max_chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    if len(lines) > LABEL_MAX_LINES:
        lines = lines[: LABEL_MAX_LINES - 1] + [" ".join(lines[LABEL_MAX_LINES - 1 :])]
    return [line if len(line) <= max_chars else line[: max(max_chars - 1, 1)] + "…" for line in lines] or [""]


def _svg(chart_id: str, title: str, width: int, height: int, desc: str, body: list) -> SafeString:
    # role=img hides its children from assistive tech, so a chart whose bars are links is a named group
    # instead (links inside an img are unreachable: axe's nested-interactive).
    role = "group" if any("<a " in str(part) for part in body) else "img"
    head = format_html(
        '<svg class="chart-svg" role="{5}" aria-labelledby="{0}-t {0}-d" viewBox="0 0 {1} {2}" '
        'preserveAspectRatio="xMinYMin meet" focusable="false"><title id="{0}-t">{3}</title>'
        '<desc id="{0}-d">{4}</desc>',
        chart_id,
        width,
        height,
        title,
        desc,
        role,
    )
    return mark_safe(head + "".join(body) + "</svg>")  # every part above came from format_html


def _linked(href: str, inner: SafeString) -> SafeString:
    return format_html('<a href="{}">{}</a>', href, inner) if href else inner


def bar_chart(chart_id: str, title: str, bars: list[Bar], *, unit: str = "pages") -> SafeString:
    """Horizontal bars, one per category, scaled to the largest; an empty chart says so."""
    if not bars or not any(b.value for b in bars):
        return format_html('<p class="muted chart-empty">{}: nothing to show.</p>', title)
    top = max(b.value for b in bars)
    plot_w = VIEW_W - BAR_LABEL_W - BAR_VALUE_W
    body = []
    for i, b in enumerate(bars):
        y = i * BAR_ROW_PX + 4
        width = round(plot_w * b.value / top) if b.value else 0
        width = max(width, 2) if b.value else 0
        text = f"{b.value} {b.note}".strip()
        group = format_html(
            '<g class="bar {}"><text class="label" x="{}" y="{}" text-anchor="end">{}</text>'
            '<rect x="{}" y="{}" width="{}" height="{}" rx="2"></rect>'
            '<text class="value" x="{}" y="{}">{}</text></g>',
            b.css,
            BAR_LABEL_W - 6,
            y + BAR_H_PX - 4,
            _short(b.label),
            BAR_LABEL_W,
            y,
            width,
            BAR_H_PX,
            BAR_LABEL_W + width + 4,
            y + BAR_H_PX - 4,
            text,
        )
        body.append(_linked(b.href, group))
    desc = "; ".join(f"{b.label}: {b.value} {unit}{f' ({b.note})' if b.note else ''}" for b in bars)
    return _svg(chart_id, title, VIEW_W, len(bars) * BAR_ROW_PX + 6, desc, body)


def column_chart(chart_id: str, title: str, bars: list[Bar], *, unit: str = "pages") -> SafeString:
    """Vertical columns (a histogram: depth, response time), value above each, label below."""
    if not bars or not any(b.value for b in bars):
        return format_html('<p class="muted chart-empty">{}: nothing to show.</p>', title)
    top = max(b.value for b in bars)
    slot = VIEW_W / len(bars)
    col_w = max(6, slot * 0.7)
    base = COLUMN_CHART_H + FONT_PX + 4
    labels = [_wrap(b.label, max(int(slot // LABEL_CHAR_W), 1)) for b in bars]
    extra_lines = max(len(lines) for lines in labels) - 1
    body = [format_html('<line class="axis" x1="0" y1="{0}" x2="{1}" y2="{0}"></line>', base, VIEW_W)]
    for i, b in enumerate(bars):
        height = round((COLUMN_CHART_H - 4) * b.value / top) if b.value else 0
        height = max(height, 2) if b.value else 0
        x = i * slot + (slot - col_w) / 2
        middle = _n(x + col_w / 2)
        label = format_html_join(
            "", '<tspan x="{}" y="{}">{}</tspan>', ((middle, base + FONT_PX + 4 + n * LABEL_LINE_PX, line)
            for n, line in enumerate(labels[i]))
        )  # fmt: skip
        group = format_html(
            '<g class="bar {}"><rect x="{}" y="{}" width="{}" height="{}" rx="2"></rect>'
            '<text class="value" x="{}" y="{}" text-anchor="middle">{}</text>'
            '<text class="label col" text-anchor="middle">{}</text></g>',
            b.css,
            _n(x),
            base - height,
            _n(col_w),
            height,
            middle,
            base - height - 4,
            b.value,
            label,
        )
        body.append(_linked(b.href, group))
    desc = "; ".join(f"{b.label}: {b.value} {unit}" for b in bars)
    return _svg(chart_id, title, VIEW_W, base + COLUMN_AXIS_H + extra_lines * LABEL_LINE_PX, desc, body)


def line_chart(chart_id: str, title: str, points: list[Point]) -> SafeString:
    """Health score (0-100) per audit, oldest left; the current audit's point is marked."""
    scored = [p for p in points if p.value is not None]
    if len(scored) < 2:
        return format_html(
            '<p class="muted chart-empty">{}: one audit so far; the trend starts with the next.</p>', title
        )
    plot_w = VIEW_W - 2 * LINE_PAD_X
    plot_h = LINE_CHART_H - 2 * LINE_PAD_Y
    step = plot_w / (len(scored) - 1)

    def xy(i: int, value: int) -> tuple[float, float]:
        return LINE_PAD_X + i * step, LINE_PAD_Y + plot_h * (1 - value / 100)

    body = []
    for level in (0, 50, 100):
        _, y = xy(0, level)
        body.append(
            format_html(
                '<line class="grid" x1="{0}" y1="{1}" x2="{2}" y2="{1}"></line>'
                '<text class="axis-label" x="{3}" y="{4}" text-anchor="end">{5}</text>',
                LINE_PAD_X,
                _n(y),
                VIEW_W - LINE_PAD_X,
                LINE_PAD_X - 4,
                _n(y + 4),
                level,
            )
        )
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(i, p.value) for i, p in enumerate(scored)))
    body.append(format_html('<polyline class="line" points="{}"></polyline>', path))
    for i, p in enumerate(scored):
        x, y = xy(i, p.value)
        dot = format_html(
            '<circle class="dot{}" cx="{}" cy="{}" r="{}"><title>{}: {}</title></circle>',
            " current" if p.current else "",
            _n(x),
            _n(y),
            5 if p.current else 3.5,
            p.label,
            p.value,
        )
        body.append(_linked(p.href, dot))
    first, last = scored[0], scored[-1]
    body.append(
        format_html(
            '<text class="axis-label" x="{}" y="{}">{}</text><text class="axis-label" x="{}" y="{}" '
            'text-anchor="end">{}</text>',
            LINE_PAD_X,
            LINE_CHART_H + 4,
            first.label,
            VIEW_W - LINE_PAD_X,
            LINE_CHART_H + 4,
            last.label,
        )
    )
    desc = "; ".join(f"{p.label}: {p.value}" for p in scored)
    return _svg(chart_id, title, VIEW_W, LINE_CHART_H + 10, desc, body)
