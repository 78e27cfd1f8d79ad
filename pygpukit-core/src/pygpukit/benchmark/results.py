"""What one benchmark row holds, and its JSON form (the schema `--json` writes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .timing import Stats

#: JSON layout version; bump when a field changes meaning
SCHEMA = 1

#: row statuses: checked and timed / wrong result, not timed / no kernel / raised / not run
PASS, FAIL, MISSING, ERROR, SKIP = "PASS", "FAIL", "missing", "ERROR", "skip"


@dataclass
class Work:
    """How much a call does, to turn a time into a rate."""

    #: "GB/s" (bytes read + written), "TFLOP/s", or "us/call" (no rate: the time is it)
    unit: str
    amount: float = 0.0

    def rate(self, stats: Stats | None) -> float | None:
        if stats is None or stats.median_ms <= 0 or self.unit == "us/call":
            return None
        seconds = stats.median_ms * 1e-3
        scale = 1e9 if self.unit == "GB/s" else 1e12
        return self.amount / seconds / scale


@dataclass
class PeerResult:
    """One peer library's time for the same case, and pygpukit's speed relative to it."""

    name: str
    stats: Stats | None = None
    rate: float | None = None
    #: pygpukit's speed as a fraction of this peer's (peer time / pygpukit time)
    ratio: float | None = None
    #: the peer's own result against the reference (None: not checked)
    error: float | None = None
    note: str = ""


@dataclass
class Row:
    family: str
    op: str
    case: str
    status: str = SKIP
    provider: str = "-"
    stats: Stats | None = None
    unit: str = ""
    rate: float | None = None
    #: pygpukit's result against the reference, and the tolerance it was held to
    error: float | None = None
    tol: float | None = None
    peers: list[PeerResult] = field(default_factory=list)
    note: str = ""
    #: extra numbers a case reports (the compile family's breakdown, for one)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """What `--compare` matches rows on."""
        return f"{self.family}/{self.op}/{self.case}"

    def peer(self, name: str) -> PeerResult | None:
        return next((p for p in self.peers if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["key"] = self.key
        if self.stats is not None:
            data["stats"]["spread_pct"] = self.stats.spread_pct
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        peers = [
            PeerResult(
                name=p["name"],
                stats=Stats.from_dict(p["stats"]) if p.get("stats") else None,
                rate=p.get("rate"),
                ratio=p.get("ratio"),
                error=p.get("error"),
                note=p.get("note", ""),
            )
            for p in data.get("peers", [])
        ]
        return cls(
            family=data["family"], op=data["op"], case=data["case"],
            status=data.get("status", SKIP), provider=data.get("provider", "-"),
            stats=Stats.from_dict(data["stats"]) if data.get("stats") else None,
            unit=data.get("unit", ""), rate=data.get("rate"), error=data.get("error"),
            tol=data.get("tol"), peers=peers, note=data.get("note", ""),
            extra=data.get("extra", {}),
        )  # fmt: skip


@dataclass
class Run:
    """A whole benchmark run: where it ran, with which settings, and its rows."""

    environment: dict[str, Any]
    settings: dict[str, Any]
    rows: list[Row]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "environment": self.environment,
            "settings": self.settings,
            "rows": [r.to_dict() for r in self.rows],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        if data.get("schema") != SCHEMA:
            raise ValueError(
                f"benchmark file has schema {data.get('schema')!r}; this version reads {SCHEMA}"
            )
        return cls(
            environment=data.get("environment", {}),
            settings=data.get("settings", {}),
            rows=[Row.from_dict(r) for r in data["rows"]],
        )
