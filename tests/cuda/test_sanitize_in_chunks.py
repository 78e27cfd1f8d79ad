"""scripts/sanitize_in_chunks.py, run end to end on a small test folder made here, with a
stand-in for compute-sanitizer (it checks the flags it is given, runs the command, and
prints the summary line the real tool prints, with the count the test asks for). No GPU:
what is checked is the runner — every test runs once, in chunks of one file each, under
the tool's environment — and that any failure, finding or chunk left unrun fails it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sanitize_in_chunks.py"

FAKE_SANITIZER = """\
import os, subprocess, sys
args = sys.argv[1:]
assert args[:2] == ["--tool", os.environ["EXPECT_TOOL"]], args
with_values = {"--tool", "--report-api-errors", "--show-backtrace", "--target-processes",
               "--print-limit", "--error-exitcode"}
seen = []
while args[0].startswith("--"):
    seen.append(args[0])
    args = args[2:] if seen[-1] in with_values else args[1:]
assert ("--report-api-errors" in seen) == (os.environ["EXPECT_TOOL"] == "memcheck"), seen
assert "--target-processes" in seen, seen
rc = subprocess.run(args).returncode
found = int(os.environ.get("FAKE_FOUND", "0"))
if os.environ["EXPECT_TOOL"] == "memcheck":
    print(f"========= ERROR SUMMARY: {found} errors")
else:
    print(f"========= RACECHECK SUMMARY: {found} hazards displayed ({found} errors, 0 warnings)")
sys.exit(3 if found else rc)
"""

TESTS = {
    "test_first.py": """
        import os
        def test_env_is_the_tools():
            assert os.environ["PYGPUKIT_UNDER_SANITIZER"] == "1"
            assert os.environ["PYGPUKIT_CUBLASLT"] == os.environ["EXPECT_CUBLASLT"]
        def test_b(): pass
        def test_c(): pass
    """,
    "test_second.py": """
        import os, pytest
        @pytest.mark.parametrize("k", [1, 2])
        def test_d(k):
            assert str(k) != os.environ.get("FAIL_PARAM")
    """,
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    tests = tmp_path / "tiny_tests"
    tests.mkdir()
    for name, body in TESTS.items():
        (tests / name).write_text(textwrap.dedent(body))
    fake = tmp_path / "fake-sanitizer"
    fake.write_text(f"#!{sys.executable}\n{FAKE_SANITIZER}")
    fake.chmod(0o755)
    return tmp_path


def run(folder: Path, tool: str, *extra: str, **env: str) -> tuple[int, str]:
    cmd = [sys.executable, str(SCRIPT), "--tool", tool, "--jobs", "2", "--chunk", "2",
           "--sanitizer", str(folder / "fake-sanitizer"), "--out", str(folder / "logs"),
           *extra, str(folder / "tiny_tests")]  # fmt: skip
    full_env = dict(os.environ, EXPECT_TOOL=tool,
                    EXPECT_CUBLASLT="1" if tool == "memcheck" else "0", **env)  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=folder, env=full_env,
                          timeout=300, check=False)  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_a_clean_run_runs_every_test_once_in_chunks_of_one_file(folder: Path) -> None:
    rc, out = run(folder, "memcheck")
    assert rc == 0, out
    assert "memcheck: 5 tests in 3 chunks" in out
    assert "memcheck total: 5 passed; 0 found by the sanitizer; 3 of 3 chunks clean" in out
    # test_first.py holds 3 tests: chunks of 2 and 1; test_second.py's 2 make a third
    sizes = sorted(re.findall(r"\(\S*?(test_\w+\.py), (\d) tests\)", out))
    assert sizes == [("test_first.py", "1"), ("test_first.py", "2"), ("test_second.py", "2")]


def test_findings_and_failing_tests_fail_the_run(folder: Path) -> None:
    rc, out = run(folder, "racecheck", FAKE_FOUND="2")
    assert rc == 1, out
    assert "6 found by the sanitizer; 0 of 3 chunks clean" in out
    rc, out = run(folder, "racecheck", FAIL_PARAM="2")
    assert rc == 1, out
    assert "1 failed, 4 passed; 0 found by the sanitizer; 2 of 3 chunks clean" in out
    assert re.search(r"FAIL chunk +2 \(\S*test_second.py, 2 tests\): rc 1, 1 failed", out)


def test_chunks_left_by_the_budget_fail_the_run(folder: Path) -> None:
    rc, out = run(folder, "memcheck", "--budget", "0")
    assert rc == 1, out
    assert out.count("not run: the budget ran out first") == 3
    assert "0 of 3 chunks clean" in out


def test_bad_arguments_are_named(folder: Path) -> None:
    rc, out = run(folder, "memcheck", "--jobs", "0")
    assert rc == 2
    assert "--jobs and --chunk must be at least 1, got 0 and 2" in out


def test_a_chunk_over_the_budget_is_killed_with_its_tests(folder: Path) -> None:
    """At the budget's end a running chunk's whole process group goes: no pytest process is
    left holding the GPU."""
    pid_file = folder / "sleeper.pid"
    (folder / "tiny_tests" / "test_third.py").write_text(textwrap.dedent(f"""
        import os, time
        def test_sleeps():
            open({str(pid_file)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
    """))  # fmt: skip
    rc, out = run(folder, "memcheck", "--budget", "20")
    assert rc == 1, out
    assert re.search(r"FAIL chunk +3 \(\S*test_third.py, 1 tests\): rc 124", out), out
    pid = int(pid_file.read_text())
    stat = Path(f"/proc/{pid}/stat")
    state = stat.read_text().rsplit(")", 1)[1].split()[0] if stat.exists() else "gone"
    assert state in ("gone", "Z", "X"), f"pytest {pid} still running: {state}"


def test_tests_marked_alone_run_after_all_the_others(folder: Path) -> None:
    """An `alone` test (the whole device's memory, timing) starts only once every other
    chunk has ended: each test records its end, and the alone one checks them all."""
    tests = folder / "tiny_tests"
    ends = folder / "ends"
    ends.mkdir()
    (tests / "conftest.py").write_text(textwrap.dedent(f"""
        import os, time, pytest
        def pytest_configure(config):
            config.addinivalue_line("markers", "alone: runs with nothing beside it")
        @pytest.fixture(autouse=True)
        def record_end(request):
            time.sleep(0.5)  # so a chunk beside the alone one would still be running
            yield
            open(os.path.join({str(ends)!r}, request.node.name), "w").close()
    """))  # fmt: skip
    (tests / "test_by_itself.py").write_text(textwrap.dedent(f"""
        import os, pytest
        @pytest.mark.alone
        def test_nothing_else_runs():
            assert len(os.listdir({str(ends)!r})) == 5
    """))  # fmt: skip
    rc, out = run(folder, "memcheck")
    assert rc == 0, out
    assert "memcheck: 6 tests in 4 chunks, 2 at once, then 1 alone" in out
    assert re.search(r"ok   chunk +3 \(\S*test_by_itself.py, 1 tests\)", out), out
