"""`python -m pygpukit.benchmark`: the command line, and the loop over the cases.

Exit status: 0 when every row is checked and timed (or missing/skipped), 1 when some
pygpukit result was wrong (a FAIL row), 3 when `--fail-on-regression PCT` finds a case
more than PCT percent slower than in the `--compare` file, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .._cli.progress import Step
from . import cases as C
from . import report
from .peers import default_peers, make_peers
from .results import ERROR, Row, Run
from .runner import Bench, quiet_numpy, run_array_case
from .special import run_special

EXIT_FAIL, EXIT_USAGE, EXIT_REGRESSION = 1, 2, 3


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pygpukit.benchmark",
        description="Time pygpukit's ops beside PyTorch and CuPy (on a GPU) or NumPy (on "
        "the CPU), after checking each result; print ratios as a markdown table.",
        epilog="Exit status: 0 fine, 1 a wrong pygpukit result (FAIL), 2 usage, "
        "3 a regression over --fail-on-regression.",
    )
    p.add_argument(
        "--device",
        default="auto",
        help="cpu, cuda, cuda:1 ... (default: pygpukit's default device)",
    )
    p.add_argument(
        "--families",
        default=",".join(f for f in C.FAMILIES if f not in C.OPT_IN),
        help=f"comma-separated, from: {', '.join(C.FAMILIES)} (default: all but "
        f"{', '.join(C.OPT_IN)})",
    )
    p.add_argument(
        "--quick", action="store_true", help="small sizes and 3 repeats: a smoke run in seconds"
    )
    p.add_argument(
        "--sizes",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="replace one size list: vector=2^20,2^28 rows=8192 cols=4096 "
        "matmul=1024,4096 calls=5000 (repeat the option for several; the GPU's defaults "
        "are vector=2^20,2^28 rows=8192 matmul=1024,4096,8192, the CPU's smaller)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        help="timed samples per library and case (default 15, 3 with --quick)",
    )
    p.add_argument("--warmup", type=int, default=2, help="untimed calls first (default 2)")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop sampling a library's case after this long, once 3 samples "
        "are in (default 10, 1 with --quick)",
    )
    p.add_argument("--peers", help="comma-separated: numpy on the cpu; torch,cupy on a GPU")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--json", metavar="PATH", help="save the full run (environment included)")
    p.add_argument("--markdown", metavar="PATH", help="save the report as a markdown file")
    p.add_argument("--compare", metavar="PATH", help="print the change against a saved --json run")
    p.add_argument(
        "--fail-on-regression",
        type=float,
        metavar="PCT",
        help="with --compare: exit 3 if a case got more than PCT%% slower (and more "
        "than its spread, 3%% at least, so noise alone never fails)",
    )
    p.add_argument(
        "--from-json",
        metavar="PATH",
        help="report (and --compare) a saved run instead of running one",
    )
    return p


def _families(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in C.FAMILIES]
    if unknown or not names:
        raise ValueError(f"--families: unknown {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(C.FAMILIES)}")  # fmt: skip
    return [f for f in C.FAMILIES if f in names]


def _device(text: str) -> Any:
    import pygpukit as gp

    from .._placement import default_device, resolve_device

    return default_device() if text == "auto" else resolve_device(gp.Device.parse(text))


def run_benchmark(args: argparse.Namespace) -> Run:
    """Run the cases the arguments select; every case yields a row, whatever happens."""
    device = _device(args.device)
    families = _families(args.families)
    sizes = C.Sizes.preset(device.type, args.quick)
    for spec in args.sizes:
        sizes.override(spec)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 15)
    budget = args.budget if args.budget is not None else (1.0 if args.quick else 10.0)
    if repeats < 1 or args.warmup < 0 or budget <= 0:
        raise ValueError("--repeats must be >= 1, --warmup >= 0 and --budget > 0")
    names = ([n.strip() for n in args.peers.split(",") if n.strip()] if args.peers
             else default_peers(device.type))  # fmt: skip
    peers = make_peers(names, device.type, device.index)
    bench = Bench(device, peers, repeats=repeats, warmup=args.warmup, budget_s=budget,
                  cache_bytes=_cache_bytes(device), seed=args.seed)  # fmt: skip
    todo = C.build(families, sizes)
    rows: list[Row] = []
    family = None
    for index, case in enumerate(todo, start=1):
        if case.family != family:
            bench.forget_host_data()
            family = case.family
        with Step(f"{case.family}: {case.op} {case.case}", index, len(todo)), quiet_numpy():
            rows.append(_run_one(case, bench))
    bench.forget_host_data()
    from .environment import collect

    settings = {
        "device": str(device), "families": families, "quick": args.quick, "repeats": repeats,
        "warmup": args.warmup, "budget_s": budget, "peers": names, "seed": args.seed,
        "sizes": asdict(sizes), "timer": bench.clock().kind,
    }  # fmt: skip
    return Run(collect(device, peers), settings, rows)


def _run_one(case: C.Case, bench: Bench) -> Row:
    try:
        if isinstance(case, C.ArrayCase):
            return run_array_case(case, bench)
        return run_special(case, bench)
    except Exception as exc:  # a broken case is a row, never the end of the run
        bench.release()
        return Row(case.family, case.op, case.case, status=ERROR,
                   note=f"{type(exc).__name__}: {exc}")  # fmt: skip


def _cache_bytes(device: Any) -> int:
    """The last-level cache to rotate inputs past: the GPU's L2, 64 MiB for a CPU."""
    if device.type == "cpu":
        return 64 << 20
    from .._placement import backend_of

    try:
        l2 = int(backend_of(device).info(device).get("l2_cache_bytes") or 0)
    except Exception:
        l2 = 0
    return l2 or (64 << 20)


def load(path: str) -> Run:
    try:
        return Run.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"cannot read benchmark file {path}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.fail_on_regression is not None and not args.compare:
        print("--fail-on-regression needs --compare PATH", file=sys.stderr)
        return EXIT_USAGE
    try:
        baseline = load(args.compare) if args.compare else None
        run = load(args.from_json) if args.from_json else run_benchmark(args)
    except ValueError as exc:
        print(f"benchmark: {exc}", file=sys.stderr)
        return EXIT_USAGE
    text = report.render(run)
    if baseline is not None:
        text += report.render_compare(baseline, run, args.fail_on_regression, args.compare)
    sys.stdout.write(text)
    if args.json:
        Path(args.json).write_text(json.dumps(run.to_dict(), indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)
    if report.failed(run):
        return EXIT_FAIL
    threshold = args.fail_on_regression
    if (
        baseline is not None
        and threshold is not None
        and report.regressions(baseline, run, threshold)
    ):
        return EXIT_REGRESSION
    return 0
