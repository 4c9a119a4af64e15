"""The crawl's two hottest text loops in C: `native.words` (crawler.words.words_of) and `native.minhash` (the
minima of audits.checks.content.text_signature), built in place by `make install` (`python -m
crawler.speedups.build`) from _speedups.c.

`native` is None where the module was not built (no C compiler): the numpy versions run instead and give the same
results, ~0.5 ms more CPU a page (bench/README.md). tests/crawler/test_speedups.py holds the two to each other, as
MarkupSafe does its `_speedups` and its Python fallback."""

try:
    from crawler.speedups import _speedups as native
except ImportError:  # not built: the numpy fallbacks run
    native = None

__all__ = ["native"]
