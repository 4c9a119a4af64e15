"""The issue catalogue: page checks (run as each batch is persisted) and site checks (run in finalize).

Public API used by the pipeline:
- CheckSettings.for_audit(audit): thresholds, severities and disabled checks with project overrides.
- page_issues(page, data, result, settings) -> list[Issue]: unsaved Issue rows for one fetched page.
- run_site_checks(audit) -> None: set-based site checks, idempotent.
- health_score(audit_id) -> (score or None, pages counted); score_breakdown(audit=, pages=) -> ScoreBreakdown;
  SCORE_FORMULA_WORDS says how, in words, for display (audits.checks.score).
- validate_overrides(dict) -> dict: the strict check of a project's overrides (ValueError when wrong).

Each name is imported from its module on first use (PEP 562): a process that only reads the catalogue (the
CLI, the web) does not load the checks' parsers, fetcher and numpy (~0.2 s of every start).
"""

import importlib

_SOURCES = {
    "CHECKS": "registry",
    "CHECKS_BY_TYPE": "registry",
    "CheckSettings": "registry",
    "CheckSpec": "registry",
    "make_issue": "registry",
    "validate_overrides": "registry",
    "health_score": "score",
    "score_breakdown": "score",
    "ScoreBreakdown": "score",
    "SCORE_FORMULA_WORDS": "score",
    "PAGE_CHECK_TYPES": "page",
    "page_issues": "page",
    "SITE_CHECK_TYPES": "site",
    "run_site_checks": "site",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SOURCES))
