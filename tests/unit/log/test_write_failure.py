import errno
import os
from pathlib import Path

import pytest

from broker.log import segment as segment_module
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.log.record_codec import SimpleRecord, build_batch, decode_records


def _batch(value: bytes) -> bytearray:
    return bytearray(build_batch([SimpleRecord(None, value, (), 1000)]))


def test_failed_write_leaves_no_torn_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append_as_leader(_batch(b"first"), 0, 1)
    real_write = os.write

    def half_then_disk_full(fd: int, data: memoryview) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment_module.os, "write", half_then_disk_full)
    with pytest.raises(OSError):
        log.append_as_leader(_batch(b"lost"), 0, 1)
    monkeypatch.setattr(segment_module.os, "write", real_write)
    assert log.log_end_offset == 1
    assert log.append_as_leader(_batch(b"second"), 0, 1).first_offset == 1
    values = [r.value for r in decode_records(log.read(0, 1 << 20))]
    assert values == [b"first", b"second"]
    log.close()
    reopened = Log.open(tmp_path / "t-0", LogConfig())
    assert [r.value for r in decode_records(reopened.read(0, 1 << 20))] == [b"first", b"second"]
