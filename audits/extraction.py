"""Custom extraction: a project's named XPath, CSS or regex extractors, read from every HTML page at crawl
time and stored on the page (`Page.extracted`), with an optional rule per extractor that turns a value into
a `custom-extraction` issue.

An extractor is stored on the project as a dict:
    {"name": "price", "kind": "xpath" | "css" | "regex", "expression": "...", "multiple": false,
     "rule": "" | "missing" | "contains" | "matches", "rule_value": "..."}
Expressions are compiled when the project is saved (extractors_validate: the one gate, with sentences a
person understands) and again, leniently, when an audit starts its crawl (compile_extractors skips what no
longer compiles). CSS becomes XPath through parsel's translator (so `::text` and `::attr(name)` work);
regexes run on RE2 (linear time on any page) over the page's HTML source, the first group's text when the
expression has a group.

Public interface:
- extractors_validate(value) -> list[dict]: normalised, or ValueError saying what is wrong
- extractors_from_text(text) -> list[dict]: the dashboard's "name | kind | expression [| rule ...]" lines
- extractors_to_text(extractors) -> str: the other way, to fill the form
- compile_extractors(stored) -> list[Extractor]
- extract(extractors, body, *, charset) -> PageExtraction: run in a child process within a per-page CPU budget
  (audits/extraction_sandbox.py), its stored values bounded per page (values_bounded)
- extraction_issues(page, extractors, extraction, settings) -> [Issue]
"""

import json
import logging
import re
from dataclasses import dataclass, field

from audits.checks.registry import CheckSettings, make_issue
from audits.extraction_eval import TRUNCATION_MARK, shown, xpath_for
from audits.extraction_sandbox import sandbox
from audits.limits import (
    EXTRACTED_PAGE_MAX_BYTES,
    EXTRACTION_PAGE_BUDGET_S,
    EXTRACTION_PAGE_WALL_MAX_S,
    EXTRACTOR_STOPS_BEFORE_SKIP,
)
from audits.patterns import compile_pattern

MAX_EXTRACTORS = 20  # per project
EXTRACTOR_NAME_MAX_CHARS = 40  # a column header in the grid and the exports
EXPRESSION_MAX_CHARS = 1000
RULE_VALUE_MAX_CHARS = 500
ISSUE_VALUE_MAX_CHARS = 200  # the value shown as an issue's evidence

KINDS = ("xpath", "css", "regex")
RULES = ("missing", "contains", "matches")
ISSUE_TYPE = "custom-extraction"
TEXT_SEPARATOR = "|"  # between the fields of one extractor line in the dashboard's textarea
# What a page stores for an extractor that did not finish (shown in the grid, the page detail and the exports
# like a value): the one stopped over the page's time budget, and those after it.
STOPPED_MARK = f"[stopped: over the {EXTRACTION_PAGE_BUDGET_S:g} s extraction budget of a page]"
NOT_RUN_MARK = "[not run: an extractor before it spent the page's extraction budget]"
SKIPPED_MARK = f"[not run: stopped on {EXTRACTOR_STOPS_BEFORE_SKIP} earlier pages of this crawl]"
UNAVAILABLE_MARK = "[not run: the extraction process could not start]"

logger = logging.getLogger(__name__)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]*")  # used with fullmatch


@dataclass(frozen=True)
class Extractor:
    name: str
    kind: str
    expression: str
    multiple: bool
    rule: str
    rule_value: str
    rule_regex: object = None  # RE2, for rule "matches"


@dataclass
class PageExtraction:
    """One page's extraction: `values` of the extractors that finished, as found (the rules judge these);
    `stored`, what the page keeps (bounded, with marks); `stopped`, the extractor stopped over the budget."""

    values: dict[str, list[str]] = field(default_factory=dict)
    stored: dict[str, list[str]] = field(default_factory=dict)
    stopped: str = ""
    not_run: list[str] = field(default_factory=list)
    cpu_s: float = 0.0


# --- validation (at save) ----------------------------------------------------------------------------


def _one(raw, index: int, seen: set[str]) -> dict:
    where = f"Extractor {index + 1}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object with name, kind and expression.")
    unknown = set(raw) - {"name", "kind", "expression", "multiple", "rule", "rule_value"}
    if unknown:
        raise ValueError(f"{where} has unknown fields: {', '.join(sorted(unknown))}.")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip()) or len(name.strip()) > EXTRACTOR_NAME_MAX_CHARS:
        raise ValueError(
            f"{where}: a name is 1 to {EXTRACTOR_NAME_MAX_CHARS} letters, digits, spaces, “_”, “.” or “-”."
        )
    name = name.strip()
    if name.lower() in seen:
        raise ValueError(f"Two extractors are named “{name}”: names must differ.")
    seen.add(name.lower())
    where = f"Extractor “{name}”"
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: the kind is one of {', '.join(KINDS)}.")
    expression = raw.get("expression")
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError(f"{where} needs an expression.")
    expression = expression.strip()
    if len(expression) > EXPRESSION_MAX_CHARS:
        raise ValueError(f"{where}: the expression has more than {EXPRESSION_MAX_CHARS} characters.")
    try:
        compile_pattern(expression) if kind == "regex" else xpath_for(kind, expression)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    multiple = raw.get("multiple", False)
    if not isinstance(multiple, bool):
        raise ValueError(f"{where}: multiple is true or false.")
    rule = raw.get("rule") or ""
    if rule not in ("", *RULES):
        raise ValueError(f"{where}: the rule is one of {', '.join(RULES)} (or none).")
    rule_value = raw.get("rule_value") or ""
    if not isinstance(rule_value, str) or len(rule_value) > RULE_VALUE_MAX_CHARS:
        raise ValueError(f"{where}: the rule's value is text of at most {RULE_VALUE_MAX_CHARS} characters.")
    if rule in ("contains", "matches") and not rule_value:
        raise ValueError(f"{where}: the rule “{rule}” needs a value, e.g. “{rule} In stock”.")
    if rule == "matches":
        try:
            compile_pattern(rule_value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if rule == "missing":
        rule_value = ""
    return {"name": name, "kind": kind, "expression": expression, "multiple": multiple, "rule": rule,
            "rule_value": rule_value}  # fmt: skip


def extractors_validate(value) -> list[dict]:
    """The project's extractors normalised (names stripped, rules defaulted), or ValueError with a sentence
    naming the extractor that is wrong: at most MAX_EXTRACTORS, unique names, compiling expressions."""
    if not isinstance(value, list | tuple):
        raise ValueError("Give a list of extractors.")
    if len(value) > MAX_EXTRACTORS:
        raise ValueError(f"At most {MAX_EXTRACTORS} extractors per project.")
    seen: set[str] = set()
    return [_one(raw, index, seen) for index, raw in enumerate(value)]


def extractors_from_text(text: str) -> list[dict]:
    """The dashboard's textarea, one extractor a line: `name | kind | expression` with optional
    `| multiple` and `| missing`, `| contains TEXT` or `| matches REGEX`. Blank lines and lines starting
    with # are skipped. ValueError naming the line when a line cannot be read; extractors_validate checks
    the rest. An expression containing " | " cannot be written here (the API takes any)."""
    extractors = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split(f" {TEXT_SEPARATOR} ")]
        if len(parts) < 3:
            raise ValueError(f"Line {number}: write “name | kind | expression”, e.g. “price | css | .price::text”.")
        name, kind, expression, *options = parts
        extractor = {"name": name, "kind": kind.lower(), "expression": expression, "multiple": False}
        for option in options:
            word, _, rest = option.partition(" ")
            word = word.lower()
            if word == "multiple" and not rest:
                extractor["multiple"] = True
            elif word in RULES and "rule" not in extractor:
                extractor["rule"], extractor["rule_value"] = word, rest.strip()
            else:
                raise ValueError(
                    f"Line {number}: “{shown(option)}” is not an option (multiple, missing, contains TEXT, "
                    "matches REGEX)."
                )
        extractors.append(extractor)
    return extractors


def extractors_to_text(extractors) -> str:
    lines = []
    for extractor in extractors or []:
        parts = [extractor.get("name", ""), extractor.get("kind", ""), extractor.get("expression", "")]
        if extractor.get("multiple"):
            parts.append("multiple")
        if extractor.get("rule"):
            parts.append(f"{extractor['rule']} {extractor.get('rule_value', '')}".strip())
        lines.append(f" {TEXT_SEPARATOR} ".join(parts))
    return "\n".join(lines)


# --- at crawl time -----------------------------------------------------------------------------------


def compile_extractors(stored) -> list[Extractor]:
    """An audit's extractors, their expressions checked; one that no longer compiles (saved before a rule
    changed) is skipped, like a stored include pattern RE2 refuses. The expressions themselves are compiled
    again where they run (the sandbox's child)."""
    kept = []
    for raw in (stored or [])[:MAX_EXTRACTORS]:
        try:
            clean = _one(raw, 0, set())
        except ValueError:
            continue
        kept.append(
            Extractor(**clean, rule_regex=compile_pattern(clean["rule_value"]) if clean["rule"] == "matches" else None)
        )
    return kept


def extract(
    extractors: list[Extractor],
    body: bytes,
    *,
    charset: str | None = None,
    budget_s: float = EXTRACTION_PAGE_BUDGET_S,
    skip: frozenset[str] = frozenset(),
) -> PageExtraction:
    """One page's extraction, in the sandbox's child process: all extractors together get `budget_s` of CPU
    time on the page. The one running when it is spent is stopped (its stored value: STOPPED_MARK) and those
    after it are not run (NOT_RUN_MARK); the page and the crawl go on. Extractors named in `skip` (stopped on
    too many pages already: CrawlScope.extractors_skipped) are not run (SKIPPED_MARK). At most
    VALUES_PER_EXTRACTOR_MAX values of VALUE_MAX_CHARS each per extractor, and EXTRACTED_PAGE_MAX_BYTES stored
    per page (values_bounded)."""
    if not extractors or not body:
        return PageExtraction()
    active = [e for e in extractors if e.name not in skip]
    out = PageExtraction()
    if active:
        try:
            result = sandbox().run(
                [(e.kind, e.expression, e.multiple) for e in active],
                body,
                charset=charset,
                budget_s=budget_s,
                wall_max_s=max(budget_s, EXTRACTION_PAGE_WALL_MAX_S),
            )
        except (OSError, RuntimeError):  # no process to spare (fork refused, out of memory): the page goes on
            logger.exception("custom extraction could not run")
            return PageExtraction(stored={e.name: [UNAVAILABLE_MARK] for e in extractors})
        out.cpu_s = result.cpu_s
        out.values = {e.name: values for e, values in zip(active, result.values, strict=False)}
        if result.stopped is not None:
            out.stopped = active[result.stopped].name
            out.not_run = [e.name for e in active[result.stopped + 1 :]]
    marks = {name: [SKIPPED_MARK] for name in skip} | {name: [NOT_RUN_MARK] for name in out.not_run}
    if out.stopped:
        marks[out.stopped] = [STOPPED_MARK]
    out.stored = values_bounded({e.name: out.values.get(e.name) or marks.get(e.name, []) for e in extractors})
    return out


def _size(value) -> int:
    """Bytes of `value` as stored and served: JSON, UTF-8."""
    return len(json.dumps(value, ensure_ascii=False).encode())


def _cut_to_bytes(text: str, max_bytes: int) -> str:
    """`text`'s longest start that, with TRUNCATION_MARK, takes at most max_bytes as a JSON string ("" if none)."""
    low, high = 0, len(text)  # bisect on the characters kept: a character takes 1 to 12 bytes in JSON
    while low < high:
        middle = (low + high + 1) // 2
        if _size(text[:middle] + TRUNCATION_MARK) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    return text[:low] + TRUNCATION_MARK if low else ""


def _list_within(values: list[str], max_bytes: int) -> list[str]:
    """The list's first values within max_bytes (as JSON); where it was cut, the last value ends with
    TRUNCATION_MARK (or is the mark alone)."""
    if _size(values) <= max_bytes:
        return values
    kept: list[str] = []
    for value in values:
        if _size([*kept, value, TRUNCATION_MARK]) > max_bytes:  # keep room to mark the cut that is coming
            break
        kept.append(value)
    room = max_bytes - _size([*kept, ""]) + 2  # bytes one more JSON string may take, its quotes included
    cut = _cut_to_bytes(values[len(kept)], room) or TRUNCATION_MARK
    return [*kept, cut] if _size(cut) <= room else kept


def values_bounded(extracted: dict[str, list[str]], max_bytes: int = EXTRACTED_PAGE_MAX_BYTES) -> dict:
    """`extracted` within max_bytes (as JSON, UTF-8), shared fairly: an extractor whose values fit in an equal
    share keeps them all and leaves the rest to the others (max-min fairness), a larger one keeps its first
    values and a visible TRUNCATION_MARK where it was cut."""
    if _size(extracted) <= max_bytes:
        return extracted
    names = list(extracted)
    left = max_bytes - _size({name: [] for name in names})
    sizes = {name: _size(extracted[name]) - 2 for name in names}  # the list's content, without its brackets
    shares: dict[str, int] = {}
    for name in sorted(names, key=lambda n: sizes[n]):
        fair = left // (len(names) - len(shares))
        shares[name] = min(sizes[name], fair)
        left -= shares[name]
    bounded = {name: _list_within(extracted[name], shares[name] + 2) for name in names}
    return bounded


def _broken_rule(extractor: Extractor, values: list[str]) -> str | None:
    """Why the page breaks the extractor's rule (the value shown), or None when it keeps it."""
    if extractor.rule == "missing":
        return "(nothing found)" if not values else None
    if extractor.rule == "contains":
        return None if any(extractor.rule_value in value for value in values) else (values[0] if values else "")
    if extractor.rule == "matches":
        return None if any(extractor.rule_regex.search(value) for value in values) else (values[0] if values else "")
    return None


def extraction_issues(page, extractors: list[Extractor], extraction: PageExtraction, settings: CheckSettings) -> list:
    """One `custom-extraction` issue for a page breaking one or more extractor rules: "missing" fires when
    nothing was found, "contains TEXT" when no value contains TEXT, "matches REGEX" when no value matches.
    Judged on the values as found (not as cut for storage); an extractor that did not finish judges nothing."""
    findings = []
    for extractor in extractors:
        if not extractor.rule or extractor.name not in extraction.values:
            continue
        shown = _broken_rule(extractor, extraction.values[extractor.name])
        if shown is not None:
            rule = f"{extractor.rule} {extractor.rule_value}".strip()
            findings.append({"extractor": extractor.name, "rule": rule, "value": shown[:ISSUE_VALUE_MAX_CHARS]})
    if not findings:
        return []
    issue = make_issue(page.audit_id, ISSUE_TYPE, page=page, details={"findings": findings}, settings=settings)
    return [issue] if issue is not None else []
