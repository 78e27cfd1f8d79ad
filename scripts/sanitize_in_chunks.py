"""compute-sanitizer over the GPU tests, one sanitized pytest process per chunk of tests.

pytest-xdist under the sanitizer stalls: given `-n 12`/`-n 14` and a list of files, or the
directory with `--ignore=`, its workers came up and then collected nothing for 470-500 s
(four device calls over two sessions). Plain pytest processes, each under its own
sanitizer, run at once, and the chunks spread the slow files over the cores. Every test
of the selection runs once: node ids are collected first (without the sanitizer), cut
into chunks of at most `--chunk` tests within one file, and handed to pytest as an
`@file` argument.

    python scripts/sanitize_in_chunks.py --tool racecheck --jobs 12 --out /tmp/race
    python scripts/sanitize_in_chunks.py --tool memcheck --budget 480 tests/cuda/gpu

The tool's flags are those of scripts/device_round.sh: memcheck does not report failing
API calls (the tests provoke them on purpose); racecheck runs with cuBLASLt off, because
it cannot follow the asynchronous barriers of cuBLASLt's sm90 kernels and a kernel filter
that leaves them out crashes it. Exit status 0 only when every chunk ran, every test
passed or skipped, and every sanitizer summary reports 0 errors (0 hazards).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

# the tool's own flags, and whether cuBLASLt stays on under it
TOOLS: dict[str, tuple[list[str], str]] = {
    "memcheck": (["--report-api-errors", "no"], "1"),
    "racecheck": ([], "0"),
}
# "ERROR SUMMARY: 0 errors" (memcheck) or "RACECHECK SUMMARY: 0 hazards displayed
# (0 errors, 0 warnings)" (racecheck): the first number is what the tool found
SUMMARY = re.compile(r"(ERROR|RACECHECK) SUMMARY: (\d+) (errors?|hazards?)")
OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b")


@dataclass
class Chunk:
    index: int
    ids: list[str]
    rc: int | None = None  # None: not started before the budget ran out
    found: int | None = None  # the sanitizer's count; None: no summary line
    outcome: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        bad = sum(n for k, n in self.outcome.items() if k in ("failed", "error", "errors"))
        return self.rc == 0 and self.found == 0 and bad == 0

    def describe(self) -> str:
        if self.rc is None:
            return "not run: the budget ran out first"
        tests = ", ".join(f"{n} {k}" for k, n in self.outcome.items()) or "no pytest summary"
        found = "no sanitizer summary" if self.found is None else f"{self.found} found"
        return f"rc {self.rc}, {tests}, {found}, {self.seconds:.0f} s"


def collect(python: str, paths: list[str], marks: str) -> list[str]:
    """The node ids pytest would run for `paths` under `-m marks`, in its order."""
    # ids relative to here, where the chunks run
    cmd = [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
           f"--rootdir={os.getcwd()}", "-m", marks, *paths]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 5):  # 5: nothing collected
        sys.exit(f"collecting {paths} failed (rc {done.returncode}):\n{done.stdout[-2000:]}"
                 f"{done.stderr[-2000:]}")  # fmt: skip
    return [line.strip() for line in done.stdout.splitlines() if "::" in line]


def cut(ids: list[str], size: int, first: int = 0) -> list[Chunk]:
    """Chunks of at most `size` ids, each from one file, files in sorted order, numbered
    from `first`."""
    by_file: dict[str, list[str]] = defaultdict(list)
    for node in ids:
        by_file[node.split("::", 1)[0]].append(node)
    chunks: list[Chunk] = []
    for name in sorted(by_file):
        got = by_file[name]
        for start in range(0, len(got), size):
            chunks.append(Chunk(first + len(chunks), got[start : start + size]))
    return chunks


def run_chunk(chunk: Chunk, args: argparse.Namespace, deadline: float) -> Chunk:
    left = deadline - time.monotonic()
    if left <= 0:
        return chunk
    flags, cublaslt = TOOLS[args.tool]
    listing = args.out / f"chunk_{chunk.index:03d}.txt"
    listing.write_text("\n".join(chunk.ids) + "\n")
    # host backtraces stay off: collecting them holds Python frames (and the arrays in them)
    # alive, which the pool-baseline fixture reports as leaks; device backtraces still point
    # at the faulting kernel line. Child processes the tests start are checked too.
    cmd = [args.sanitizer, "--tool", args.tool, *flags, "--show-backtrace", "device",
           "--target-processes", "all", "--print-limit", "50", "--error-exitcode", "3",
           args.python, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
           "-rfE", f"--rootdir={os.getcwd()}", f"@{listing}"]  # fmt: skip
    env = dict(os.environ, PYGPUKIT_UNDER_SANITIZER="1", PYGPUKIT_CUBLASLT=cublaslt)
    start = time.monotonic()
    log = args.out / f"chunk_{chunk.index:03d}.log"
    with log.open("w") as sink:
        # a session of its own: at the budget's end the sanitizer goes with its pytest
        # child, which would otherwise live on holding the GPU
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip
        try:
            chunk.rc = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            chunk.rc = 124
    chunk.seconds = time.monotonic() - start
    text = log.read_text(errors="replace")
    counts = [int(m.group(2)) for m in SUMMARY.finditer(text)]
    chunk.found = sum(counts) if counts else None
    tail = [line for line in text.splitlines() if re.search(r" in [0-9.]+s", line)]
    if tail:
        chunk.outcome = {k: int(n) for n, k in OUTCOME.findall(tail[-1])}
    return chunk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["tests/cuda/gpu"])
    parser.add_argument("--tool", choices=sorted(TOOLS), default="memcheck")
    parser.add_argument("--jobs", type=int, default=12, help="sanitized processes at once")
    parser.add_argument("--chunk", type=int, default=40, help="tests per process, at most")
    parser.add_argument("--budget", type=float, default=1e9,
                        help="seconds; chunks not started by then count as not run")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("/tmp/pgk-sanitize"))
    parser.add_argument("--sanitizer", default="compute-sanitizer")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.chunk < 1:
        parser.error(f"--jobs and --chunk must be at least 1, got {args.jobs} and {args.chunk}")
    deadline = time.monotonic() + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    # tests marked `alone` (timing, the whole device's memory) run after the others, one
    # chunk at a time, as in the device round's pytest
    shared = cut(collect(args.python, args.paths, "not alone"), args.chunk)
    alone = cut(collect(args.python, args.paths, "alone"), args.chunk, first=len(shared))
    chunks = shared + alone
    if not chunks:
        sys.exit(f"no tests collected from {args.paths}")
    print(f"{args.tool}: {sum(len(c.ids) for c in chunks)} tests in {len(chunks)} chunks, "
          f"{args.jobs} at once, then {len(alone)} alone; logs in {args.out}",
          flush=True)  # fmt: skip
    for group, jobs in ((shared, args.jobs), (alone, 1)):
        with ThreadPoolExecutor(jobs) as pool:
            running = [pool.submit(run_chunk, c, args, deadline) for c in group]
            for done in as_completed(running):  # a line per chunk as it ends: the progress
                chunk = done.result()
                mark = "ok  " if chunk.clean else "FAIL"
                first = chunk.ids[0].split("::", 1)[0]
                print(f"{mark} chunk {chunk.index:3d} ({first}, {len(chunk.ids)} tests): "
                      f"{chunk.describe()}", flush=True)  # fmt: skip
    totals: dict[str, int] = defaultdict(int)
    for chunk in chunks:
        for k, n in chunk.outcome.items():
            totals[k] += n
    bad = [c for c in chunks if not c.clean]
    found = sum(c.found or 0 for c in chunks)
    print(f"{args.tool} total: " + ", ".join(f"{n} {k}" for k, n in sorted(totals.items()))
          + f"; {found} found by the sanitizer; {len(chunks) - len(bad)} of {len(chunks)} "
          "chunks clean")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
