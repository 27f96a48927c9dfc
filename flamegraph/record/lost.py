"""Samples perf lost while recording: counted, as a share of the recording, in one line and a capture fact.

When perf cannot drain its buffers in time (a loaded machine, a slow disk, big DWARF stacks) the kernel
drops samples and perf record says so in its own words, at the end, among the program's output:

    Warning:
    Processed 7172 events and lost 132 chunks!

    Check IO/CPU overload!

    Warning:
    Processed 3489 samples and lost 24.88%!

Those lines are held back (`PerfWarnings`), and the exact figures are read from perf.data with
`perf report --stats` (~0.05 s; only when perf warned), whose per-event section reads:

    cpu-clock stats:
              SAMPLE events:       2621
        LOST_SAMPLES events:        868
and whose aggregated section counts the chunks (`LOST events:        132  ( 1.8%)`).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..io import children

LOST_CHUNKS = re.compile(r"^Processed (\d+) events and lost (\d+) chunks!$")
LOST_SHARE = re.compile(r"^Processed (\d+) samples and lost ([0-9.]+)%!$")
FOLLOWERS = ("", "Check IO/CPU overload!")  # what perf prints after its lost lines
STAT = re.compile(r"^\s*([A-Z_]+) events:\s+(\d+)")


@dataclass(frozen=True)
class LostSamples:
    """What perf could not record: `lost` samples (in `chunks` LOST records) beside `samples` recorded."""

    samples: int
    lost: int
    chunks: int

    @property
    def share(self) -> float:
        """The part of the recording lost, in [0, 1]."""
        total = self.samples + self.lost
        return self.lost / total if total else 0.0

    def fact(self) -> str:
        """The capture fact: '868 of 3,489 samples (24.9 %) in 132 chunks'."""
        chunks = f" in {self.chunks:,} chunks" if self.chunks else ""
        return f"{self.lost:,} of {self.samples + self.lost:,} samples ({100 * self.share:.1f} %){chunks}"

    def line(self) -> str:
        return (
            f"perf lost {self.fact()}: the machine or the disk could not keep up; the graph shows the "
            "rest (fewer samples: a lower --freq, a smaller --call-graph dwarf size)"
        )


class PerfWarnings:
    """Reads perf record's stderr line by line: its lost-samples warnings are kept here, not shown."""

    def __init__(self) -> None:
        self.chunks: int | None = None
        self.samples: int | None = None  # recorded + lost, as perf counts them in its warning
        self.percent: float | None = None
        self._pending: str | None = None  # a "Warning:" line, until the next line says what it warns of
        self._after_lost = False

    @property
    def seen(self) -> bool:
        return self.chunks is not None or self.percent is not None

    def take(self, line: str) -> list[str]:
        """The lines to pass on for `line` (none, it, or a held "Warning:" line and it)."""
        text = line.strip()
        chunks, share = LOST_CHUNKS.match(text), LOST_SHARE.match(text)
        if chunks is not None:
            self.chunks = int(chunks.group(2))
        if share is not None:
            self.samples, self.percent = int(share.group(1)), float(share.group(2))
        if chunks is not None or share is not None:
            self._pending, self._after_lost = None, True
            return []
        if self._after_lost and text in FOLLOWERS:
            return []
        self._after_lost = False
        held = [self._pending] if self._pending is not None else []
        self._pending = None
        if text == "Warning:":
            self._pending = line
            return held
        return [*held, line]

    def flush(self) -> list[str]:
        """A "Warning:" line still held at the end."""
        held = [self._pending] if self._pending is not None else []
        self._pending = None
        return held

    def estimate(self) -> LostSamples | None:
        """From perf's own words, when perf report cannot say (the share is rounded to 0.01 %)."""
        if self.samples is None or self.percent is None:
            return None
        lost = round(self.samples * self.percent / 100)
        return LostSamples(self.samples - lost, lost, self.chunks or 0)


def parse_stats(text: str) -> LostSamples | None:
    """`perf report --stats` -> the samples recorded and lost (summed over the events), and the chunks."""
    samples = lost = chunks = 0
    per_event = False
    for line in text.splitlines():
        if line.rstrip().endswith(" stats:") and not line.startswith("Aggregated"):
            per_event = True
            continue
        if (match := STAT.match(line)) is None:
            continue
        kind, count = match.group(1), int(match.group(2))
        if not per_event and kind == "LOST":
            chunks = count
        elif per_event and kind == "SAMPLE":
            samples += count
        elif per_event and kind == "LOST_SAMPLES":
            lost += count
    return LostSamples(samples, lost, chunks) if per_event else None


def read_lost(perf: str, perf_data: Path) -> LostSamples | None:
    try:
        proc = children.run(
            [perf, "report", "--stats", "-i", str(perf_data)], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_stats(proc.stdout) if proc.returncode == 0 else None
