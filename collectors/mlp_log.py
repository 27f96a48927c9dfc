"""The MLP trainer's output lines: written by `train_mlp`, read back by the drivers (no mxnet here).

Lines it handles:
    PID 20558
    TRAIN_START 1100.090395
    epoch 0 train-acc 0.9242 val-acc 0.9599 time 1.55s 38734 samples/s
    EPOCH_END 1102.012345 cpu 3.104
    TRAIN_END 1108.310021
    TRAIN_END 1103.901234 (interrupted)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flamegraph.window import Window

EPOCH = re.compile(r"^epoch (\d+) train-acc ([0-9.]+) val-acc ([0-9.]+) time ([0-9.]+)s ([0-9.]+) samples/s\s*$")
MARKER = re.compile(r"^(TRAIN_START|TRAIN_END|EPOCH_END|PID) ([0-9.]+)(?: \(interrupted\)| cpu ([0-9.]+))?\s*$")


def format_epoch(epoch: int, train_acc: float, val_acc: float, seconds: float, rate: float) -> str:
    accuracy = f"train-acc {train_acc:.4f} val-acc {val_acc:.4f}"
    return f"epoch {epoch} {accuracy} time {seconds:.2f}s {rate:.0f} samples/s"


def format_marker(name: str, clock: float) -> str:
    return f"{name} {clock:.6f}"


@dataclass(frozen=True)
class Epoch:
    index: int
    train_acc: float
    val_acc: float
    seconds: float
    samples_per_s: float


@dataclass
class TrainLog:
    """What the trainer printed so far; feed it lines as they come (`feed` ignores the others)."""

    pid: int | None = None
    start: float | None = None
    end: float | None = None
    epochs: list[Epoch] = field(default_factory=list)
    epoch_ends: list[float] = field(default_factory=list)  # EPOCH_END: each epoch's end (training and scoring)
    epoch_cpu: list[float] = field(default_factory=list)  # CPU seconds of each epoch's training, all threads

    def feed(self, line: str) -> None:
        if match := EPOCH.match(line):
            i, tr, va, sec, rate = match.groups()
            self.epochs.append(Epoch(int(i), float(tr), float(va), float(sec), float(rate)))
        elif match := MARKER.match(line):
            name, value, cpu = match.groups()
            if name == "PID":
                self.pid = int(float(value))
            elif name == "EPOCH_END":
                self.epoch_ends.append(float(value))
                if cpu is not None:
                    self.epoch_cpu.append(float(cpu))
            elif name == "TRAIN_START":
                self.start = float(value)
            else:
                self.end = float(value)

    @property
    def window(self) -> Window | None:
        """The training window in CLOCK_MONOTONIC seconds, when both markers were seen."""
        return Window(self.start, self.end) if self.start is not None and self.end is not None else None

    def epoch_windows(self) -> list[Window]:
        """Each finished epoch's window (from TRAIN_START or the previous epoch's end to its EPOCH_END), in
        CLOCK_MONOTONIC seconds: `perf script --time` bounds."""
        if self.start is None:
            return []
        starts = [self.start, *self.epoch_ends[:-1]]
        return [Window(start, end) for start, end in zip(starts, self.epoch_ends, strict=True)]

    def mean_cpu(self) -> float | None:
        """Mean CPU seconds per epoch's training (all threads)."""
        return sum(self.epoch_cpu) / len(self.epoch_cpu) if self.epoch_cpu else None

    def mean_rate(self, skip_first: bool = False) -> float | None:
        """Mean samples/s over the epochs (optionally without the warm-up epoch 0)."""
        rates = [e.samples_per_s for e in self.epochs[1 if skip_first and len(self.epochs) > 1 else 0 :]]
        return sum(rates) / len(rates) if rates else None

    def merged(self, other: TrainLog) -> TrainLog:
        """This run's markers with the epochs of both runs (for throughput over several runs)."""
        return TrainLog(
            self.pid,
            self.start,
            self.end,
            [*self.epochs, *other.epochs],
            self.epoch_ends,
            [*self.epoch_cpu, *other.epoch_cpu],
        )

    def best_rate(self) -> float | None:
        """The fastest epoch's samples/s: least disturbed by other work on a shared machine."""
        return max((e.samples_per_s for e in self.epochs), default=None)

    @property
    def val_acc(self) -> float | None:
        return self.epochs[-1].val_acc if self.epochs else None


def parse_log(text: str) -> TrainLog:
    log = TrainLog()
    for line in text.splitlines():
        log.feed(line)
    return log
