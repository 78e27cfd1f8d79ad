"""Partitions: quotas carved from the device, admission against the partition's quota/share."""

import pytest

rust = pytest.importorskip("_pygpukit_rust")

GiB = 1024**3


def manager():
    return rust.PartitionManager(rust.PartitionConfig(total_memory=8 * GiB))


def test_limits_builder_chains_and_returns_new_objects():
    base = rust.PartitionLimits()
    limited = base.memory("4GiB").compute(0.5).priority(2)
    assert base.memory_quota is None and base.compute_share is None
    assert limited.memory_quota == 4 * GiB
    assert limited.compute_share == pytest.approx(0.5)
    assert limited.priority_band == 2
    with pytest.raises(ValueError):
        base.compute(0.0)
    with pytest.raises(ValueError):
        base.memory("lots")


def test_quotas_are_never_overcommitted():
    m = manager()
    m.create_partition(
        "inference", "Inference", rust.PartitionLimits().memory(4 * GiB).compute(0.5)
    )
    m.create_partition("training", "Training", rust.PartitionLimits().memory(3 * GiB).compute(0.4))
    with pytest.raises(ValueError, match="not yet partitioned"):
        m.create_partition("more", "More", rust.PartitionLimits().memory(2 * GiB).compute(0.1))
    with pytest.raises(ValueError, match="already exists"):
        m.create_partition("inference", "Again", rust.PartitionLimits().memory(1))
    assert m.stats()["total_memory"] == 1 * GiB  # the unpartitioned remainder
    assert sorted(p.partition_id for p in m.list_partitions()) == ["inference", "training"]


def test_admission_against_partition_quota_and_share():
    m = manager()
    m.create_partition(
        "inference", "Inference", rust.PartitionLimits().memory(4 * GiB).compute(0.5)
    )

    def g(i, mem, bw=0.1):
        return rust.QosTaskMeta.guaranteed(f"t{i}", "t", mem, bandwidth=bw)

    assert m.evaluate(g(1, 3 * GiB), partition="inference").admitted
    queued = m.evaluate(g(2, 2 * GiB), partition="inference")
    assert queued.queued and queued.position == 1
    # The same request fits in the remainder (4 GiB unpartitioned).
    assert m.evaluate(g(3, 2 * GiB)).admitted
    # More than the partition's compute share is rejected outright.
    r = m.evaluate(g(4, 1, bw=0.6), partition="inference")
    assert r.rejected and "bandwidth" in r.reason
    # More than the quota can never fit.
    r = m.evaluate(g(5, 5 * GiB), partition="inference")
    assert r.rejected and "exceeds" in r.reason
    assert m.complete("t1") == ["t2"]
    s = m.stats("inference")
    assert s["reserved_memory"] == 2 * GiB and s["memory_quota"] == 4 * GiB


def test_unknown_partition_and_delete():
    m = manager()
    with pytest.raises(KeyError):
        m.evaluate(rust.QosTaskMeta.guaranteed("t", "t", 1), partition="nope")
    m.create_partition("p", "P", rust.PartitionLimits().memory(GiB).compute(0.25))
    m.evaluate(rust.QosTaskMeta.guaranteed("t", "t", 1), partition="p")
    with pytest.raises(ValueError):
        m.delete_partition("p")  # still has a task
    m.release("t")
    m.delete_partition("p")
    assert m.stats()["total_memory"] == 8 * GiB
    with pytest.raises(KeyError):
        m.get_partition("p")
