"""perf.data's header read without perf (io/perf_header.py): a file we read is input like any other, so a
damaged or hostile header gives no attribute, never an exception or an unbounded read."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flamegraph.io.perf_header import MAX_ATTR_TABLE, read_event_attrs

U64 = st.one_of(st.integers(0, (1 << 64) - 1), st.sampled_from([0, 8, 16, 104, 136, 1 << 31, 1 << 63, (1 << 64) - 1]))
MAGIC = st.sampled_from([b"PERFILE2", b"2ELIFREP"])  # little- and big-endian files


def file_header(attr_size: int, offset: int, length: int, magic: bytes = b"PERFILE2") -> bytes:
    """perf_file_header: magic, size, attr_size, attrs {offset, size}, data {...}, event_types {...}, features."""
    return magic + struct.pack("<QQQQ", 104, attr_size, offset, length) + bytes(104 - 40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attr_size=U64, offset=U64, length=U64, tail=st.binary(max_size=600), magic=MAGIC)
def test_any_header_reads_as_attributes_or_none(
    tmp_path: Path, attr_size: int, offset: int, length: int, tail: bytes, magic: bytes
) -> None:
    path = tmp_path / "x.data"
    path.write_bytes(file_header(attr_size, offset, length, magic) + tail)  # big-endian: other numbers, same bytes
    attrs = read_event_attrs(str(path))  # must not raise
    size = path.stat().st_size
    assert len(attrs) * max(attr_size, 32) <= min(length, MAX_ATTR_TABLE, size)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=400))
def test_any_pipe_header_reads_as_attributes_or_none(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "pipe.data"
    path.write_bytes(b"PERFILE2" + struct.pack("<Q", 16) + body)
    read_event_attrs(str(path))  # must not raise


def test_a_header_pointing_past_the_file_is_no_traceback(tmp_path: Path) -> None:
    """The attribute table 2**63 bytes in (a seek Python cannot even make): fold says what perf says."""
    path = tmp_path / "hostile.data"
    path.write_bytes(file_header(136, 1 << 63, 136) + bytes(64))
    assert read_event_attrs(str(path)) == []
    done = subprocess.run([sys.executable, "-m", "flamegraph", "fold", str(path)], capture_output=True, text=True)
    assert "Traceback" not in done.stderr and done.returncode != 0, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3, done.stderr
