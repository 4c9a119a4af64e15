"""`manage.py audit` starts light (issue 15: small sites start fast): handing an audit to the workers loads
neither the checks' parsers, fetcher and numpy nor the crawl's modules. Checked in a fresh interpreter, since
this test process has long imported them all."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CRAWL_ONLY_MODULES = (
    "numpy",
    "audits.checks.page",
    "audits.checks.site",
    "audits.checks.content",
    "audits.pipeline.chunk",
    "audits.pipeline.inline",
)

SCRIPT = """
import json, sys
import django
django.setup()
import audits.management.commands.audit
from audits.checks import CHECKS, validate_overrides
loaded = [m for m in %r if m in sys.modules]
from audits.checks.site import run_site_checks
print(json.dumps({"loaded": loaded, "checks": len(CHECKS), "site": "audits.checks.site" in sys.modules}))
"""


def test_the_audit_command_loads_no_check_or_crawl_module_until_one_is_used():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT % (CRAWL_ONLY_MODULES,)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    assert result["checks"] > 0
    assert result["site"]  # the site checks load when their module is imported
