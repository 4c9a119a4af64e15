"""The issue catalogue: page checks (run as each batch is persisted) and site checks (run in finalize).

Public API used by the pipeline:
- CheckSettings.for_audit(audit): thresholds, severities and disabled checks with project overrides.
- validate_overrides(dict) -> dict: the strict check of a project's overrides (ValueError when wrong).
- health_score(audit_id) -> (score or None, pages counted); score_breakdown(audit=, pages=) -> ScoreBreakdown;
  SCORE_FORMULA_WORDS says how, in words, for display (audits.checks.score).
- audits.checks.page: page_issues(page, data, result, settings) -> list[Issue], PAGE_CHECK_TYPES.
- audits.checks.site: run_site_checks(audit) -> None (set-based, idempotent), SITE_CHECK_TYPES.

This package imports only the light modules (the registry and the score): a process that only reads the
catalogue (the CLI, the web) does not load the checks' parsers, fetcher and numpy (~0.2 s of every start,
tests/audits/test_cli_imports.py). The page and site checks are imported from their own modules.
"""

from audits.checks.registry import CHECKS, CHECKS_BY_TYPE, CheckSettings, CheckSpec, make_issue, validate_overrides
from audits.checks.score import SCORE_FORMULA_WORDS, ScoreBreakdown, health_score, score_breakdown

__all__ = [
    "CHECKS",
    "CHECKS_BY_TYPE",
    "SCORE_FORMULA_WORDS",
    "CheckSettings",
    "CheckSpec",
    "ScoreBreakdown",
    "health_score",
    "make_issue",
    "score_breakdown",
    "validate_overrides",
]
