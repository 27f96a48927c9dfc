"""What the join found, as typed facts: coverage, the per-operator and per-primitive tables (samples
beside the profiler's own time), the clock check; and their text for the CLI and the SVG header.

The operator table puts three measures side by side: the share of engine-thread samples under each
`[op]` frame (CPU time, sampled), the profiler's own time for that operator in the same window (the
sum of its spans: what `mx.profiler.dumps()` adds up; wall-clock), and, when perf recorded context
switches, the on-CPU part of that time. Agreement compares the first with the last: like with like.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .clock import Alignment, check_shift, clock_problems
from .intervals import Intervals
from .join import OP_ENGINE_BULK, Joiner, op_frame
from .switches import OffCpu

AGREEMENT_ABOVE = 5.0  # the goal compares operators above 5 % of either measure
HEADER_ROWS = 12  # rows of each table in the SVG header


@dataclass(frozen=True)
class Row:
    """One operator (or primitive): samples under its frame and what its own profiler timed."""

    frame: str
    samples: int
    sample_share: float  # % of engine-thread samples (operators) or of primitive samples
    calls: int
    timed_us: float  # the profiler's (or oneDNN's verbose) wall-clock time inside the window
    timed_share: float  # % of all timed operators (primitives)
    on_cpu_us: float | None = None  # the part of timed_us its thread was on the CPU (context switches)
    on_cpu_share: float | None = None  # % of all operators' on-CPU time

    @property
    def reference_share(self) -> float:
        """What the sample share should match: on-CPU time when known, else the profiler's time."""
        return self.on_cpu_share if self.on_cpu_share is not None else self.timed_share

    @property
    def gap(self) -> float:
        return self.sample_share - self.reference_share


@dataclass
class JoinSummary:
    operators: list[Row] = field(default_factory=list)
    primitives: list[Row] = field(default_factory=list)
    engine_samples: int = 0
    op_named: int = 0  # engine-thread samples under a named operator (or a segment naming its members)
    engine_bulk: int = 0  # ... under the engine's bulk, whose members MXNet does not record
    completions: int = 0  # ... of them in a completion callback after the operator's span
    jit_samples: int = 0
    jit_named: int = 0  # JIT-leaf samples under exactly one primitive
    window_s: float = 0.0
    alignment: Alignment | None = None
    primitive_check: list[tuple[float, float]] = field(default_factory=list)  # (shift µs, share inside)
    operator_check: list[tuple[float, float]] = field(default_factory=list)
    threads: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def op_coverage(self) -> float:
        return 100.0 * self.op_named / self.engine_samples if self.engine_samples else 0.0

    @property
    def jit_coverage(self) -> float:
        return 100.0 * self.jit_named / self.jit_samples if self.jit_samples else 0.0

    @property
    def worst_gap(self) -> Row | None:
        """The named operator above AGREEMENT_ABOVE % whose sample share differs most from its reference share."""
        rows = [
            r
            for r in self.operators
            if r.calls and not is_unnamed(r.frame) and max(r.sample_share, r.reference_share) > AGREEMENT_ABOVE
        ]
        return max(rows, key=lambda r: abs(r.gap)) if rows else None


def summarize(joiner: Joiner) -> JoinSummary:
    counts = joiner.counts
    summary = JoinSummary(engine_samples=counts.engine, jit_samples=counts.jit, jit_named=counts.jit_named)
    summary.completions = counts.completions
    summary.alignment = joiner.alignment
    summary.threads = joiner.threads.describe()
    verbose_problems = list(joiner.verbose.problems) if joiner.verbose is not None else []
    summary.problems = list(joiner.trace.problems) + verbose_problems
    if counts.no_time:
        summary.problems.append(f"{counts.no_time:,} samples without a readable time: no frames added")
    first, last = counts.first, counts.last
    if last < first:
        return summary
    summary.window_s = (last - first) / 1e6
    summary.op_named = sum(n for name, n in counts.ops.items() if not is_unnamed(name))
    summary.engine_bulk = counts.ops.get(OP_ENGINE_BULK, 0)
    summary.operators = _rows(counts.ops, counts.engine, operator_times(joiner, first, last))
    if joiner.verbose is not None:
        executed = {k: (calls, time, None) for k, (calls, time) in joiner.verbose.aggregate(first, last).items()}
        summary.primitives = _rows(counts.primitives, sum(counts.primitives.values()), executed)
        verbose = joiner.verbose
        summary.primitive_check = check_shift(joiner.primitive_times.values, lambda t: bool(verbose.at(t)))
    indexes = list(joiner.by_tid.values())
    summary.operator_check = check_shift(
        joiner.operator_times.values, lambda t: any(index.at(t) is not None for index in indexes)
    )
    checks = {
        "samples executing a primitive": summary.primitive_check,
        "samples in ExecuteOprBlock": summary.operator_check,
    }
    summary.problems.extend(clock_problems(joiner.alignment, joiner.period_us, checks))
    return summary


Timed = dict[str, list[float]]  # frame -> [calls, wall-clock µs, on-CPU µs (NaN: no switches)] of one thread's spans


def operator_times(joiner: Joiner, first: float, last: float) -> dict[str, tuple[int, float, float | None]]:
    """frame -> (calls, wall-clock µs, on-CPU µs or None) of the mapped threads' spans in [first, last]; a
    thread's first spans as timed while the run went (`Joiner.spans_timed`: running.py), then the rest."""
    timed: dict[str, tuple[int, float, float | None]] = {}
    for tid, profiler_tid in joiner.threads.by_tid.items():
        index = joiner.trace.threads.get(profiler_tid)
        if index is None:
            continue
        off = joiner.off_cpu.get(tid) if joiner.off_cpu else None
        done, sums = 0, {}
        if (before := joiner.spans_timed.get(tid)) is not None and before[0] == profiler_tid:
            done, sums = before[1], {frame: list(values) for frame, values in before[2].items()}
        time_spans(index.intervals, done, len(index.intervals), off, bool(joiner.off_cpu), first, last, sums)
        for frame, (calls, time, on) in sums.items():
            was_calls, was_time, was_on = timed.get(frame, (0, 0.0, 0.0 if joiner.off_cpu else None))
            timed[frame] = (was_calls + int(calls), was_time + time, None if was_on is None else was_on + on)
    return timed


def time_spans(
    intervals: Intervals, begin: int, stop: int, off: OffCpu | None, switches: bool, first: float, last: float,
    sums: Timed,
) -> None:
    """One thread's spans at positions [begin, stop), clipped to [first, last], added to `sums` in order (the
    same figures when continued later from where it stopped)."""
    for i in range(begin, stop):
        span_start, span_end, name = intervals.triple(i)
        start, end = max(span_start, first), min(span_end, last)
        if end < start:
            continue
        values = sums.setdefault(op_frame(name), [0, 0.0, 0.0 if switches else math.nan])
        values[0] += 1
        values[1] += end - start
        if switches:
            values[2] += (end - start) - (off.off_between(start, end) if off is not None else 0.0)


def is_unnamed(frame: str) -> bool:
    """`[op] (none)`, `[dnnl] (ambiguous: ...)`...: frames that say no single name fits."""
    return frame.partition("] ")[2].startswith("(")


def _rows(samples: Mapping[str, int], total: int, timed: Mapping[str, tuple[int, float, float | None]]) -> list[Row]:
    """Named rows by samples, then by timed share; the unnamed ones last."""
    all_time = sum(time for _, time, _ in timed.values()) or 1.0
    all_on = sum(on or 0.0 for _, _, on in timed.values()) or 1.0
    rows = []
    for name in set(samples) | set(timed):
        calls, time, on = timed.get(name, (0, 0.0, None))
        n = samples.get(name, 0)
        share = 100.0 * n / total if total else 0.0
        on_share = 100.0 * on / all_on if on is not None else None
        rows.append(Row(name, n, share, calls, time, 100.0 * time / all_time, on, on_share))
    rows.sort(key=lambda r: (is_unnamed(r.frame), -r.samples, -r.timed_us, r.frame))
    return rows


def _check_text(check: list[tuple[float, float]]) -> str:
    if not check:
        return "no samples to check"
    at_zero = next(share for shift, share in check if shift == 0)
    best_shift, best = max(check, key=lambda item: (item[1], -abs(item[0])))
    return f"{100 * at_zero:.1f} % inside at the measured offset; best shift {best_shift:+.0f} µs ({100 * best:.1f} %)"


def coverage_text(summary: JoinSummary) -> str:
    text = f"{summary.op_coverage:.1f} % of {summary.engine_samples:,} engine-thread samples under an [op] frame"
    if summary.engine_bulk and summary.engine_samples:
        text += (
            f" ({100 * summary.engine_bulk / summary.engine_samples:.1f} % under the engine's bulks, ImperativeBulk:"
            " MXNet records no operator names for them; MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD/_BWD=0 names them)"
        )
    if summary.jit_samples:
        text += f"; {summary.jit_coverage:.1f} % of {summary.jit_samples:,} JIT-kernel samples under a [dnnl] frame"
    return text


def agreement_text(summary: JoinSummary) -> str:
    worst = summary.worst_gap
    if worst is None:
        return f"no operator above {AGREEMENT_ABOVE:.0f} %"
    measure = "of the profiler's time on CPU" if worst.on_cpu_share is not None else "of the profiler's time"
    return (
        f"largest gap {abs(worst.gap):.1f} points ({worst.frame}: {worst.sample_share:.1f} % of samples, "
        f"{worst.reference_share:.1f} % {measure}) among operators above {AGREEMENT_ABOVE:.0f} %"
    )


def table_lines(rows: list[Row], what: str, timed_by: str, limit: int | None = None) -> list[str]:
    shown = rows if limit is None else rows[:limit]
    on_cpu = any(r.on_cpu_us is not None for r in rows)
    extra = f" {'on-CPU':>10} {'share':>7}" if on_cpu else ""
    lines = [f"  {'samples':>8} {'share':>7} {timed_by:>10} {'share':>7}{extra} {'calls':>8}  {what}"]
    for r in shown:
        cells = f"  {r.samples:>8,} {r.sample_share:>6.1f}% {r.timed_us / 1000:>8.1f}ms {r.timed_share:>6.1f}%"
        if on_cpu:
            if r.on_cpu_us is not None and r.on_cpu_share is not None:
                cells += f" {r.on_cpu_us / 1000:>8.1f}ms {r.on_cpu_share:>6.1f}%"
            else:
                cells += f" {'-':>10} {'-':>7}"
        lines.append(f"{cells} {r.calls:>8,}  {r.frame}")
    if limit is not None and len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more")
    return lines


def summary_lines(summary: JoinSummary) -> list[str]:
    """The CLI's report: facts first, then both tables."""
    lines = [f"mxnet: {coverage_text(summary)}"]
    if summary.completions:
        lines.append(
            f"mxnet: {summary.completions:,} of them in an operator's completion callback, after its span ended"
        )
    if summary.alignment is not None:
        lines.append(f"mxnet: clock {summary.alignment.describe()}")
    if summary.primitive_check:
        lines.append(f"mxnet: clock check, samples executing a primitive: {_check_text(summary.primitive_check)}")
    if summary.operator_check:
        lines.append(f"mxnet: clock check, samples in ExecuteOprBlock: {_check_text(summary.operator_check)}")
    lines.append(f"mxnet: threads: {summary.threads}")
    lines.extend(f"mxnet: problem: {p}" for p in summary.problems)
    if summary.operators:
        lines.append(f"mxnet: agreement: {agreement_text(summary)}")
        lines.append(
            f"MXNet operators ({summary.window_s:.2f} s; share of engine-thread samples vs the profiler's time, "
            "all of it and the part on CPU):"
        )
        lines.extend(table_lines(summary.operators, "operator", "profiler"))
    if summary.primitives:
        lines.append("oneDNN primitives (share of samples executing one vs oneDNN's verbose time):")
        lines.extend(table_lines(summary.primitives, "primitive", "verbose"))
    return lines


def summary_metadata(summary: JoinSummary) -> dict[str, str]:
    """Facts and the tables' top rows for the SVG header (a line each)."""
    meta = {"MXNet coverage": coverage_text(summary)}
    if summary.operators:
        meta["MXNet agreement"] = agreement_text(summary)
    if summary.alignment is not None:
        check = f"; data: {_check_text(summary.primitive_check)}" if summary.primitive_check else ""
        meta["MXNet clock"] = f"residual ≤ {summary.alignment.residual * 1e6:.1f} µs{check}"
    meta["MXNet threads"] = summary.threads
    for r in summary.operators[:HEADER_ROWS]:
        on_cpu = ""
        if r.on_cpu_us is not None and r.on_cpu_share is not None:
            on_cpu = f", on CPU {r.on_cpu_us / 1000:,.1f} ms ({r.on_cpu_share:.1f} %)"
        meta[r.frame] = (
            f"{r.samples:,} samples ({r.sample_share:.1f} % of engine-thread samples) · profiler "
            f"{r.timed_us / 1000:,.1f} ms ({r.timed_share:.1f} %){on_cpu}, {r.calls:,} calls"
        )
    for r in summary.primitives[:HEADER_ROWS]:
        meta[r.frame] = (
            f"{r.samples:,} samples ({r.sample_share:.1f} %) · verbose {r.timed_us / 1000:,.1f} ms "
            f"({r.timed_share:.1f} %), {r.calls:,} executions"
        )
    if summary.problems:
        meta["MXNet problems"] = "; ".join(summary.problems)
    return meta
