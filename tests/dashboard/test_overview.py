"""The finished audit's overview: score with its change since the previous audit and a history chart,
issues per page, "what to fix first" by priority with count and share, and SVG charts of the pages."""

import re

import pytest
from django.urls import reverse

from audits.checks.score import SCORE_FORMULA_WORDS
from audits.models import Audit
from dashboard import charts
from tests.dashboard.conftest import finished_audit, make_issue, make_page
from tests.dashboard.test_issues import planted  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def test_overview_answers_what_to_fix_first(owner_client, planted):  # noqa: F811
    html = owner_client.get(reverse("audits:audit-detail", args=[planted.id])).content.decode()
    assert re.search(r'id="health-delta">\s*<span aria-hidden="true">▲</span> \+10', html)
    top = re.findall(r'<li class="top-issue [^"]*" data-type="([^"]+)"', html)
    assert top == ["missing-title", "missing-meta-description", "missing-viewport", "sitemap-missing"]
    evidence = reverse("audits:audit-issue-type", args=[planted.id, "missing-meta-description"])
    assert f'href="{evidence}"' in html
    assert "(50.0% of crawled)" in html and "whole site" in html
    assert "severity weight" in html and SCORE_FORMULA_WORDS in html
    # warnings per page next to the score: 10 warnings over 20 pages
    assert re.search(r"<dt>Warnings per page</dt><dd>0\.5</dd>", html)


def test_overview_shows_the_score_breakdown_beside_the_score(owner_client, planted):  # noqa: F811
    """Pages without errors, the sentence, the formula in words with the largest deductions, and the categories:
    1 critical on 1 page of 20 (-1.25), a warning on 10 (-4), a notice on every page (-2), a site-wide one (-2)."""
    html = owner_client.get(reverse("audits:audit-detail", args=[planted.id])).content.decode()
    assert re.search(
        r'id="error-free" title="19 of 20 pages have no error"><strong>95 %</strong> '
        r'<span class="muted">of pages without errors</span>',
        html,
    )
    assert "19 of 20 pages (95 %) have no error" in html  # the sentence under the score says it too
    assert (
        "91 out of 100: most points are taken off by Missing meta description (a warning on 50 % of the pages, −4)"
        in html
    )
    how = html[html.index('id="score-how"') : html.index("</details>", html.index('id="score-how"'))]
    assert "How is this calculated?" in how and SCORE_FORMULA_WORDS in how
    rows = re.findall(
        r'<tr><th scope="row"><a href="[^"]+/issues/([a-z-]+)/?"[^<]*>[^<]+</a>.*?<td class="num">−([\d.]+)</td></tr>',
        how,
    )
    assert rows == [
        ("missing-meta-description", "4"),
        ("missing-viewport", "2"),
        ("sitemap-missing", "2"),
        ("missing-title", "1.25"),
    ]
    categories = dict(re.findall(r'\?category=([a-z_]+)">[^<]+</a> <span class="health [a-z]+">(\d+)</span>', html))
    # missing title (1.25), meta description (4) and viewport (2) are metadata: 92.75, half up
    assert (categories["metadata"], categories["crawlability"]) == ("93", "98")  # the missing sitemap: 2
    assert categories["security"] == "100"


def test_the_trend_leaves_out_audits_scored_by_another_formula(owner_client, planted):  # noqa: F811
    older = finished_audit(planted.project, days_ago=10, health_score=100)
    Audit.objects.filter(id=older.id).update(score_formula=1)
    html = owner_client.get(reverse("audits:audit-detail", args=[planted.id])).content.decode()
    desc = re.search(r'<desc id="chart-history-d">([^<]*)</desc>', html).group(1)
    assert ": 100" not in desc and ": 60; " in desc  # the same formula's audits are drawn, the older one is not
    assert re.search(r'id="history-formula-note">1 earlier audit scored by an older formula is left out', html)
    previous = finished_audit(planted.project, days_ago=1, health_score=95)
    Audit.objects.filter(id=previous.id).update(score_formula=1)
    html = owner_client.get(reverse("audits:audit-detail", args=[planted.id])).content.decode()
    assert "was scored by an older formula: not compared" in html and "▲" not in html


def test_overview_charts_render_as_accessible_svg(owner_client, planted):  # noqa: F811
    html = owner_client.get(reverse("audits:audit-detail", args=[planted.id])).content.decode()
    svgs = re.findall(r'<svg class="chart-svg" role="(?:img|group)"', html)  # group: its bars are links
    assert len(svgs) == 5  # status, indexability, depth, response times, health history
    assert re.search(r"<desc id=\"chart-status-d\">2xx OK: 20 pages", html)
    assert reverse("audits:audit-pages", args=[planted.id]) + "?status=2xx" in html
    assert '<desc id="chart-history-d">' in html and ": 60; " in html and ": 70" in html


def test_charts_escape_labels_and_say_when_empty():
    svg = charts.bar_chart("c", "T", [charts.Bar("<script>", 3), charts.Bar("b", 0)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "nothing to show" in charts.column_chart("d", "Depth", [charts.Bar("0", 0)])
    assert "trend starts" in charts.line_chart("h", "History", [charts.Point("Jan 1", 50)])


def test_long_column_labels_wrap_to_fit_their_column():
    """The depth chart's last columns, "5+" and "Sitemap only", once drew their labels over each other."""
    labels = ["0", "1", "2", "3", "4", "5+", "Sitemap only"]
    svg = charts.column_chart("d", "Depth", [charts.Bar(label, 1) for label in labels])
    lines = re.findall(r'<tspan x="([\d.]+)" y="(\d+)">([^<]*)</tspan>', svg)
    slot = charts.VIEW_W / len(labels)
    assert all(len(text) * charts.LABEL_CHAR_W <= slot for _x, _y, text in lines)
    sitemap = [(x, int(y), text) for x, y, text in lines if text in ("Sitemap", "only")]
    assert [t for _x, _y, t in sitemap] == ["Sitemap", "only"] and sitemap[0][0] == sitemap[1][0]
    assert sitemap[1][1] > sitemap[0][1]  # a second line, below the first
    height = int(re.search(r'viewBox="0 0 \d+ (\d+)"', svg).group(1))
    assert sitemap[1][1] < height  # the chart grew to hold it
    assert "Sitemap only: 1 pages" in svg  # screen readers get the whole label


def test_overview_queries_do_not_grow_with_the_audit(owner_client, planted, django_assert_max_num_queries):  # noqa: F811
    url = reverse("audits:audit-detail", args=[planted.id])
    with django_assert_max_num_queries(40) as small:
        owner_client.get(url)
    for i in range(200):
        make_issue(planted, make_page(planted, f"/more{i:03d}"), "missing-h1", "warning")
    with django_assert_max_num_queries(len(small.captured_queries)):
        owner_client.get(url)
