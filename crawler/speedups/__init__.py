"""The crawl's hottest loops in C, one CPython extension built in place by `make install` (`python -m
crawler.speedups.build`):

- `native.minhash` (minhash.c): the minima of audits.checks.content.text_signature, for its numpy code;
- `native.text_walk` (textwalk.c): crawler.parse.text._walk_text, the visible and main text read from lxml's libxml2
  tree, for the Python iterwalk, and the words split, lower-cased and counted on the way (`native.text_tags` gives
  it the tag lists and the CJK ranges once);
- `native.tree_markers` (treescan.c): crawler.parse.markers' three XPath queries in one walk of that tree;
- `native.links` (links.c): what crawler.parse.page._links reads of each <a> and <area> (href, rel, anchor text),
  for its loop over lxml proxies.

`native` is None where the module was not built (no C compiler): the Python and numpy code runs instead and gives
the same results, ~0.9 ms more CPU a page (bench.pagecpu: 1.3 against 2.2 ms; bench/README.md), and `manage.py
check` warns (sitewarden.W001). tests/crawler/test_speedups.py holds each to the code it stands for, as MarkupSafe
does its `_speedups` and its Python fallback."""

try:
    from crawler.speedups import _speedups as native
except ImportError:  # not built: the numpy fallbacks run
    native = None

__all__ = ["native"]
