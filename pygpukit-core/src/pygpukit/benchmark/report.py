"""Rendering a run: markdown tables (plain ASCII) per family, and the change against a
saved run for `--compare`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._cli.table import ascii_text
from .results import FAIL, PASS, Row, Run
from .timing import Stats


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-style pipe table, columns padded so it reads as text too."""
    cells = [[ascii_text(c).replace("|", "/").replace("\n", " ") for c in r]
             for r in [list(headers), *rows]]  # fmt: skip
    width = [max(3, *(len(r[i]) for r in cells)) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "| " + " | ".join("-" * w for w in width) + " |")
    return "\n".join(lines)


def fmt_time(stats: Stats | None, unit: str = "") -> str:
    """'1.23 ms +-2%': the median and the interquartile spread."""
    if stats is None:
        return "-"
    if unit == "us/call":
        value = f"{stats.median_ms * 1e3:.2f} us"
    elif stats.median_ms >= 100:
        value = f"{stats.median_ms:.0f} ms"
    elif stats.median_ms >= 1:
        value = f"{stats.median_ms:.2f} ms"
    else:
        value = f"{stats.median_ms * 1e3:.1f} us"
    return f"{value} +-{stats.spread_pct / 2:.0f}%"


def fmt_rate(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:.0f}" if value >= 100 else f"{value:.3g}"
    return f"{text} {unit}"


def fmt_rates(row: Row) -> str:
    """'2318 / 3030 GB/s': pygpukit's rate and the fastest peer's ('-' where none)."""
    if row.unit not in ("GB/s", "TFLOP/s", "tok/s"):
        return "-"
    best = max((p.rate for p in row.peers if p.rate is not None), default=None)
    if row.rate is None and best is None:
        return "-"
    ours = "-" if row.rate is None else fmt_rate(row.rate, "").strip()
    theirs = "-" if best is None else fmt_rate(best, "").strip()
    return f"{ours} / {theirs} {row.unit}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def fmt_check(row: Row) -> str:
    if row.status == PASS and row.error is not None:
        return f"PASS ({row.error:.0e})" if row.error else "PASS (exact)"
    return row.status


def peer_names(run: Run) -> list[str]:
    names: list[str] = []
    for r in run.rows:
        for p in r.peers:
            if p.name not in names:
                names.append(p.name)
    return names


def family_table(rows: list[Row], peers: list[str]) -> tuple[str, list[str]]:
    """(the table, its numbered notes) for one family's rows."""
    headers = ["op", "case", "pygpukit"] + peers + [f"vs {p}" for p in peers]
    headers += ["rate: pygpukit / best peer", "provider", "check"]
    notes: list[str] = []
    body = []
    for r in rows:
        marks = []
        texts = [r.note] + [_peer_note(p.name, p.note) for p in r.peers if p.note]
        for text in filter(None, texts):
            if text not in notes:
                notes.append(text)
            marks.append(f"[{notes.index(text) + 1}]")
        cells = [r.op, r.case, fmt_time(r.stats, r.unit)]
        by_name = {p.name: p for p in r.peers}
        cells += [fmt_time(by_name[p].stats, r.unit) if p in by_name else "-" for p in peers]
        cells += [fmt_ratio(by_name[p].ratio) if p in by_name else "-" for p in peers]
        cells += [fmt_rates(r), r.provider, " ".join([fmt_check(r), *marks])]
        body.append(cells)
    return markdown_table(headers, body), notes


def _peer_note(name: str, note: str) -> str:
    return note if note.startswith(f"{name}") else f"{name}: {note}"


def environment_lines(env: dict[str, Any]) -> list[str]:
    dev = env.get("device", {})
    versions = env.get("versions", {})
    parts = [
        f"- device: {env.get('device_name', '?')} ({dev.get('arch') or dev.get('type', '?')})"
        + (f", driver {dev['driver_version']}" if dev.get("driver_version") else ""),
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
        f"- run: {env.get('timestamp', '?')}"
        + (f", commit {env['commit']}" if env.get("commit") else ""),
    ]  # fmt: skip
    host = env.get("host", {})
    if "load_1m" in host:
        parts.append(f"- host at the start: {host.get('cpus', '?')} CPUs, load average "
                     f"{host['load_1m']} (1 min), {host['load_5m']} (5 min)")  # fmt: skip
    return parts


def render(run: Run) -> str:
    """The whole run as markdown: a header, one table per family, then a summary."""
    out = ["# pygpukit benchmark", ""]
    out += environment_lines(run.environment)
    s = run.settings
    out.append(
        f"- timing: median of up to {s.get('repeats')} samples after {s.get('warmup')} warm-up "
        f"calls (+-: half the interquartile range); 'vs peer' = peer time / pygpukit time, "
        "so 0.50x means half the peer's speed"
    )
    peers = peer_names(run)
    families: list[str] = []
    for r in run.rows:
        if r.family not in families:
            families.append(r.family)
    for fam in families:
        rows = [r for r in run.rows if r.family == fam]
        table, notes = family_table(rows, peers)
        out += ["", f"## {fam}", "", table]
        if notes:
            out.append("")
            out += [f"[{i}] {ascii_text(n)}" for i, n in enumerate(notes, start=1)]
    out += ["", summary(run)]
    return "\n".join(out) + "\n"


def summary(run: Run) -> str:
    counts: dict[str, int] = {}
    for r in run.rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = [f"{n} {status}" for status, n in counts.items()]
    return f"{len(run.rows)} rows: " + ", ".join(parts) + "."


# -- comparing two runs -----------------------------------------------------------------
#: run-to-run changes this small are noise even where one run's spread is tighter (large
#: GPU ops repeat to 0.1% within a run but move by 1-2% between runs)
NOISE_FLOOR_PCT = 3.0


@dataclass
class Change:
    key: str
    row: Row
    before: Stats | None
    after: Stats | None
    #: time after / time before - 1, in percent (positive: slower)
    pct: float | None
    verdict: str


def changes(before: Run, after: Run, threshold: float | None) -> list[Change]:
    old = {r.key: r for r in before.rows}
    out = []
    for r in after.rows:
        prev = old.get(r.key)
        if prev is None:
            out.append(Change(r.key, r, None, r.stats, None, "new"))
            continue
        if prev.stats is None or r.stats is None or r.status != PASS:
            verdict = r.status if r.status != PASS else "no baseline time"
            out.append(Change(r.key, r, prev.stats, r.stats, None, verdict))
            continue
        pct = 100.0 * (r.stats.median_ms / prev.stats.median_ms - 1.0)
        noise = max(r.stats.spread_pct, prev.stats.spread_pct, NOISE_FLOOR_PCT)
        if abs(pct) <= noise:
            verdict = "within noise"
        elif threshold is not None and pct > threshold:
            verdict = "REGRESSION"
        else:
            verdict = "slower" if pct > 0 else "faster"
        out.append(Change(r.key, r, prev.stats, r.stats, pct, verdict))
    seen = {r.key for r in after.rows}
    for r in before.rows:
        if r.key not in seen:
            out.append(Change(r.key, r, r.stats, None, None, "not run now"))
    return out


def render_compare(before: Run, after: Run, threshold: float | None, source: str) -> str:
    rows = changes(before, after, threshold)
    out = ["", f"## change against {ascii_text(source)}", ""]
    b_dev, a_dev = before.environment.get("device_name"), after.environment.get("device_name")
    if b_dev != a_dev:
        out.append(f"Note: the saved run was on {b_dev}, this one on {a_dev}.\n")
    body = []
    for c in rows:
        pct = "-" if c.pct is None else f"{c.pct:+.1f}%"
        body.append([c.row.op, c.row.case, fmt_time(c.before, c.row.unit),
                     fmt_time(c.after, c.row.unit), pct, c.verdict])  # fmt: skip
    out.append(markdown_table(["op", "case", "saved", "now", "time change", "verdict"], body))
    worse = [c for c in rows if c.verdict == "REGRESSION"]
    if threshold is not None:
        out.append("")
        out.append(
            f"{len(worse)} regression(s) over {threshold:g}%"
            + (": " + ", ".join(c.key for c in worse) if worse else ".")
        )
    return "\n".join(out) + "\n"


def regressions(before: Run, after: Run, threshold: float) -> list[Change]:
    return [c for c in changes(before, after, threshold) if c.verdict == "REGRESSION"]


def failed(run: Run) -> list[Row]:
    return [r for r in run.rows if r.status == FAIL]
