from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.checkpoints import (
    CheckpointError,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from broker.log.epoch_cache import LeaderEpochCache
from broker.log.errors import LogInvariantError
from broker.log.meta_properties import (
    InconsistentBrokerIdError,
    InconsistentClusterIdError,
    MetaProperties,
    MetaPropertiesError,
    ensure_meta_properties,
    read_meta_properties,
    write_meta_properties,
)


def test_offset_checkpoint_round_trip_in_kafka_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, {("orders", 0): 42, ("my-topic", 3): 7})
    assert path.read_text() == "0\n2\norders 0 42\nmy-topic 3 7\n"
    assert read_offset_checkpoint(path) == {("orders", 0): 42, ("my-topic", 3): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_missing_checkpoint_reads_empty(tmp_path: Path) -> None:
    assert read_offset_checkpoint(tmp_path / "absent") == {}


@pytest.mark.parametrize("text", ["", "0\n", "0\n0\n"])
def test_offset_checkpoint_kafka_created_or_cut_short_reads_empty(
    tmp_path: Path, text: str
) -> None:
    """Kafka creates its offset checkpoint files empty (a log dir it wrote holds a 0-byte
    cleaner-offset-checkpoint until something is compacted); its reader takes an empty file,
    or one ending after the version line, as no checkpoints."""
    path = tmp_path / "cleaner-offset-checkpoint"
    path.write_text(text)
    assert read_offset_checkpoint(path) == {}


@pytest.mark.parametrize("text", ["", "0\n"])
def test_short_leader_epoch_checkpoint_raises(tmp_path: Path, text: str) -> None:
    """Ours writes this one in place: a short file is a torn write, rebuilt from the log."""
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        read_leader_epoch_checkpoint(path)


@pytest.mark.parametrize(
    "text", ["1\n", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "0\nx\n"]
)
def test_malformed_checkpoint_raises(tmp_path: Path, text: str) -> None:
    path = tmp_path / "checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        read_offset_checkpoint(path)


def test_leader_epoch_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, [(0, 0), (3, 120)])
    assert path.read_text() == "0\n2\n0 0\n3 120\n"
    assert read_leader_epoch_checkpoint(path) == [(0, 0), (3, 120)]


def test_leader_epoch_checkpoint_is_overwritten_in_place_at_its_new_length(
    tmp_path: Path,
) -> None:
    """In place, not renamed over (see broker/log/checkpoints.py): the same file, cut to
    the new content when it shrinks after a truncation."""
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, [(0, 0), (3, 120), (5, 300)], fsync=False)
    inode = path.stat().st_ino
    write_leader_epoch_checkpoint(path, [(0, 0)])
    assert path.read_text() == "0\n1\n0 0\n"
    assert path.stat().st_ino == inode
    assert list(tmp_path.iterdir()) == [path]


def test_leader_epoch_cache_answers_end_offsets_like_kafka(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    cache.assign(1, 0)
    cache.assign(1, 5)  # same epoch: no new entry
    cache.assign(3, 10)
    cache.assign(4, 20)
    assert cache.end_offset_for(4, 25) == (4, 25)
    assert cache.end_offset_for(3, 25) == (3, 20)
    assert cache.end_offset_for(2, 25) == (1, 10)
    assert cache.end_offset_for(0, 25) == (0, 0)
    assert cache.end_offset_for(9, 25) == (-1, -1)
    cache.truncate_from_end(15)
    assert LeaderEpochCache(cache.path).entries == [(1, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]


def test_leader_epoch_cache_moves_the_latest_epoch_to_an_earlier_start_offset(
    tmp_path: Path,
) -> None:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint", entries=[(1, 0), (3, 10)])
    cache.assign(3, 12)  # same epoch, later start: nothing changes
    assert cache.entries == [(1, 0), (3, 10)]
    cache.assign(3, 8)  # same epoch, earlier start: Kafka takes the earlier one
    assert cache.entries == [(1, 0), (3, 8)]


def test_leader_epoch_cache_removes_conflicting_entries_so_epochs_and_offsets_only_grow(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = LeaderEpochCache(
        tmp_path / "leader-epoch-checkpoint", entries=[(1, 0), (3, 10), (5, 20)]
    )
    cache.assign(4, 30)  # a lower epoch than the latest, at a greater start offset
    assert cache.entries == [(1, 0), (3, 10), (4, 30)]
    cache.assign(6, 5)  # a higher epoch at an earlier start offset
    assert cache.entries == [(1, 0), (6, 5)]
    assert "caused truncation of conflicting entries" in caplog.text


def test_leader_epoch_cache_refuses_negative_epochs_and_offsets(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint", entries=[(1, 0)])
    with pytest.raises(LogInvariantError):
        cache.assign(-1, 5)
    with pytest.raises(LogInvariantError):
        cache.assign(2, -1)
    assert cache.entries == [(1, 0)]


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    write_meta_properties(tmp_path, MetaProperties(broker_id=3, cluster_id="abc"))
    text = (tmp_path / "meta.properties").read_text()
    assert "broker.id=3\n" in text and "cluster.id=abc\n" in text and "version=0\n" in text
    assert read_meta_properties(tmp_path) == MetaProperties(3, "abc", 0)
    assert read_meta_properties(tmp_path / "nothing") is None


def test_meta_properties_mismatch_errors(tmp_path: Path) -> None:
    ensure_meta_properties([tmp_path / "a", tmp_path / "b"], broker_id=1, cluster_id="c1")
    assert read_meta_properties(tmp_path / "b") == MetaProperties(1, "c1")
    ensure_meta_properties([tmp_path / "a"], broker_id=1, cluster_id="c1")
    with pytest.raises(InconsistentBrokerIdError, match=r"broker\.id 2"):
        ensure_meta_properties([tmp_path / "a"], broker_id=2, cluster_id="c1")
    with pytest.raises(InconsistentClusterIdError, match="c2"):
        ensure_meta_properties([tmp_path / "a"], broker_id=1, cluster_id="c2")


def test_malformed_meta_properties(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=0\n")
    with pytest.raises(MetaPropertiesError):
        read_meta_properties(tmp_path)
