"""Print the device round's summary: each step's status and time, then tests per file."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [line]
    for k, r in enumerate(rows):
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if k == 0:
            out.append(line)
    out.append(line)
    return "\n".join(out)


def main(steps_path: str, *junit_paths: str) -> int:
    rows = [["step", "status", "seconds", "log"]]
    for line in Path(steps_path).read_text().splitlines():
        name, rc, secs, log = line.split("\t")
        rows.append([name, "ok" if rc == "0" else f"FAIL (rc {rc})", secs, log])
    print(table(rows))
    junits = [Path(p) for p in junit_paths if Path(p).exists()]
    if not junits:
        print("no test results (junit.xml missing)")
        return 1
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    failed: list[str] = []
    cases = [c for j in junits for c in ET.parse(j).getroot().iter("testcase")]
    for case in cases:
        path = case.get("classname", "?").replace(".", "/") + ".py"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
            failed.append(f"{case.get('classname')}::{case.get('name')}")
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        counts[path][outcome] += 1
        counts["TOTAL"][outcome] += 1
    rows = [["tests", "passed", "failed", "skipped"]]
    for path in [*sorted(p for p in counts if p != "TOTAL"), "TOTAL"]:
        c = counts[path]
        rows.append([path, str(c["passed"]), str(c["failed"]), str(c["skipped"])])
    print(table(rows))
    for name in failed[:30]:
        print("FAILED", name)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *sys.argv[2:]))
