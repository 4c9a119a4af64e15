"""Custom extraction's evaluation: an extractor's expression compiled and read from a page's HTML, one extractor
at a time. Free of Django, because it runs in the extraction sandbox's child process (audits/extraction_sandbox.py)
as well as where a project's expressions are checked at save (audits/extraction.py)."""

import functools
import re
from collections.abc import Iterator

from lxml import etree

from audits.patterns import compile_pattern

VALUES_PER_EXTRACTOR_MAX = 20  # values stored per page and extractor (multiple=true)
VALUE_MAX_CHARS = 1000  # characters per value, the truncation mark included
TRUNCATION_MARK = "…[truncated]"  # ends a value that was cut (here or by the page's bound, audits/extraction.py)

_SPACES = re.compile(r"\s+")


@functools.cache
def _css_translator():
    """parsel's CSS-to-XPath translator, made on first use: parsel (with jmespath and cssselect, ~10 MiB) is only
    loaded in processes that compile a CSS extractor, not in every crawl worker."""
    # why: deferred so a worker whose projects have no CSS extractor never loads parsel
    from parsel.csstranslator import HTMLTranslator

    return HTMLTranslator()


def shown(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def xpath_for(kind: str, expression: str) -> etree.XPath:
    """The compiled XPath of an xpath or css extractor, or ValueError with a sentence."""
    if kind == "css":
        try:
            expression = _css_translator().css_to_xpath(expression)
        except Exception as exc:  # cssselect's SelectorError and its parse errors have no common public base
            raise ValueError(f"“{shown(expression)}” is not a valid CSS selector ({exc}).") from None
    try:
        return etree.XPath(expression, smart_strings=False)
    except etree.XPathSyntaxError as exc:
        raise ValueError(f"“{shown(expression)}” is not a valid XPath expression ({exc}).") from None


def value_cut(text: str, max_chars: int = VALUE_MAX_CHARS) -> str:
    """`text` when it fits in max_chars, else its start and TRUNCATION_MARK (max_chars in all)."""
    if len(text) <= max_chars:
        return text
    return text[: max(0, max_chars - len(TRUNCATION_MARK))] + TRUNCATION_MARK


class Compiled:
    """One extractor ready to run: (kind, expression, multiple) compiled once per process."""

    def __init__(self, kind: str, expression: str, multiple: bool):
        self.multiple = multiple
        self.xpath = None if kind == "regex" else xpath_for(kind, expression)
        self.regex = compile_pattern(expression) if kind == "regex" else None


@functools.lru_cache(maxsize=256)
def compiled(kind: str, expression: str, multiple: bool) -> Compiled:
    return Compiled(kind, expression, multiple)


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
    return value_cut(_SPACES.sub(" ", text).strip())


def _values(extractor: Compiled, root, source: str | None) -> list[str]:
    limit = VALUES_PER_EXTRACTOR_MAX if extractor.multiple else 1
    values: list[str] = []
    if extractor.regex is not None:
        for match in extractor.regex.finditer(source or ""):
            text = match.group(1) if extractor.regex.groups else match.group(0)
            text = value_cut(_SPACES.sub(" ", text or "").strip())
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


def evaluate(extractors: list[Compiled], body: bytes, *, charset: str | None = None) -> Iterator[list[str]]:
    """Each extractor's values on this page, in order, one at a time (the sandbox reports each as it comes, so
    an expression that runs too long is known by name). The body is decoded as the crawler's parser decodes
    it; the tree is only built when an XPath/CSS extractor needs it, the source text only for a regex."""
    # The parser loads numpy and lxml's HTML parser; checking a project's expressions at save does not need them.
    # why: saving starts light (tests/audits/test_cli_imports.py)
    from crawler.parse import parse_document

    root = source = None
    if body:
        # Decoded and parsed by the crawler's one entry, as the page's fields were (in the sandbox's child process:
        # a tree does not cross the process boundary, so the child builds its own, only when an XPath/CSS
        # extractor needs it).
        document = parse_document(body, charset, tree=any(e.xpath is not None for e in extractors))
        root = document.tree
        if any(e.regex is not None for e in extractors):
            source = document.text()
    for extractor in extractors:
        yield _values(extractor, root, source) if body else []
