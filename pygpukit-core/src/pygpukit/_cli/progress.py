"""A progress line on stderr for steps that may take more than a second."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO


class Step:
    """``with Step("matmul", 1, 4): ...`` prints "[1/4] matmul ..." and how long it took.

    On a terminal a spinner turns while the step runs longer than a second; elsewhere
    (pipes, CI logs) only the start and end are written, so logs stay clean.
    """

    def __init__(self, label: str, index: int, total: int, stream: TextIO | None = None) -> None:
        self.text = f"[{index}/{total}] {label} ..."
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.start = 0.0

    def __enter__(self) -> Step:
        self.start = time.perf_counter()
        self.stream.write(self.text)
        self.stream.flush()
        if self.tty:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def _spin(self) -> None:
        frames = "|/-\\"
        k = 0
        while not self._done.wait(0.1):
            if time.perf_counter() - self.start > 1.0:
                self.stream.write(f"\r{self.text} {frames[k % 4]}")
                self.stream.flush()
                k += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        took = time.perf_counter() - self.start
        end = "failed" if kind is not None else "done"
        prefix = f"\r{self.text}" if self.tty else ""
        self.stream.write(f"{prefix} {end} ({took:.1f} s)\n")
        self.stream.flush()
