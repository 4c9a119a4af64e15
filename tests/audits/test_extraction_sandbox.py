"""The extraction sandbox: custom extractors run in a child process whose CPU time on a page is watched; an
expression past the budget is stopped by killing the child (lxml's XPath evaluation is C that no Python timer
interrupts), the next page gets a new child, and a child left alone dies of its own CPU limit."""

import json
import signal
import subprocess
import sys

import psutil
import pytest

from audits.extraction_eval import compiled, evaluate
from audits.extraction_sandbox import _REPO_ROOT, Sandbox, _read_frame, _write_frame

# Cost grows with the cube of the elements: ~1 s of CPU at 400 elements, ~8x for each doubling (minutes at 3,000).
CUBIC = "count(//*[count(//*[count(//*) > 0]) > 0])"
BUDGET_S = 0.5


def _page(elements: int) -> bytes:
    return ("<html><body>" + "".join(f"<p class=x>v{i}</p>" for i in range(elements)) + "</body></html>").encode()


@pytest.fixture
def box():
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


def _run(box, specs, body, budget_s=BUDGET_S):
    return box.run(specs, body, charset="utf-8", budget_s=budget_s, wall_max_s=60)


def test_values_come_from_one_long_lived_child(box):
    specs = [("css", "p.x::text", True), ("xpath", "count(//p)", False), ("regex", r"v(\d+)", False)]
    for elements in (3, 30):
        result = _run(box, specs, _page(elements))
        assert result.stopped is None
        assert result.values == [[f"v{i}" for i in range(min(elements, 20))], [str(elements)], ["0"]]
    assert box.starts == 1
    # it reads hostile HTML with a C parser: none of the environment's secrets (database URL, keys) go with it
    assert set(psutil.Process(box._child.pid).environ()) <= {"PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH",
                                                             "OPENBLAS_NUM_THREADS"}  # fmt: skip


def test_an_expression_over_the_budget_is_stopped_with_its_child(box):
    cheap = [("xpath", "count(//p)", False)]
    _run(box, cheap, _page(5))
    child = psutil.Process(box._child.pid)
    specs = [("css", "p.x::text", False), ("xpath", CUBIC, False), ("regex", "v1", False)]
    result = _run(box, specs, _page(3000))
    assert result.values == [["v0"]]  # the one before finished
    assert result.stopped == 1  # the cubic one; the regex after it did not run
    assert result.cpu_s >= BUDGET_S  # it had its budget
    assert not child.is_running()  # really stopped: the process that evaluated it is gone
    # The next page gets a new child, and the same expression finishes where it is cheap.
    small = _run(box, specs, _page(10))
    assert small.stopped is None and small.values == [["v0"], ["12"], ["v1"]]
    assert box.starts == 2


def test_a_child_left_alone_dies_of_its_own_cpu_limit():
    """The backstop when the parent cannot kill it (RLIMIT_CPU at a few budgets, in whole seconds): SIGXCPU."""
    child = subprocess.Popen(
        [sys.executable, "-m", "audits.extraction_sandbox"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        cwd=_REPO_ROOT,
    )  # fmt: skip
    try:
        assert json.loads(_read_frame(child.stdout.fileno())) == {"ready": True}
        _write_frame(child.stdin, json.dumps({"specs": [["xpath", CUBIC, False]], "charset": None,
                                              "cpu_limit_s": 0.2}).encode())  # fmt: skip
        _write_frame(child.stdin, _page(3000))
        child.stdin.flush()
        assert child.wait(timeout=60) == -signal.SIGXCPU
    finally:
        if child.poll() is None:
            child.kill()


def test_evaluate_finds_nothing_on_an_empty_or_unreadable_body():
    extractors = [compiled("xpath", "//p", False), compiled("regex", "x", False)]
    assert list(evaluate(extractors, b"")) == [[], []]
    assert list(evaluate(extractors, b"\xff\xfe\x00", charset="no-such-charset")) == [[], []]
