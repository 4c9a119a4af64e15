"""HTML -> PageData: everything the checks and the frontier need from one page, as plain Python.

- document.py: parse_document(body, charset) -> ParsedDocument, the body decoded and parsed once (also what
  custom extraction reads, audits.extraction_eval)
- page.py: parse_html(body, url) -> PageData, the steps that read the tree; parse_link_header
- markers.py: tree_markers(root), what several steps start from (main elements, app roots, microdata/RDFa), in
  one walk
- text.py: the visible and main text in one walk of the tree; excerpt
- data.py: PageData, Link, AnchorUse
"""

from crawler.parse.data import AnchorUse, Link, PageData
from crawler.parse.document import ParsedDocument, parse_document
from crawler.parse.page import parse_html, parse_link_header
from crawler.parse.text import excerpt

__all__ = [
    "AnchorUse", "Link", "PageData", "ParsedDocument", "excerpt", "parse_document", "parse_html", "parse_link_header",
]  # fmt: skip
