"""What the crawl skipped and why: the trap rules' and caps' names, the setting that raises each, the
`crawl-urls-skipped` site issues made from the skipped-URL records, and the sentences the event, the
dashboard and the CLI say. No URL a rule stops goes unreported.
"""

from django.db.models import Count

from crawler import traps
from scratchpad.models import SkippedURL

SKIPPED_EXAMPLES_MAX = 5  # example URLs named per (rule, shape)
SKIPPED_GROUPS_MAX = 200  # (rule, shape) issues per audit; a trap spread over more shapes is rare

# rule -> (what it recognises, the project setting that raises it or "" when none does, what to do then)
SKIP_RULES: dict[str, tuple[str, str, str]] = {
    traps.RULE_PATH_TOO_DEEP: (
        "paths deeper than the path-segment limit",
        "max_path_segments",
        "Raise the project's max path segments if these are real pages.",
    ),
    traps.RULE_REPEATING_PATH: (
        "paths whose segments repeat: a relative-link loop",
        "",
        "Fix the relative links that resolve against their own page; add an exclude pattern if they are real.",
    ),
    traps.RULE_CALENDAR: (
        "calendar dates far from today: an endless calendar",
        "calendar_years_ahead",
        "Raise the project's calendar years ahead if these dates are real content; else mark the calendar's "
        "links nofollow or disallow them in robots.txt.",
    ),
    SkippedURL.RULE_CALENDAR_DATES: (
        "more dated URLs of one shape than the limit: a calendar running day by day",
        "max_dated_urls_per_pattern",
        "Raise the project's dated URLs per shape if these are real archive pages; else mark the calendar's "
        "links nofollow or disallow them in robots.txt.",
    ),
    SkippedURL.RULE_QUERY_VARIANTS: (
        "more query-string variants of one path than the limit: facet combinations",
        "max_query_variants_per_path",
        "Raise the project's query variants per path, or keep facet links out of search engines' reach.",
    ),
    SkippedURL.RULE_IDENTICAL_PAGES: (
        "a shape whose crawled pages keep having the same main text: one page under endless URLs",
        "max_identical_pages_per_pattern",
        "Raise the project's identical pages per path shape if these pages differ in what matters; else keep "
        "the links that make these URLs (session ids, filters that change nothing) out of crawlers' reach.",
    ),
    SkippedURL.RULE_PATTERN_CAP: (
        "more URLs of one shape than the project's per-shape cap",
        "max_urls_per_pattern",
        "Raise the project's URLs per path shape.",
    ),
}


def skip_rule_label(rule: str) -> str:
    return SKIP_RULES.get(rule, (rule, "", ""))[0]


def skip_rule_setting(rule: str) -> str:
    return SKIP_RULES.get(rule, ("", "", ""))[1]


def skip_sentence(rule: str, pattern: str, count: int | None = None) -> str:
    """One line for the event log, the dashboard and the CLI: what was skipped, by which rule, and the setting."""
    setting = skip_rule_setting(rule)
    head = f"{count} URLs skipped" if count is not None else "URLs skipped"
    tail = f" (raise {setting})" if setting else ""
    return f"{head} by {rule} ({skip_rule_label(rule)}) under {pattern or '/'}{tail}"


def skipped_url_groups(audit_id, *, examples: bool = True) -> list[dict]:
    """The audit's skipped URLs per (rule, shape), most first: count and a few examples (one query per group;
    without `examples`, one query in all: what the live block, polled every 2 s, asks)."""
    groups = list(
        SkippedURL.objects.filter(audit_id=audit_id)
        .values("rule", "pattern")
        .annotate(n=Count("id"))
        .order_by("-n", "rule", "pattern")[:SKIPPED_GROUPS_MAX]
    )
    for group in groups:
        if not examples:
            group["examples"] = []
            continue
        group["examples"] = list(
            SkippedURL.objects.filter(audit_id=audit_id, rule=group["rule"], pattern=group["pattern"])
            .order_by("id")
            .values_list("url", flat=True)[:SKIPPED_EXAMPLES_MAX]
        )
    return groups


def skipped_url_issues(audit, out) -> None:
    """One `crawl-urls-skipped` issue per (rule, shape) that stopped URLs: the rule, the shape, how many
    URLs, examples and the setting that raises it. `out` is site.py's issue writer."""
    for group in skipped_url_groups(audit.id):
        rule = group["rule"]
        out.add(
            "crawl-urls-skipped",
            dedupe_key=f"{rule} {group['pattern']}",
            rule=rule,
            rule_label=skip_rule_label(rule),
            pattern=group["pattern"],
            urls_skipped=group["n"],
            examples=group["examples"],
            setting=skip_rule_setting(rule),
            setting_value=(audit.config or {}).get(skip_rule_setting(rule)),
            how_to_raise=SKIP_RULES.get(rule, ("", "", ""))[2],
        )
