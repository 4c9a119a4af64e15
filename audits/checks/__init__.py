"""The issue catalogue: page checks (run as each batch is persisted) and site checks (run in finalize).

Public API used by the pipeline:
- CheckSettings.for_audit(audit): thresholds, severities and disabled checks with project overrides.
- page_issues(page, data, result, settings) -> list[Issue]: unsaved Issue rows for one fetched page.
- run_site_checks(audit) -> None: set-based site checks, idempotent.
- health_score(audit_id) -> (score or None, pages counted).
"""

from audits.checks.page import PAGE_CHECK_TYPES, page_issues
from audits.checks.registry import CheckSettings
from audits.checks.score import health_score
from audits.checks.site import run_site_checks

__all__ = ["CheckSettings", "PAGE_CHECK_TYPES", "page_issues", "run_site_checks", "health_score"]
