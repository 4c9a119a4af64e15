"""The release gate: rules a CI pipeline fails on, judged on a completed audit against its baseline. Read by
`manage.py audit URL --fail-on RULES` (exit 3, `--junit FILE`), `GET /api/v1/audits/{id}/gate/?rules=…` and the
MCP tool `check_gate`; it only reads (no writes, no network).

A rule set is comma-separated (`new-critical,score-drop=5`). The rules:

- `new-critical`: a critical issue (type, URL) this audit has and its baseline has not, matched as the comparison
  matches issues (audits.comparison: by type and page URL; a baseline issue on a page not crawled again is not
  "fixed", and an issue on a page the baseline did not crawl is new). Against a baseline whose issue rows retention
  pruned (`Audit.summarised_at`) issues are matched by type only: a critical type the baseline did not have.
- `new-issue=TYPE`: the same for one issue type (docs/CHECKS.md), whatever its severity.
- `score-drop=N`: the health score fell by N points or more (N from 1 to 100).
- `score-below=N`: the health score is below N; needs no baseline (a floor for the first run too).
- `became-noindex`: a URL indexable in the baseline is not indexable now, whatever the reason (noindex, a canonical
  elsewhere, an error or a redirect now): a PageChange of indexability, direction down (audits/pipeline/changes.py).
- `new-broken`: a URL that answered below 400 in the baseline answers 4xx/5xx or fails (no answer) now (a
  PageChange of its status whose `before` is a status below 400), plus URLs added since the baseline that are
  broken now (a PageChange `added`).
- `pages-drop=N`: the audit crawled N % fewer pages than its baseline, or more (N from 1 to 100); its examples are
  URLs removed since the baseline.

Each rule's result: passed or not, a one-line reason, a count (URLs; points for the score rules, pages lost for
pages-drop) and up to GATE_EXAMPLES_MAX example URLs. A rule that needs a baseline passes with the reason "no
baseline" when the audit has none (the first audit of a project: CI must not fail its first run) and is reported as
not judged (JUnit `<skipped>`).

The baseline is the audit's own (`Audit.baseline`, set by `audit_start(baseline=…)` or at finalize), else the
project's previous completed audit (audits.comparison.comparison_baseline). A rule set that names an unknown rule, a
bad value or an unknown issue type is refused with AuditRefused("invalid_gate_rule") naming the rule.
"""

import re
from dataclasses import dataclass, field
from xml.etree import ElementTree

from django.db.models import Count, Exists, OuterRef, Q

from audits.checks.registry import CHECKS_BY_TYPE, CRITICAL
from audits.comparison import comparison_baseline, comparison_issues
from audits.errors import AuditRefused
from audits.models import Audit, Page, PageChange
from audits.stats import issue_type_counts

GATE_EXAMPLES_MAX = 10  # example URLs per rule, as the alerts give them
GATE_RULES_MAX = 20  # rules in one set: every rule there is, with room for several new-issue=TYPE
GATE_RULES_TEXT_MAX_CHARS = 2000
RULE_ECHO_MAX_CHARS = 60  # how much of a refused rule its error repeats
CAUSES_SHOWN = 5  # why URLs became non-indexable, in a rule's one-line reason
INVALID_GATE_RULE = "invalid_gate_rule"
AUDIT_NOT_COMPLETED = "audit_not_completed"
AUDIT_SUMMARISED = "audit_summarised"
NO_BASELINE = "no baseline"
JUNIT_SUITE_NAME = "sitewarden gate"
JUNIT_CLASSNAME = "sitewarden.gate"
JUNIT_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'  # as CI tools write theirs (ElementTree's is quoted '')

# name -> what its value is: None (no value), "points" (1–100), "percent" (1–100, "%" optional), "type" (an issue type)
RULE_VALUES: dict[str, str | None] = {
    "new-critical": None,
    "new-issue": "type",
    "score-drop": "points",
    "score-below": "points",
    "became-noindex": None,
    "new-broken": None,
    "pages-drop": "percent",
}
RULE_SYNOPSIS = "new-critical, new-issue=TYPE, score-drop=N, score-below=N, became-noindex, new-broken, pages-drop=N"
NEEDS_NO_BASELINE = frozenset({"score-below"})
STATUS_BELOW_400 = r"^[1-3][0-9][0-9]$"  # a PageChange's `before` status as text: an answer below 400


@dataclass(frozen=True)
class GateRule:
    name: str
    value: int | str | None = None

    @property
    def text(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"


@dataclass
class RuleResult:
    rule: str  # as written in a rule set: "score-drop=5"
    passed: bool
    reason: str  # one line
    count: int = 0
    examples: list[str] = field(default_factory=list)
    judged: bool = True  # False: nothing to judge it on (no baseline), or the audit did not complete


@dataclass
class GateResult:
    audit_id: object
    baseline_id: object | None
    rules: list[RuleResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rules)

    @property
    def reason(self) -> str:
        """One line: the rules that fired with their reasons, or that every rule passed."""
        fired = [r for r in self.rules if not r.passed]
        if fired:
            return "gate failed: " + "; ".join(f"{r.rule}: {r.reason}" for r in fired)
        unjudged = [r for r in self.rules if not r.judged]
        why = "; ".join(dict.fromkeys(r.reason for r in unjudged))
        note = f" ({len(unjudged)} not judged: {why})" if unjudged else ""
        return f"gate passed: {len(self.rules)} rule{'s' if len(self.rules) != 1 else ''}{note}"

    def as_json(self) -> dict:
        """The API's shape (api.serializers.GateSerializer), for the CLI's --json."""
        return {
            "audit": str(self.audit_id),
            "baseline": str(self.baseline_id) if self.baseline_id else None,
            "passed": self.passed,
            "reason": self.reason,
            "rules": [
                {"rule": r.rule, "passed": r.passed, "judged": r.judged, "reason": r.reason, "count": r.count,
                 "examples": list(r.examples)}
                for r in self.rules
            ],
        }  # fmt: skip


# --- parsing ---------------------------------------------------------------------------------------------------


def _refuse(message: str) -> AuditRefused:
    return AuditRefused(INVALID_GATE_RULE, message, field="rules")


def _echo(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= RULE_ECHO_MAX_CHARS else text[:RULE_ECHO_MAX_CHARS] + "…")


def gate_rule_parse(text: str) -> GateRule:
    """One rule (`score-drop=5`), or AuditRefused(invalid_gate_rule) naming it and saying what is wrong."""
    name, has_value, raw = (part.strip() for part in text.partition("="))
    name = name.lower()
    if name not in RULE_VALUES:
        raise _refuse(f"Unknown gate rule {_echo(text)}; the rules are {RULE_SYNOPSIS}.")
    kind = RULE_VALUES[name]
    if kind is None:
        if has_value:
            raise _refuse(f"The gate rule {name} takes no value (got {_echo(text)}).")
        return GateRule(name)
    if not raw:
        what = "an issue type" if kind == "type" else "a number from 1 to 100"
        raise _refuse(f"The gate rule {name} needs {what}: {name}={'TYPE' if kind == 'type' else 'N'}.")
    if kind == "type":
        if raw not in CHECKS_BY_TYPE:
            raise _refuse(f"The gate rule {_echo(text)} names no issue type (docs/CHECKS.md lists them).")
        return GateRule(name, raw)
    number = raw.removesuffix("%").strip() if kind == "percent" else raw
    if not re.fullmatch(r"[0-9]{1,3}", number) or not 1 <= int(number) <= 100:
        unit = " (a percentage)" if kind == "percent" else ""
        raise _refuse(f"The gate rule {_echo(text)} needs a whole number from 1 to 100{unit}.")
    return GateRule(name, int(number))


def gate_rules_parse(text: str) -> list[GateRule]:
    """A comma-separated rule set, in its order, each rule once; AuditRefused(invalid_gate_rule) for a bad one."""
    if len(text or "") > GATE_RULES_TEXT_MAX_CHARS:
        raise _refuse(f"The gate rules are longer than {GATE_RULES_TEXT_MAX_CHARS} characters.")
    rules: list[GateRule] = []
    for part in (text or "").split(","):
        if part.strip():
            rule = gate_rule_parse(part)
            if rule not in rules:
                rules.append(rule)
    if not rules:
        raise _refuse(f"Give at least one gate rule: {RULE_SYNOPSIS}.")
    if len(rules) > GATE_RULES_MAX:
        raise _refuse(f"At most {GATE_RULES_MAX} gate rules in one set.")
    return rules


# --- evaluation ------------------------------------------------------------------------------------------------


def gate_baseline(*, audit: Audit) -> Audit | None:
    """The audit the gate judges against: its own baseline (chosen at start, or by finalize) while that is a
    completed audit; none when finalize found none to measure changes against (`Audit.stats["changes"]["baseline"]`
    empty: a first audit); else, for an audit finished before change detection, the project's previous completed
    audit."""
    if audit.baseline_id is not None:
        chosen = Audit.objects.filter(id=audit.baseline_id, status=Audit.Status.COMPLETED).first()
        if chosen is not None:
            return chosen
    if _changes_recorded(audit) and not (audit.stats["changes"] or {}).get("baseline"):
        return None
    return comparison_baseline(audit=audit)


def gate_evaluate(*, audit: Audit, rules: list[GateRule]) -> GateResult:
    """Each rule passed or failed on a completed audit against its baseline (see the module docstring). Refuses an
    audit that did not complete (audit_not_completed) and one whose pages retention pruned (audit_summarised)."""
    if audit.status != Audit.Status.COMPLETED:
        raise AuditRefused(
            AUDIT_NOT_COMPLETED, f"The gate judges a completed audit; this one is {audit.status}.", field="audit"
        )
    if audit.summarised_at is not None:
        raise AuditRefused(
            AUDIT_SUMMARISED,
            "This audit's pages and issues were pruned by the project's retention; the gate judges an audit that "
            "keeps them.",
            field="audit",
        )
    baseline = gate_baseline(audit=audit)
    results = []
    for rule in rules:
        if baseline is None and rule.name not in NEEDS_NO_BASELINE:
            results.append(RuleResult(rule.text, True, NO_BASELINE, judged=False))
        else:
            results.append(JUDGES[rule.name](audit, baseline, rule))
    return GateResult(audit_id=audit.id, baseline_id=baseline.id if baseline else None, rules=results)


def gate_unjudged(*, audit: Audit, rules: list[GateRule]) -> GateResult:
    """The rule set on an audit that did not complete (the CLI's JUnit report then): no rule judged, none passed."""
    why = f"not judged: the audit {audit.status}" + (f" ({audit.error_code})" if audit.error_code else "")
    return GateResult(
        audit_id=audit.id,
        baseline_id=None,
        rules=[RuleResult(rule.text, False, why, judged=False) for rule in rules],
    )


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _site_url(audit: Audit) -> str:
    return audit.site_url or audit.start_url


def _new_issues(audit: Audit, baseline: Audit, rule: GateRule, *, issue_types: list[str], what: str) -> RuleResult:
    """Issues of these types (critical ones for new-critical) not in the baseline, per (type, URL)."""
    critical_only = rule.name == "new-critical"
    per_type: dict[str, int] = {}
    examples: list[str] = []
    if baseline.summarised_at is not None:  # its issue rows are gone: a type it did not have at all is new

        def counted(row: dict) -> bool:
            return not critical_only or row["severity"] == CRITICAL

        before = {r["type"] for r in issue_type_counts(audit=baseline) if counted(r)}
        for r in issue_type_counts(audit=audit):
            if not counted(r) or r["type"] not in issue_types or r["type"] in before:
                continue
            per_type[r["type"]] = per_type.get(r["type"], 0) + (r["pages"] + r["site"])
        for issue_type in sorted(per_type):
            if len(examples) >= GATE_EXAMPLES_MAX:
                break
            urls = audit.issues.filter(type=issue_type).order_by("page_url").values_list("page_url", flat=True)
            examples += [u or _site_url(audit) for u in urls.distinct()[: GATE_EXAMPLES_MAX - len(examples)]]
        matched_by = " (the baseline is summarised: matched by issue type)"
    else:
        for issue_type in issue_types:
            new = comparison_issues(audit=audit, previous=baseline, kind="new", issue_type=issue_type)
            if critical_only:
                new = new.filter(severity=CRITICAL)
            urls = new.order_by("page_url").values_list("page_url", flat=True).distinct()
            n = urls.count()
            if n:
                per_type[issue_type] = n
                if len(examples) < GATE_EXAMPLES_MAX:
                    examples += [u or _site_url(audit) for u in urls[: GATE_EXAMPLES_MAX - len(examples)]]
                    examples = list(dict.fromkeys(examples))  # a URL new in two types is one example
        matched_by = ""
    count = sum(per_type.values())
    if not count:
        return RuleResult(rule.text, True, f"no new {what}s{matched_by}")
    types = ", ".join(f"{t} on {_plural(n, 'URL')}" for t, n in sorted(per_type.items(), key=lambda kv: -kv[1]))
    return RuleResult(rule.text, False, f"{_plural(count, 'new ' + what)}: {types}{matched_by}", count, examples)


def _judge_new_critical(audit: Audit, baseline: Audit, rule: GateRule) -> RuleResult:
    critical_types = sorted({r["type"] for r in issue_type_counts(audit=audit) if r["severity"] == CRITICAL})
    return _new_issues(audit, baseline, rule, issue_types=critical_types, what="critical issue")


def _judge_new_issue(audit: Audit, baseline: Audit, rule: GateRule) -> RuleResult:
    return _new_issues(audit, baseline, rule, issue_types=[rule.value], what=f"{rule.value} issue")


def _scores(audit: Audit, baseline: Audit | None) -> str | None:
    """Why the score rules cannot judge, or None."""
    if audit.health_score is None:
        return "the audit has no health score"
    if baseline is not None and baseline.health_score is None:
        return "the baseline has no health score"
    return None


def _judge_score_drop(audit: Audit, baseline: Audit, rule: GateRule) -> RuleResult:
    if missing := _scores(audit, baseline):
        return RuleResult(rule.text, True, missing, judged=False)
    drop = baseline.health_score - audit.health_score
    text = f"health score {baseline.health_score} → {audit.health_score}"
    if drop >= rule.value:
        return RuleResult(rule.text, False, f"{text}: down {drop}, the limit is {rule.value}", drop)
    return RuleResult(rule.text, True, f"{text}" + (f" (down {drop})" if drop > 0 else ""), max(drop, 0))


def _judge_score_below(audit: Audit, baseline: Audit | None, rule: GateRule) -> RuleResult:
    if missing := _scores(audit, None):
        return RuleResult(rule.text, True, missing, judged=False)
    if audit.health_score < rule.value:
        below = rule.value - audit.health_score
        return RuleResult(rule.text, False, f"health score {audit.health_score}, below {rule.value}", below)
    return RuleResult(rule.text, True, f"health score {audit.health_score}")


def _changes_recorded(audit: Audit) -> bool:
    """Finalize stored the audit's changes against its baseline (an audit finished before change detection has
    none, and no changes row then means nothing)."""
    return "changes" in (audit.stats or {})


def _urls(queryset) -> tuple[int, list[str]]:
    urls = queryset.order_by("url").values_list("url", flat=True)
    return urls.count(), list(urls[:GATE_EXAMPLES_MAX])


NO_CHANGES = "no changes recorded against the baseline (the audit finished before change detection)"


def _judge_became_noindex(audit: Audit, baseline: Audit, rule: GateRule) -> RuleResult:
    if not _changes_recorded(audit):
        return RuleResult(rule.text, True, NO_CHANGES, judged=False)
    down = PageChange.objects.filter(
        audit=audit, field=PageChange.Field.INDEXABILITY, direction=PageChange.Direction.DOWN
    )
    n, examples = _urls(down)
    if not n:
        return RuleResult(rule.text, True, "no URL became non-indexable")
    # `after` is "non-indexable: <why>" (audits.pipeline.changes.indexability_text): a reason per cause, most first
    # (sorted here: a database's collation may order "noindex" and "non-2xx status" either way)
    causes = down.order_by().values_list("after").annotate(n=Count("id"))
    counted = sorted(((after.partition(": ")[2] or after, n) for after, n in causes), key=lambda c: (-c[1], c[0]))
    why = ", ".join(f"{cause}: {n}" for cause, n in counted[:CAUSES_SHOWN])
    return RuleResult(rule.text, False, f"{_plural(n, 'URL')} became non-indexable ({why})", n, examples)


def broken_now_q() -> Q:
    """A page that answers 4xx/5xx or did not answer at all (a connection error, a timeout)."""
    return Q(status_code__gte=400) | Q(fetch_class=Page.FetchClass.ERROR)


def _judge_new_broken(audit: Audit, baseline: Audit, rule: GateRule) -> RuleResult:
    if not _changes_recorded(audit):
        return RuleResult(rule.text, True, NO_CHANGES, judged=False)
    changes = PageChange.objects.filter(audit=audit, url=OuterRef("url"))
    was_fine = changes.filter(field=PageChange.Field.STATUS, before__regex=STATUS_BELOW_400)
    added = changes.filter(field=PageChange.Field.ADDED)
    broken = Page.objects.filter(audit=audit).filter(broken_now_q()).filter(Exists(was_fine) | Exists(added))
    n, examples = _urls(broken)
    if n:
        return RuleResult(rule.text, False, f"{_plural(n, 'URL')} newly broken (4xx/5xx or no answer)", n, examples)
    return RuleResult(rule.text, True, "no URL newly broken")


def _judge_pages_drop(audit: Audit, baseline: Audit, rule: GateRule) -> RuleResult:
    before, now = baseline.pages_crawled, audit.pages_crawled
    lost = before - now
    text = f"{before} → {now} pages crawled"
    if before and lost > 0 and lost * 100 >= rule.value * before:
        removed = PageChange.objects.filter(audit=audit, field=PageChange.Field.REMOVED)
        _n, examples = _urls(removed)
        percent = lost * 100 // before
        return RuleResult(rule.text, False, f"{text}: down {percent} %, the limit is {rule.value} %", lost, examples)
    return RuleResult(rule.text, True, text, max(lost, 0))


JUDGES = {
    "new-critical": _judge_new_critical,
    "new-issue": _judge_new_issue,
    "score-drop": _judge_score_drop,
    "score-below": _judge_score_below,
    "became-noindex": _judge_became_noindex,
    "new-broken": _judge_new_broken,
    "pages-drop": _judge_pages_drop,
}


# --- JUnit XML ---------------------------------------------------------------------------------------------------

# XML 1.0 allows tab, newline, carriage return and the characters from U+0020 on, less surrogates and two
# non-characters: anything else (a control character in a crawled URL) would make the file unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def gate_junit_xml(result: GateResult, *, timestamp: str = "", properties: dict[str, str] | None = None) -> bytes:
    """The gate as a JUnit XML report CI systems show: one testsuite, one testcase per rule; a rule that fired is
    a `<failure message=reason>` listing its examples, one not judged for want of a baseline `<skipped>`, one not
    judged because the audit did not complete an `<error>`."""
    failures = sum(not r.passed and r.judged for r in result.rules)
    errors = sum(not r.passed and not r.judged for r in result.rules)
    skipped = sum(r.passed and not r.judged for r in result.rules)
    counts = {"tests": str(len(result.rules)), "failures": str(failures), "errors": str(errors), "time": "0"}
    root = ElementTree.Element("testsuites", {"name": "sitewarden", **counts})
    suite_attributes = {"name": JUNIT_SUITE_NAME, **counts, "skipped": str(skipped)}
    if timestamp:  # an xs:dateTime where the report's schema has one: left out rather than empty
        suite_attributes["timestamp"] = timestamp
    suite = ElementTree.SubElement(root, "testsuite", suite_attributes)
    props = ElementTree.SubElement(suite, "properties")
    for name, value in {
        "audit": str(result.audit_id),
        "baseline": str(result.baseline_id or ""),
        **(properties or {}),
    }.items():
        ElementTree.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
    for r in result.rules:
        case = ElementTree.SubElement(
            suite, "testcase", {"classname": JUNIT_CLASSNAME, "name": _xml_text(r.rule), "time": "0"}
        )
        if not r.passed:
            tag = "failure" if r.judged else "error"
            element = ElementTree.SubElement(
                case, tag, {"message": _xml_text(r.reason), "type": r.rule.partition("=")[0]}
            )
            lines = [r.reason, *r.examples]
            if r.count > len(r.examples) and r.examples:
                lines.append(f"… and {r.count - len(r.examples)} more")
            element.text = _xml_text("\n".join(lines))
        elif not r.judged:
            ElementTree.SubElement(case, "skipped", {"message": _xml_text(r.reason)})
        else:
            ElementTree.SubElement(case, "system-out").text = _xml_text(r.reason)
    ElementTree.indent(root)
    return JUNIT_DECLARATION + ElementTree.tostring(root, encoding="unicode").encode() + b"\n"
