"""bench.cpu counts CPU seconds, not wall time: a child that burns the CPU is counted, one that sleeps is not, and a
process tree's count includes its children, alive or already waited for."""

import subprocess
import sys

import pytest

from bench.cpu import CpuMeter

BURN_S = 0.4  # CPU seconds the child process spends in a busy loop
BURN = f"import time\nend = time.process_time() + {BURN_S}\nwhile time.process_time() < end: pass"
SLEEP = "import time; time.sleep(0.4)"


def test_waited_children_are_counted_by_cpu_not_by_wall_time():
    with CpuMeter() as burning:
        subprocess.run([sys.executable, "-c", BURN], check=True)
    with CpuMeter() as sleeping:
        subprocess.run([sys.executable, "-c", SLEEP], check=True)
    assert burning.use.own_s >= BURN_S
    assert burning.use.machine_s >= 0.9 * burning.use.own_s  # the machine's count holds the child's
    assert sleeping.use.own_s < BURN_S / 2  # the interpreter's start-up, not the sleep


def test_a_process_tree_counts_its_children():
    # A parent that starts a burning child when told and waits for it: the child's CPU reaches the tree's count
    # through the parent's waited-children times, as a replaced Celery pool process does.
    parent = (
        f"import subprocess, sys; input(); subprocess.run([sys.executable, '-c', {BURN!r}], check=True); "
        "print('done', flush=True); input()"
    )
    proc = subprocess.Popen([sys.executable, "-c", parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        with CpuMeter(proc.pid) as tree:
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "done"
        assert tree.use.own_s >= BURN_S
        assert tree.use.per_page_ms(10) == pytest.approx((tree.use.machine_s * 100, tree.use.own_s * 100))
    finally:
        proc.communicate("\n", timeout=30)
