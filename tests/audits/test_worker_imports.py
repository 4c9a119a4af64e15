"""A crawl worker does not load what only rare pages or finalize need (issue 15: worker memory): datasketch and
the scipy its LSH imports (finalize no longer needs them either), extruct and the rdflib/bs4/html5lib/mf2py it
brings, parsel (CSS extractors only). Checked in a fresh interpreter, since this test process has long imported
them all."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RARE_PATH_MODULES = ("datasketch", "scipy", "extruct", "rdflib", "bs4", "html5lib", "mf2py", "parsel", "jmespath")

SCRIPT = """
import json, sys
import django
django.setup()
import config.celery, audits.tasks
from audits.checks.content import lsh_bands, text_signature
from crawler.parse import parse_html

rare = %r
loaded = {}
plain = b"<html><body><h1>Title</h1><p>Some words of text here</p><a href='/x'>x</a></body></html>"
data = parse_html(plain, "https://example.com/")
text_signature(data.main_text)
loaded["crawl"] = [m for m in rare if m in sys.modules]
micro = (b"<html><body><div itemscope itemtype='https://schema.org/Product'>"
         b"<span itemprop='name'>Widget</span></div></body></html>")
items = parse_html(micro, "https://example.com/").structured_items
loaded["microdata"] = [m for m in rare if m in sys.modules]
lsh_bands(0.9)
loaded["finalize"] = [m for m in rare if m in sys.modules]
print(json.dumps({"loaded": loaded, "items": items}))
"""


def _run() -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT % (RARE_PATH_MODULES,)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_crawl_worker_loads_no_rare_path_library_until_a_page_or_finalize_needs_it():
    result = _run()
    assert result["loaded"]["crawl"] == []
    # The deferred imports still work where they are needed.
    assert result["items"] == [{"syntax": "microdata", "type": "Product", "properties": ["name"]}]
    assert "extruct" in result["loaded"]["microdata"] and "datasketch" not in result["loaded"]["microdata"]
    # Finalize's LSH bands are worked out without datasketch's scipy (audits.checks.content._optimal_bands).
    assert not {"datasketch", "scipy"} & set(result["loaded"]["finalize"])
