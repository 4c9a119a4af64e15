"""The check catalogue as Markdown, generated from the registry (`manage.py write_check_catalogue`).

docs/CHECKS.md is this function's output; a test fails when the file is stale, so the page people read
cannot drift from the checks the code runs.
"""

from audits.checks.registry import CATEGORIES, CHECKS, SCOPES, SEVERITIES, UNSCORED_TYPES
from audits.checks.score import DEDUCTION_POINTS, SCORE_FORMULA_VERSION, SCORE_FORMULA_WORDS, SEVERITY_WORDS

CATALOGUE_PATH = "docs/CHECKS.md"

_SCOPE_HEADINGS = {
    "page": ("Page checks", "Run on each crawled page as it is fetched."),
    "site": ("Site checks", "Run once over the whole crawl when the audit finalizes."),
    "lighthouse": ("Lighthouse checks", "Run on the sampled pages of audits started with Lighthouse."),
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _thresholds(values: dict, limits: dict) -> str:
    if not values:
        return "—"
    parts = []
    for key, value in values.items():
        limit = limits.get(key)
        parts.append(f"`{key}` = {value}" + (f" (at most {limit})" if limit is not None else ""))
    return "<br>".join(parts)


def render_catalogue() -> str:
    counts = {severity: sum(1 for spec in CHECKS if spec.severity == severity) for severity in SEVERITIES}
    lines = [
        "# Check catalogue",
        "",
        "<!-- Generated from audits/checks/registry.py by `python manage.py write_check_catalogue`; do not edit. -->",
        "",
        f"{len(CHECKS)} issue types: " + ", ".join(f"{counts[s]} {s}" for s in SEVERITIES) + ".",
        "Severities, thresholds and whether a type runs at all can be overridden per project: in the dashboard's "
        "project settings (Checks: one section per category, each check with a tick, a severity and its thresholds; "
        "only what differs from the defaults is saved), or through the API as `check_overrides`: "
        '`{"thresholds": {type: {key: value}}, "severities": {type: severity}, "disabled": [type, …]}`.',
        "",
        f"## Health score (formula version {SCORE_FORMULA_VERSION})",
        "",
        SCORE_FORMULA_WORDS,
        "",
        "| severity | called in reports | points off when it affects every page |",
        "|---|---|---|",
        *(f"| {s} | {SEVERITY_WORDS[s]} | {DEDUCTION_POINTS[s]} |" for s in SEVERITIES),
        "",
        "Each category's score is the same formula over the category's issue types only. Why these weights: "
        "`audits/checks/score.py`.",
        "",
        "Not counted in the score (stated in reports, no points off: a choice the site may have made, or what the "
        "audit could not verify): " + ", ".join(f"`{t}`" for t in sorted(UNSCORED_TYPES)) + ".",
        "",
    ]
    for scope in SCOPES:
        heading, blurb = _SCOPE_HEADINGS[scope]
        specs = [spec for spec in CHECKS if spec.scope == scope]
        lines += [f"## {heading} ({len(specs)})", "", blurb, ""]
        lines += [
            "| type | severity | category | title | what it means | how to fix | thresholds |",
            "|---|---|---|---|---|---|---|",
        ]
        for spec in specs:
            lines.append(
                f"| `{spec.type}` | {spec.severity} | {CATEGORIES.get(spec.category, spec.category)} | "
                f"{_cell(spec.title)} | {_cell(spec.explanation)} | "
                f"{_cell(spec.how_to_fix)} | {_thresholds(spec.thresholds, spec.threshold_limits)} |"
            )
        lines.append("")
    return "\n".join(lines)
