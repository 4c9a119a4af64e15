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
- extract(extractors, body, *, charset) -> {name: [values]}
- extraction_issues(page, extractors, settings) -> [Issue]
"""

import functools
import re
from dataclasses import dataclass

from lxml import etree

from audits.checks.registry import CheckSettings, make_issue
from audits.patterns import compile_pattern

MAX_EXTRACTORS = 20  # per project
EXTRACTOR_NAME_MAX_CHARS = 40  # a column header in the grid and the exports
EXPRESSION_MAX_CHARS = 1000
RULE_VALUE_MAX_CHARS = 500
VALUES_PER_EXTRACTOR_MAX = 20  # values stored per page and extractor (multiple=true)
VALUE_MAX_CHARS = 1000  # characters per stored value
ISSUE_VALUE_MAX_CHARS = 200  # the value shown as an issue's evidence

KINDS = ("xpath", "css", "regex")
RULES = ("missing", "contains", "matches")
ISSUE_TYPE = "custom-extraction"
TEXT_SEPARATOR = "|"  # between the fields of one extractor line in the dashboard's textarea

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]*")  # used with fullmatch
_SPACES = re.compile(r"\s+")


@functools.cache
def _css_translator():
    """parsel's CSS-to-XPath translator, made on first use: parsel (with jmespath and cssselect, ~10 MiB) is only
    loaded in processes that compile a CSS extractor, not in every crawl worker."""
    # why: deferred so a worker whose projects have no CSS extractor never loads parsel
    from parsel.csstranslator import HTMLTranslator

    return HTMLTranslator()


@dataclass(frozen=True)
class Extractor:
    name: str
    kind: str
    expression: str
    multiple: bool
    rule: str
    rule_value: str
    xpath: etree.XPath | None = None  # xpath and css
    regex: object = None  # RE2, for kind regex
    rule_regex: object = None  # RE2, for rule "matches"


# --- validation (at save) ----------------------------------------------------------------------------


def _xpath_for(kind: str, expression: str) -> etree.XPath:
    if kind == "css":
        try:
            expression = _css_translator().css_to_xpath(expression)
        except Exception as exc:  # cssselect's SelectorError and its parse errors have no common public base
            raise ValueError(f"“{_shown(expression)}” is not a valid CSS selector ({exc}).") from None
    try:
        return etree.XPath(expression, smart_strings=False)
    except etree.XPathSyntaxError as exc:
        raise ValueError(f"“{_shown(expression)}” is not a valid XPath expression ({exc}).") from None


def _shown(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


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
        compile_pattern(expression) if kind == "regex" else _xpath_for(kind, expression)
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
                    f"Line {number}: “{_shown(option)}” is not an option (multiple, missing, contains TEXT, "
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
    """An audit's extractors compiled; one that no longer compiles (saved before a rule changed) is skipped,
    like a stored include pattern RE2 refuses."""
    compiled = []
    for raw in (stored or [])[:MAX_EXTRACTORS]:
        try:
            clean = _one(raw, 0, set())
        except ValueError:
            continue
        kind, expression = clean["kind"], clean["expression"]
        compiled.append(
            Extractor(
                **clean,
                xpath=None if kind == "regex" else _xpath_for(kind, expression),
                regex=compile_pattern(expression) if kind == "regex" else None,
                rule_regex=compile_pattern(clean["rule_value"]) if clean["rule"] == "matches" else None,
            )
        )
    return compiled


def _value_text(result) -> str:
    if isinstance(result, etree._Element):
        if not isinstance(result.tag, str):
            return ""  # a comment or processing instruction
        text = result.text_content() if hasattr(result, "text_content") else "".join(result.itertext())
    elif isinstance(result, bool):
        text = "true" if result else "false"
    elif isinstance(result, float):
        text = str(int(result)) if result.is_integer() else str(result)
    else:
        text = str(result)
    return _SPACES.sub(" ", text).strip()[:VALUE_MAX_CHARS]


def _values(extractor: Extractor, root, source: str | None) -> list[str]:
    limit = VALUES_PER_EXTRACTOR_MAX if extractor.multiple else 1
    values: list[str] = []
    if extractor.regex is not None:
        for match in extractor.regex.finditer(source or ""):
            text = match.group(1) if extractor.regex.groups else match.group(0)
            text = _SPACES.sub(" ", text or "").strip()[:VALUE_MAX_CHARS]
            if text:
                values.append(text)
            if len(values) >= limit:
                break
        return values
    if root is None:
        return values
    try:
        results = extractor.xpath(root)
    except etree.XPathError:  # e.g. an unknown function only found when evaluated
        return values
    for result in results if isinstance(results, list) else [results]:
        text = _value_text(result)
        if text:
            values.append(text)
        if len(values) >= limit:
            break
    return values


def extract(extractors: list[Extractor], body: bytes, *, charset: str | None = None) -> dict[str, list[str]]:
    """{extractor name: its values on this page} (an empty list: nothing found), at most
    VALUES_PER_EXTRACTOR_MAX values of VALUE_MAX_CHARS each. The body is decoded as the crawler's parser
    decodes it; the tree is only built when an XPath/CSS extractor needs it, the source text only for a regex."""
    if not extractors or not body:
        return {}
    # The parser loads numpy and lxml's HTML parser; saving a project's extractors (the CLI, the admin) checks
    # their expressions only. why: those start light (tests/audits/test_cli_imports.py)
    from crawler.parse import _build_tree, _encoding

    root = source = None
    try:
        encoding, start = _encoding(body, charset)
        if any(e.xpath is not None for e in extractors):
            root = _build_tree(body, encoding, start)
        if any(e.regex is not None for e in extractors):
            source = body[start:].decode(encoding, "replace")
    except (ValueError, LookupError, etree.LxmlError):
        pass  # worst case: the extractors find nothing on a page the parser could not read
    return {extractor.name: _values(extractor, root, source) for extractor in extractors}


def _broken_rule(extractor: Extractor, values: list[str]) -> str | None:
    """Why the page breaks the extractor's rule (the value shown), or None when it keeps it."""
    if extractor.rule == "missing":
        return "(nothing found)" if not values else None
    if extractor.rule == "contains":
        return None if any(extractor.rule_value in value for value in values) else (values[0] if values else "")
    if extractor.rule == "matches":
        return None if any(extractor.rule_regex.search(value) for value in values) else (values[0] if values else "")
    return None


def extraction_issues(page, extractors: list[Extractor], settings: CheckSettings) -> list:
    """One `custom-extraction` issue for a page breaking one or more extractor rules: "missing" fires when
    nothing was found, "contains TEXT" when no value contains TEXT, "matches REGEX" when no value matches."""
    findings = []
    for extractor in extractors:
        if not extractor.rule:
            continue
        shown = _broken_rule(extractor, (page.extracted or {}).get(extractor.name, []))
        if shown is not None:
            rule = f"{extractor.rule} {extractor.rule_value}".strip()
            findings.append({"extractor": extractor.name, "rule": rule, "value": shown[:ISSUE_VALUE_MAX_CHARS]})
    if not findings:
        return []
    issue = make_issue(page.audit_id, ISSUE_TYPE, page=page, details={"findings": findings}, settings=settings)
    return [issue] if issue is not None else []
