"""Make the repository root importable when these tests run on their own (pytest-django adds it in the
full suite; `tests/bench/test_finalize_bench.py` needs the database, the others do not)."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
