"""Scheduler micro-benchmarks (not a test): admission decision latency, launch-gate cost and
submit->complete overhead of a no-op task. Run: python rust/bench_scheduler.py"""

import statistics
import time

import _pygpukit_rust as rust


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def row(name, samples_ns, note=""):
    p50 = statistics.median(samples_ns) / 1e3
    p99 = pct(samples_ns, 0.99) / 1e3
    print(f"{name:<44} {p50:>9.2f} {p99:>9.2f}  {note}")


def bench_admission(n=20_000):
    ev = rust.QosPolicyEvaluator(total_memory="1TiB")
    metas = [rust.QosTaskMeta.guaranteed(f"t{i}", "t", 1024, bandwidth=1e-6 * 20) for i in range(n)]
    inside, outside = [], []
    for m in metas:
        t0 = time.perf_counter_ns()
        r = ev.evaluate(m)
        outside.append(time.perf_counter_ns() - t0)
        inside.append(r.decision_ns)
    row("admission: evaluate() in Rust (admit)", inside, f"n={n}")
    row("admission: evaluate() from Python (admit)", outside)
    # Queue decisions against a full device with a long queue.
    ev = rust.QosPolicyEvaluator(total_memory=1000)
    ev.evaluate(rust.QosTaskMeta.guaranteed("full", "f", 1000))
    q = [
        ev.evaluate(rust.QosTaskMeta.guaranteed(f"q{i}", "q", 10, priority=i % 7)).decision_ns
        for i in range(2000)
    ]
    row("admission: evaluate() in Rust (queue, len<=2000)", q)
    rj = [
        ev.evaluate(rust.QosTaskMeta.guaranteed(f"r{i}", "r", 5000)).decision_ns
        for i in range(2000)
    ]
    row("admission: evaluate() in Rust (reject)", rj)


def bench_gate(n=200_000):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        rust.task_launch_begin()
    per = (time.perf_counter_ns() - t0) / n
    row("launch gate: task_launch_begin() w/o task", [per], f"mean of {n}")
    s = rust.TaskScheduler(total_memory="1GiB", workers=1, launch_rate=0)

    def body(k):
        out = []
        for _ in range(k):
            t = time.perf_counter_ns()
            rust.task_launch_end(rust.task_launch_begin(), 0)
            out.append(time.perf_counter_ns() - t)
        return out

    samples = s.result(s.submit(body, (20_000,), bandwidth=0.5), timeout=60)
    row("launch gate: begin+end inside a task", samples, "uncontended")
    s.shutdown()


def bench_task_overhead(n=3000):
    s = rust.TaskScheduler(total_memory="1GiB", workers=2)
    noop = lambda: None  # noqa: E731
    lat = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        s.result(s.submit(noop, memory_request=1024, memory_limit=1024))
        lat.append(time.perf_counter_ns() - t0)
    row("task: submit->result, no-op (sequential)", lat, f"n={n}")
    subs = []
    t0 = time.perf_counter_ns()
    ids = []
    for _ in range(n):
        t = time.perf_counter_ns()
        ids.append(s.submit(noop))
        subs.append(time.perf_counter_ns() - t)
    for i in ids:
        s.result(i)
    total = time.perf_counter_ns() - t0
    row("task: submit() call alone", subs)
    print(f"{'task: throughput, no-op (pipelined)':<44} {n / (total / 1e9):>9.0f} tasks/s")
    s.shutdown()


if __name__ == "__main__":
    print(f"{'benchmark':<44} {'p50 us':>9} {'p99 us':>9}")
    print("-" * 70)
    bench_admission()
    bench_gate()
    bench_task_overhead()
