"""Build-ids: which binaries a recording saw, so that a file here is trusted only if it is the same one.

perf stores the build-id (`.note.gnu.build-id`) of every DSO a recording hit; `perf buildid-list`
prints them, one per line (a DSO perf found no build-id for has a blank first column, or no line):
    e59f954969893171a6b23be9244b941749e1257f /tmp/names-scratch/mydd
    93ac61ec5a8eb1396f9fbd350e3169a558528a40 /usr/lib/x86_64-linux-gnu/libc.so.6
    4a5a9b0affb66c437abcd455d2738af879985fa9 [kernel.kallsyms]
                                             /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
It reads them from the perf.data header (7 ms), and from the samples only where the header has
none (recorded with -B), which is why perf itself is asked rather than the header parsed here.
`perf script` text carries no build-ids at all: names taken from files here are then unverified.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..io import children
from ..io.perf import failure_reason, find_perf

LINE = re.compile(rb"^([0-9a-fA-F]+) (.+)$")
BUILD_ID_BYTES = 20  # perf's slot: older perf.data files pad shorter ids (lld's 8 bytes) with zeros


@dataclass(frozen=True)
class RecordedBuildIds:
    """The build-ids perf stored: DSO path, as `perf script` prints it -> the hex ids seen for it
    (more than one when recordings of different builds are folded together)."""

    by_path: Mapping[bytes, frozenset[str]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # why some recording's build-ids could not be read

    def merge(self, other: RecordedBuildIds) -> RecordedBuildIds:
        paths = {path: self.by_path.get(path, frozenset()) | ids for path, ids in other.by_path.items()}
        return RecordedBuildIds({**self.by_path, **paths}, self.problems + other.problems)


def parse_buildid_list(lines: Iterable[bytes]) -> dict[bytes, frozenset[str]]:
    """`perf buildid-list` output -> DSO path -> build-ids (lines without an id are left out)."""
    found: dict[bytes, set[str]] = {}
    for line in lines:
        match = LINE.match(line.rstrip(b"\r\n"))
        if match is not None:
            found.setdefault(match.group(2), set()).add(match.group(1).decode().lower())
    return {path: frozenset(ids) for path, ids in found.items()}


def read_recorded_build_ids(perf_data: str) -> RecordedBuildIds:
    """The build-ids stored in one perf.data; a failure is kept as a problem, never raised
    (perf script, which folds the same file next, reports a broken recording in its own words)."""
    try:
        proc = children.run([find_perf(), "buildid-list", "-i", perf_data], capture_output=True, check=False)
    except OSError as err:
        return RecordedBuildIds(problems=(f"{perf_data}: cannot run perf buildid-list: {err.strerror}",))
    if proc.returncode != 0:
        message = failure_reason(proc.stderr.decode(errors="replace"))
        return RecordedBuildIds(problems=(f"{perf_data}: perf buildid-list failed: {message}",))
    return RecordedBuildIds(parse_buildid_list(proc.stdout.splitlines()))


def same_build_id(a: str, b: str) -> bool:
    """Equal ids, allowing for the zero padding of perf's fixed 20-byte slot."""
    width = 2 * BUILD_ID_BYTES
    return a.lower().ljust(width, "0") == b.lower().ljust(width, "0")
