"""What several steps of the page parse start from, found in one walk of the tree (`tree_markers`): the main
elements (crawler.parse.text.page_text), the elements that may be a JavaScript app's root (`_headings_and_roots`)
and whether microdata or RDFa is on the page (`_microdata_and_rdfa`).

In C where crawler.speedups was built (`native.tree_markers`: one walk of libxml2's nodes, ~0.02 ms a benchmark page);
else, and where the C walk meets an attribute value it does not model, by the three XPath queries it stands for
(~0.17 ms together, each a walk of the whole tree). tests/crawler/test_speedups.py holds the two to each other."""

from dataclasses import dataclass

from crawler.speedups import native

APP_ROOT_IDS = ("root", "app", "__next", "__nuxt", "___gatsby")  # the mount points of React, Vue, Next, Nuxt, Gatsby

# XPath sources, evaluated with root.xpath(): compiled XPath objects are not shared across threads.
# Main elements not inside another. The role=main ones are found from their attribute (`//@role[.='main']/parent::*`):
# libxml2 tests the attribute axis faster than a predicate on every element (`//*[@role='main']`), half the
# query's CPU on the benchmark's pages (0.13 -> 0.065 ms a page); the same elements in the same (document) order.
X_MAIN = (
    "//main[not(ancestor::main)] | //@role[.='main']/parent::*[not(ancestor::main)][not(ancestor::*[@role='main'])]"
)
# The attributes that may make an element an app root; their elements are tested in Python. Selecting attributes
# (`//@id`) costs about half of selecting elements by a predicate (`//*[@id or ...]`, ~115 us on a 40 KB page):
# no predicate evaluated per element.
X_APP_ROOT_MARKERS = "//@id | //@data-reactroot | //@ng-app"
# The attributes microdata and RDFa start from (~45 us).
X_STRUCTURED_MARKERS = "//@itemscope | //@typeof"


@dataclass(frozen=True, slots=True)
class TreeMarkers:
    mains: list  # <main> and role="main" elements not inside another, in document order
    app_roots: list  # elements with an id of APP_ROOT_IDS, data-reactroot or ng-app, in document order, once each
    itemscope: bool  # an itemscope attribute somewhere: microdata
    typeof: bool  # a typeof attribute somewhere: RDFa


def tree_markers(root) -> TreeMarkers:
    if native is not None:
        try:
            return TreeMarkers(*native.tree_markers(root, APP_ROOT_IDS))
        except NotImplementedError:
            pass  # an attribute value holding something else than text: XPath reads it
    return tree_markers_by_xpath(root)


def tree_markers_by_xpath(root) -> TreeMarkers:
    """tree_markers by the XPath queries, where crawler.speedups was not built (and what its tests hold it to)."""
    mains = root.xpath(X_MAIN)
    # An element may carry several markers (and come once per marker).
    candidates = dict.fromkeys(marker.getparent() for marker in root.xpath(X_APP_ROOT_MARKERS))
    app_roots = [
        el
        for el in candidates
        if el.get("id") in APP_ROOT_IDS or el.get("data-reactroot") is not None or el.get("ng-app") is not None
    ]
    structured = {marker.attrname for marker in root.xpath(X_STRUCTURED_MARKERS)}
    return TreeMarkers(mains, app_roots, "itemscope" in structured, "typeof" in structured)
