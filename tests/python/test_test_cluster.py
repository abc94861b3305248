"""scripts/test-cluster, run as a user runs it, on stand-in fault tests that
record figures as the real ones do (harness.record_fault): its rounds, its
table and its exit status."""

import os
import re
import subprocess
import sys
import textwrap

from harness import REPO

SCRIPT = REPO / "scripts" / "test-cluster"

STAND_IN = textwrap.dedent('''
    import pathlib
    import sys

    sys.path.insert(0, {tests!r})
    from harness import record_fault

    ROUNDS = pathlib.Path({counter!r})


    def test_a_fault(record_property):
        n = len(ROUNDS.read_text()) + 1 if ROUNDS.exists() else 1
        ROUNDS.write_text("x" * n)
        record_fault(record_property, "a fault", 1.0 + n, 2.0 * n, n, 0, 3)


    def test_another_fault(record_property):
        record_fault(record_property, "another fault", 0.5, None, 2, {lost})


    def test_no_fault():
        assert {passes}
''')


def run(tmp_path, *args, lost=0, passes=True):
    tests = tmp_path / "test_stand_in.py"
    tests.write_text(STAND_IN.format(tests=str(REPO / "tests" / "python"), counter=str(tmp_path / "rounds"),
                                     lost=lost, passes=passes))
    done = subprocess.run([sys.executable, str(SCRIPT), "--tests", str(tests), "--keep", str(tmp_path / "rounds-out"), *args],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, LIMELIGHT_BIN="/nonexistent"))
    return done.returncode, done.stdout + done.stderr


def test_two_rounds_give_p50_and_max_per_fault(tmp_path):
    code, out = run(tmp_path, "--rounds", "2")
    assert code == 0, out
    assert "round 1: 3 passed, 0 failed" in out and "round 2: 3 passed, 0 failed" in out, out
    # Round 1: 2.0 s and 2.0 s, resent 1; round 2: 3.0 s and 4.0 s, resent 2.
    assert "| a fault | 2 | 2.50 / 3.00 s | 3.00 / 4.00 s | 0 | 1-2 | 3 |" in out, out
    assert "| another fault | 2 | 0.50 / 0.50 s | - | 0 | 2 | - |" in out, out
    # --summarise reads the kept files again.
    again = subprocess.run([sys.executable, str(SCRIPT), "--summarise", str(tmp_path / "rounds-out/round-1.xml")],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "| a fault | 1 | 2.00 / 2.00 s | 2.00 / 2.00 s | 0 | 1 | 3 |" in again.stdout, again.stdout


def test_an_item_lost_or_a_failed_test_fails_the_run(tmp_path):
    code, out = run(tmp_path, "--rounds", "1", lost=1, passes=False)
    assert code == 1, out
    assert "| another fault | 1 | 0.50 / 0.50 s | - | 1 | 2 | - |" in out and "LOST 1 acknowledged items" in out, out
    assert "FAILED round 1: test_stand_in::test_no_fault" in out, out


def test_scripts_test_runs_every_fault_test_once():
    """scripts/test leaves out of its Python suite exactly the files it runs
    through scripts/test-cluster, and each exists."""
    ignored = re.findall(r"--ignore=(\S+)", (REPO / "scripts" / "test").read_text())
    listed = re.search(r"^TESTS = \[(.*?)\]", SCRIPT.read_text(), re.M | re.S).group(1)
    tests = re.findall(r'"([^"]+)"', listed)
    assert sorted(ignored) == sorted(tests) and len(tests) == 4
    assert all((REPO / t).is_file() for t in tests)
    assert "scripts/test-cluster --rounds 1" in (REPO / "scripts" / "test").read_text()
