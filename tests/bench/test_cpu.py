"""bench.cpu counts CPU seconds, not wall time: a child that burns the CPU is counted, one that sleeps is not, and a
process tree's count includes its children, alive or already waited for."""

import os
import subprocess
import sys
import time

import psutil
import pytest
from django.db import connection

from bench.cpu import CpuMeter, postgres_server_pid

BURN_S = 0.4  # CPU seconds the child process spends in a busy loop
BURN = f"import time\nend = time.process_time() + {BURN_S}\nwhile time.process_time() < end: pass"
SLEEP = "import time; time.sleep(0.4)"
# The kernel reports a process's CPU in clock ticks (0.01 s), derived from its exact runtime: a child that burned
# BURN_S may read one tick less, and the sums' float subtraction 0.39999999999999997 for 0.4.
COUNTED_AT_LEAST_S = BURN_S - 1 / os.sysconf("SC_CLK_TCK") - 1e-9


def test_waited_children_are_counted_by_cpu_not_by_wall_time():
    with CpuMeter() as burning:
        subprocess.run([sys.executable, "-c", BURN], check=True)
    with CpuMeter() as sleeping:
        subprocess.run([sys.executable, "-c", SLEEP], check=True)
    assert burning.use.own_s >= COUNTED_AT_LEAST_S
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
        assert tree.use.own_s >= COUNTED_AT_LEAST_S
        assert tree.use.per_page_ms(10) == pytest.approx((tree.use.machine_s * 100, tree.use.own_s * 100))
    finally:
        proc.communicate("\n", timeout=30)


def test_named_parts_count_their_own_tree_and_the_waited_children():
    # A part is measured apart from the main tree: a burning process named as a part is counted there and not as
    # the tree's; the waited part holds a subprocess run inside the span.
    idle = subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE, text=True)
    burner = subprocess.Popen([sys.executable, "-c", f"input()\n{BURN}\ninput()"], stdin=subprocess.PIPE, text=True)
    try:
        with CpuMeter(idle.pid, parts={"burner": burner.pid}, waited_part="cli") as meter:
            burner.stdin.write("\n")
            burner.stdin.flush()
            subprocess.run([sys.executable, "-c", BURN], check=True)
            while sum(psutil.Process(burner.pid).cpu_times()[:2]) < BURN_S * 0.9:  # user + system, as process_time
                time.sleep(0.05)
        parts = meter.use.parts
        assert parts["burner"] >= BURN_S * 0.9
        assert parts["cli"] >= BURN_S
        assert meter.use.own_s < BURN_S / 2
        assert meter.use.parts_per_page_ms(4)["cli"] == pytest.approx(parts["cli"] * 250)
    finally:
        idle.communicate("\n", timeout=30)
        burner.communicate("\n", timeout=30)


@pytest.mark.django_db
def test_the_postgresql_server_pid_is_the_parent_of_a_backend():
    # The test database's own server, reached as the suite reaches it: its backends are the found pid's children.
    db = connection.settings_dict
    conninfo = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    pid = postgres_server_pid(conninfo)
    assert pid == psutil.Process(backend).ppid()
    assert "postgres" in psutil.Process(pid).name()
    assert postgres_server_pid("postgres://nobody@127.0.0.1:1/none") is None  # nothing listens there
