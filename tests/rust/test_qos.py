"""QoS admission through the bindings: admit, queue with position, reject with reason."""

import pytest

rust = pytest.importorskip("_pygpukit_rust")

MiB = 1024**2
GiB = 1024**3


def test_seed_api_runs_as_written():
    evaluator = rust.QosPolicyEvaluator(total_memory=8 * 1024**3, total_bandwidth=1.0)
    task = rust.QosTaskMeta.guaranteed("task-1", "Critical Task", 256 * 1024 * 1024)
    result = evaluator.evaluate(task)
    assert result.decision == "admit" and result.admitted and bool(result)
    assert result.position is None and result.reason is None
    assert evaluator.reserved_memory == 256 * MiB
    manager = rust.PartitionManager(rust.PartitionConfig(total_memory=8 * 1024**3))
    p = manager.create_partition(
        "inference", "Inference", rust.PartitionLimits().memory(4 * 1024**3).compute(0.5)
    )
    assert p.memory_quota == 4 * GiB and p.compute_share == pytest.approx(0.5)


def test_queue_positions_follow_priority_then_deadline_then_fifo():
    ev = rust.QosPolicyEvaluator(total_memory="1GiB")
    assert ev.evaluate(rust.QosTaskMeta.guaranteed("big", "big", "1GiB")).admitted
    r1 = ev.evaluate(rust.QosTaskMeta.guaranteed("a", "a", 100 * MiB))
    r2 = ev.evaluate(rust.QosTaskMeta.guaranteed("b", "b", 100 * MiB))
    assert (r1.decision, r1.position) == ("queue", 1)
    assert (r2.decision, r2.position) == ("queue", 2)
    hi = ev.evaluate(rust.QosTaskMeta.guaranteed("hi", "hi", 100 * MiB, priority=5))
    assert hi.position == 1
    soon = ev.evaluate(rust.QosTaskMeta.guaranteed("soon", "soon", 100 * MiB, deadline_s=1.0))
    assert soon.position == 2  # after the higher priority, before the no-deadline ones
    assert ev.queued() == ["hi", "soon", "a", "b"]
    assert ev.queue_position("b") == 4
    # Freeing the big task admits the queue in order.
    assert ev.complete("big") == ["hi", "soon", "a", "b"]
    assert ev.queue_length == 0 and ev.reserved_memory == 400 * MiB


def test_reject_reasons():
    ev = rust.QosPolicyEvaluator(total_memory=1000, total_bandwidth=0.5)
    too_big = ev.evaluate(rust.QosTaskMeta.guaranteed("x", "x", 2000))
    assert too_big.rejected and "exceeds" in too_big.reason and "2000" in too_big.reason
    too_fast = ev.evaluate(rust.QosTaskMeta.guaranteed("y", "y", 10, bandwidth=0.8))
    assert too_fast.rejected and "bandwidth" in too_fast.reason
    # Best effort is refused (not queued) under pressure.
    assert ev.evaluate(rust.QosTaskMeta.guaranteed("g", "g", 1000)).admitted
    assert ev.evaluate(rust.QosTaskMeta.guaranteed("q", "q", 10)).queued
    be = ev.evaluate(rust.QosTaskMeta.best_effort("be", "be"))
    assert be.rejected and "queued" in be.reason
    assert ev.stats()["rejected_total"] == 3


def test_best_effort_uses_leftovers_only():
    ev = rust.QosPolicyEvaluator(total_memory=1000)
    assert ev.evaluate(rust.QosTaskMeta.best_effort("be1", "be")).admitted
    assert ev.reserved_memory == 0
    assert ev.evaluate(rust.QosTaskMeta.guaranteed("g", "g", 1000)).admitted
    r = ev.evaluate(rust.QosTaskMeta.best_effort("be2", "be"))
    assert r.rejected and "leftover" in r.reason


def test_burstable_reserves_request_and_guaranteed_never_overcommitted():
    ev = rust.QosPolicyEvaluator(total_memory=1000)
    b = rust.QosTaskMeta.burstable("b", "b", 300, 900)
    assert b.policy == "burstable" and b.memory_limit == 900
    assert ev.evaluate(b).admitted and ev.reserved_memory == 300
    assert ev.evaluate(rust.QosTaskMeta.guaranteed("g1", "g", 700)).admitted
    assert ev.evaluate(rust.QosTaskMeta.guaranteed("g2", "g", 1)).queued
    assert ev.available_memory == 0
    assert ev.release("b") == ["g2"]
    assert ev.reserved_memory == 701


def test_decision_latency_is_microseconds():
    ev = rust.QosPolicyEvaluator(total_memory="64GiB")
    times = []
    for i in range(2000):
        r = ev.evaluate(rust.QosTaskMeta.guaranteed(f"t{i}", "t", 1024, bandwidth=0.0001))
        times.append(r.decision_ns)
        assert r.admitted
    times.sort()
    # The median, not the worst case: a loaded CI box may preempt any single call.
    assert 0 < times[len(times) // 2] < 50_000


@pytest.mark.parametrize(
    "make",
    [
        lambda: rust.QosTaskMeta.guaranteed("t", "t", -1),
        lambda: rust.QosTaskMeta.guaranteed("t", "t", "12 parsecs"),
        lambda: rust.QosTaskMeta.guaranteed("t", "t", 10, bandwidth=0.0),
        lambda: rust.QosTaskMeta.guaranteed("t", "t", 10, bandwidth=1.5),
        lambda: rust.QosTaskMeta.guaranteed("t", "t", 10, bandwidth=float("nan")),
        lambda: rust.QosTaskMeta.burstable("t", "t", 100, 10),
        lambda: rust.QosTaskMeta("t", "t", "platinum", 10),
        lambda: rust.QosTaskMeta("t", "t", "guaranteed", 10, 20),
        lambda: rust.QosPolicyEvaluator(total_memory=10, total_bandwidth=2.0),
        lambda: rust.QosTaskMeta.guaranteed("t", "t", 10, deadline_s=-1.0),
    ],
)
def test_bad_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_sizes_parse_in_rust():
    assert rust.parse_size("512MB") == 512_000_000
    assert rust.parse_size("512MiB") == 512 * MiB
    assert rust.parse_size("1GiB") == GiB
    assert rust.parse_size(" 1.5 GiB") == 3 * GiB // 2
    assert rust.parse_size(4096) == 4096
    for junk in ["", "abc", "1.2.3", "5 XB", "0.5B", True, 1.5, -3, [1]]:
        with pytest.raises(ValueError):
            rust.parse_size(junk)


def test_duplicate_and_unknown_ids():
    ev = rust.QosPolicyEvaluator(total_memory=100)
    ev.evaluate(rust.QosTaskMeta.guaranteed("a", "a", 10))
    with pytest.raises(ValueError):
        ev.evaluate(rust.QosTaskMeta.guaranteed("a", "a", 10))
    with pytest.raises(KeyError):
        ev.release("nope")
