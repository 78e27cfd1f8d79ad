"""Probe SM partitioning (green contexts) on this GPU: what the driver reports, whether our
kernels and cuBLASLt products run on each side, and the latency a reserve buys.

    python scripts/probe_green_contexts.py [--sms 32]
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import numpy as np
import pygpukit as gp


def _request_latency(stream: object, a: gp.GPUArray, w: gp.GPUArray, n: int) -> list[float]:
    times = []
    with stream:  # type: ignore[attr-defined]
        for _ in range(n):
            start = time.perf_counter()
            x = a
            for _ in range(8):
                x = gp.maximum(gp.matmul(x, w), 0.0)
            stream.synchronize()  # type: ignore[attr-defined]
            times.append(time.perf_counter() - start)
            time.sleep(0.001)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sms", type=int, default=32, help="SMs to reserve")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    report: dict[str, object] = {"device": gp.get_device_info("cuda:0").get("name")}
    reason = gp.cuda.sm_partition_unavailable(0)
    report["unavailable_reason"] = reason
    if reason is not None:
        print(json.dumps(report, indent=2))
        return
    report["layout"] = gp.cuda.sm_layout(0)
    part = gp.cuda.SmPartition(args.sms, 0)
    report["reserved_sms"], report["rest_sms"] = part.reserved_sms, part.rest_sms
    report["self_check"] = part.check() or "ok"
    rng = np.random.default_rng(0)
    a = gp.asarray(rng.standard_normal((64, 2048)).astype(np.float32), device="cuda:0")
    w = gp.asarray((rng.standard_normal((2048, 2048)) / 45).astype(np.float32), device="cuda:0")
    a, w = a.astype("bfloat16"), w.astype("bfloat16")
    for side in ("reserved", "rest"):  # correctness on each side, against the default stream
        s = part.stream(side)
        with s:
            got = gp.maximum(gp.matmul(a, w), 0.0).astype("float32").to_numpy()
        s.synchronize()
        want = gp.maximum(gp.matmul(a, w), 0.0).astype("float32").to_numpy()
        report[f"{side}_matches_default_stream"] = bool(np.array_equal(got, want))
    report["solo_p50_ms"] = float(
        np.median(_request_latency(part.stream("reserved"), a, w, 50)) * 1e3
    )
    hog_a = gp.asarray(rng.standard_normal((8192, 8192)).astype(np.float32), device="cuda:0")
    hog_a = hog_a.astype("bfloat16")
    stop = threading.Event()

    def hog() -> None:
        s = part.stream("rest")
        with s:
            while not stop.is_set():
                gp.matmul(hog_a, hog_a)
                s.synchronize()

    t = threading.Thread(target=hog)
    t.start()
    try:
        times = _request_latency(part.stream("reserved", -5), a, w, args.requests)
    finally:
        stop.set()
        t.join()
    report["under_hog_p50_ms"] = float(np.median(times) * 1e3)
    report["under_hog_p99_ms"] = float(np.percentile(times, 99) * 1e3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
