"""The issue catalogue: page checks (run as each batch is persisted) and site checks (run in finalize).

Public API used by the pipeline:
- CheckSettings.for_audit(audit): thresholds, severities and disabled checks with project overrides.
- page_issues(page, data, result, settings) -> list[Issue]: unsaved Issue rows for one fetched page.
- run_site_checks(audit) -> None: set-based site checks, idempotent.
- health_score(audit_id) -> (score or None, pages counted); HEALTH_FORMULA says how, for display.
- validate_overrides(dict) -> dict: the strict check of a project's overrides (ValueError when wrong).
"""

from audits.checks.page import PAGE_CHECK_TYPES, page_issues
from audits.checks.registry import CHECKS, CHECKS_BY_TYPE, CheckSettings, CheckSpec, make_issue, validate_overrides
from audits.checks.score import HEALTH_FORMULA, health_score
from audits.checks.site import SITE_CHECK_TYPES, run_site_checks

__all__ = [
    "CHECKS",
    "CHECKS_BY_TYPE",
    "CheckSettings",
    "CheckSpec",
    "HEALTH_FORMULA",
    "PAGE_CHECK_TYPES",
    "SITE_CHECK_TYPES",
    "health_score",
    "make_issue",
    "page_issues",
    "run_site_checks",
    "validate_overrides",
]
