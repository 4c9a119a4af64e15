"""User-supplied regular expressions (include/exclude rules, extractors, custom-check rules) compiled for
RE2, a linear-time engine: a pattern like (a+)+$ cannot stall a worker on a long URL or page the way
Python's re would. A leaf module: scope, projects and extraction all use it.
"""

import re

import re2

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the person's mistake, not an error for the worker log
_BACKREFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")
_LOOKAROUND = re.compile(r"invalid perl operator: \(\?<?[=!]")


def compile_pattern(pattern: str):
    """`pattern` compiled for RE2, matched with .search() on a URL as re.search would. ValueError, with a
    sentence a person understands, when it is not a valid regular expression or needs backtracking."""
    if not isinstance(pattern, str):
        raise ValueError("A pattern must be text.")
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    if _BACKREFERENCE.search(reason) or "(?P=" in pattern:  # RE2 only says "invalid perl operator: (?P"
        raise ValueError(
            f"“{shown}” uses a backreference (\\1 or (?P=name)), which is not supported: patterns run on a "
            "linear-time engine so that no URL can make them slow. Write the repeated part out instead."
        )
    if _LOOKAROUND.search(reason):
        raise ValueError(
            f"“{shown}” uses a lookahead or lookbehind ((?=, (?!, (?<=, (?<!), which is not supported: "
            "patterns run on a linear-time engine. Use an include rule together with an exclude rule instead."
        )
    raise ValueError(f"“{shown}” is not a valid regular expression ({reason}).")
