"""`flamegraph record --mxnet`: switch MXNet's profiler and oneDNN's verbose log on, then join them.

prepare: a Python command runs through the in-process hook with `--mxnet-dir DIR` (shared with
         --jit's hook: one wrapper), and DNNL_VERBOSE=1, DNNL_VERBOSE_TIMESTAMP=1 and bulk
         execution off are added to its environment unless the user set them. With --pid nothing
         can be switched on: MXNet 1.9 starts its profiler only from inside the process.
         perf also records context switches (--switch-events, a few hundred KB/s) so that the
         profiler's wall-clock time can be split into on- and off-CPU time (oncpu.py).
finish:  reads the sidecar the process left (clocks, file names, notes).
joiner:  loads the trace and the verbose log (a missing, empty, truncated or garbled one is one
         line and no frames of that kind), takes the thread map the process recorded (else learns
         it from a first `perf script` pass: which TIDs sample ExecuteOprBlock, or the naive engine's
         PushAsync, when), reads the threads' context switches in that pass, and returns the fold's
         sample hook. A streamed recording gives that evidence from the samples it kept (deferred.py).
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...folding.grammar import SWITCH_ANYWHERE, THREAD_TIME
from ...io.inputs import parse_json
from ...io.perf import script_command, stream_script
from ...io.private import private_dir
from ...model import FoldedProfile
from ...record.spec import Recording, RecordSpec
from ...window import Window
from ..jit.hook import hook_command, user_command
from .clock import Alignment, ClockReading
from .dnnl import VerboseLog, read_verbose
from .gate import RECORDED_FROM, open_gate
from .inprocess import PROFILE_MEMORY, bulk_settings, environment_to_set
from .instruments import DUMP_FRAME, PROFILER_THREAD_B, TRACE_DRAIN_B, VERBOSE_B, WATCH_B, instrumentation_shares
from .join import Joiner, thread_of
from .limit import CAPS, capped_text, split_budget
from .profile import ProfilerTrace, read_profile
from .segment_reader import SegmentReaders
from .segments import SEGMENTS, parse_byte_pair, split_segments
from .storage import BytesRow, bytes_lines, bytes_rows, check_text
from .summary import JoinSummary, summarize, summary_lines, summary_metadata
from .switches import off_cpu_intervals
from .threads import ThreadMapping, learn_thread_map, recorded_threads

SIDECAR = re.compile(r"^mxnet-(\d+)\.json$")
PREVIOUS = re.compile(r"^(mxnet-\d+\.json|profile-\d+\.json|dnnl-verbose-\d+\.log)$")
EXECUTE_TEXT = b"ThreadedEngine::ExecuteOprBlock"
NAIVE_TEXT = b"NaiveEngine::PushAsync"  # MXNET_ENGINE_TYPE=NaiveEngine: the operator runs inside the push
SWITCH_EVENTS = "--switch-events"  # context switches: the profiler's time split into on- and off-CPU
# Measured on the hybridized Gluon CNN of tests/test_mxnet_users.py (docs/mxnet.md, "Bulk execution").
BULK_COST = "measured cost: none above noise (CPU per Gluon training step, median of 4 runs: 17.8 ms off, 19.1 ms on)"
ATTACH_NOTE = (
    "--mxnet with --pid: MXNet 1.9 starts its profiler only from inside the process "
    "(mx.profiler.set_state, or MXNET_PROFILER_AUTOSTART at start-up) and offers no outside switch; "
    "folding without [op]/[dnnl] frames (launch the command with --mxnet instead)"
)


@dataclass
class ProcessInputs:
    """What one profiled process left in the directory."""

    pid: int
    facts: dict[str, Any]
    alignment: Alignment | None = None
    trace: ProfilerTrace = field(default_factory=ProfilerTrace)
    verbose: VerboseLog | None = None
    problems: list[str] = field(default_factory=list)  # one line each

    @property
    def usable(self) -> bool:
        return self.alignment is not None and (self.trace.spans > 0 or bool(self.verbose and len(self.verbose)))


# The hook's facts file: a few KiB, nested a few levels (the thread map); travels with the recording.
MAX_SIDECAR_BYTES, MAX_SIDECAR_DEPTH = 1 << 20, 8


def read_sidecars(directory: Path) -> list[dict[str, Any]]:
    found = []
    for entry in sorted(directory.iterdir()) if directory.is_dir() else []:
        if not SIDECAR.match(entry.name):
            continue
        try:
            with open(entry, "rb") as f:
                data = f.read(MAX_SIDECAR_BYTES + 1)
            facts = parse_json(data, MAX_SIDECAR_DEPTH) if len(data) <= MAX_SIDECAR_BYTES else None
        except (OSError, ValueError):  # TooDeep is a ValueError
            continue
        if isinstance(facts, dict) and isinstance(facts.get("pid"), int):
            found.append(facts)
    return found


def resolve(directory: Path | None, path: object) -> str:
    """A file the sidecar names: where it was written, else beside the sidecar (a moved directory)."""
    text = str(path or "")
    if directory is None or not text:
        return text
    if not os.path.isabs(text):
        return str(directory / text)
    moved = directory / os.path.basename(text)
    return str(moved) if not os.path.exists(text) and moved.exists() else text


def load_process(
    facts: dict[str, Any], directory: Path | None = None, segments: SegmentReaders | None = None
) -> ProcessInputs:
    """Read the process's trace and verbose log (the files the sidecar names, found beside it if the
    directory moved; or, written in segments, what `segments` read of them as the run went); every problem
    becomes one line, never an error."""
    segmented = segments if isinstance(facts.get("segments"), dict) else None
    inputs = ProcessInputs(facts["pid"], facts)
    try:
        start = ClockReading.from_list(facts["clock_start"])
        end = ClockReading.from_list(facts["clock_end"]) if facts.get("clock_end") else None
        inputs.alignment = Alignment(start, end, middle_readings(facts))
        if end is None:
            inputs.problems.append("the process did not reach its exit handler: clock measured at start only")
    except (KeyError, TypeError, ValueError):
        inputs.problems.append("the sidecar holds no clock reading: nothing can be aligned")
    inputs.problems.extend(facts.get("notes") or [])
    profile = resolve(directory, facts.get("profile"))
    try:
        read = segmented.trace(profile) if segmented is not None else None
        inputs.trace = read if read is not None else read_profile(profile)
        inputs.problems.extend(f"{profile}: {p}" for p in inputs.trace.problems)
        inputs.trace.problems = []
    except OSError as err:
        inputs.problems.append(f"{profile or 'profile'}: cannot read the profiler's trace: {err.strerror or err}")
    verbose = resolve(directory, facts.get("verbose"))
    try:
        log = segmented.verbose(verbose) if segmented is not None else None
        inputs.verbose = log if log is not None else read_verbose(verbose)
        inputs.problems.extend(f"{verbose}: {p}" for p in inputs.verbose.problems)
        inputs.verbose.problems = []
        if not len(inputs.verbose):
            inputs.problems.append(
                f"{verbose}: no primitive executions (DNNL_VERBOSE off, or no oneDNN: no [dnnl] frames)"
            )
            inputs.verbose = None
    except OSError as err:
        inputs.problems.append(f"{verbose or 'verbose log'}: cannot read oneDNN's verbose log: {err.strerror or err}")
    return inputs


def middle_readings(facts: dict[str, Any]) -> tuple[ClockReading, ...]:
    """The clocks the process read while it ran (the sidecar's "clocks", written when the run is joined as it
    goes: inprocess.py); an unreadable list is none."""
    listed = facts.get("clocks")
    try:
        return tuple(ClockReading.from_list(values) for values in listed) if isinstance(listed, list) else ()
    except (TypeError, ValueError):
        return ()


def recorded_map(facts: dict[str, Any]) -> tuple[dict[int, list[int]] | None, str]:
    """The profiler tid -> Linux TIDs map the process left in its sidecar (pthreads.py), or None and
    why there is none (one line)."""
    if "threads" not in facts:
        return None, "the sidecar holds no thread map: written by an older hook"
    threads = facts["threads"]
    if threads is None:
        return None, "the process did not reach its exit handler, where the thread map is recorded"
    if not isinstance(threads, dict) or not isinstance(threads.get("map"), dict):
        return None, "the sidecar's thread map is unreadable"
    if threads.get("problem"):
        return None, f"the process could not record its thread map: {threads['problem']}"
    try:
        recorded = {int(p): [int(tid) for tid in tids] for p, tids in threads["map"].items()}
    except (TypeError, ValueError):
        return None, "the sidecar's thread map is unreadable"
    if not recorded:
        return None, "the process recorded an empty thread map"
    return recorded, ""


def python_tids(facts: dict[str, Any]) -> set[int]:
    """The TIDs of the process's Python threads: its main thread (TID = pid), and those its sidecar lists."""
    threads = facts.get("threads")
    listed = threads.get("python") if isinstance(threads, dict) else None
    found = {tid for tid in listed if isinstance(tid, int)} if isinstance(listed, list) else set()
    return found | {facts["pid"]}


@dataclass
class Evidence:
    """From the first pass: each TID's samples in ExecuteOprBlock, and its context switches."""

    engine_times: dict[int, list[float]] = field(default_factory=dict)  # µs of CLOCK_REALTIME, sorted
    switches: dict[int, list[tuple[float, bool]]] = field(default_factory=dict)  # (time, switched out?)
    dumpers: set[int] = field(default_factory=set)  # TIDs seen inside Profiler::DumpProfile
    last: float = 0.0  # the last time seen


def evidence_command(recording: Recording, window: Window | None) -> list[str]:
    """The first `perf script` pass: sample times and stacks (for ExecuteOprBlock) and the switches."""
    extra = ["-F", "tid,time,ip,sym", "--show-switch-events"]
    if window is not None:
        extra += ["--time", window.perf_time()]
    return script_command(str(recording.perf_data), extra=extra)


def read_evidence(
    recording: Recording, window: Window | None, alignment: Alignment
) -> Evidence:
    """A first `perf script` pass over the same window, read for the thread map's evidence only
    (it must be complete before the fold adds the first frame) and the context switches."""
    with stream_script(evidence_command(recording, window), str(recording.perf_data)) as lines:
        return parse_evidence(lines, alignment)


def parse_evidence(lines: Iterable[bytes], alignment: Alignment) -> Evidence:
    """`perf script` text (any header layout with tid and time) -> the evidence. Lines it reads:
          14964   459.672705:                                 <- -F tid,time,ip,sym: a sample
    \t         13a364b mxnet::engine::ThreadedEngine::ExecuteOprBlock
          14964   459.674618: PERF_RECORD_SWITCH OUT preempt  <- --show-switch-events
    """
    evidence = Evidence()
    header: re.Match[bytes] | None = None
    counted = dumped = False
    for line in lines:
        if line[:1] != b"\t":  # a sample header, a switch record, or the blank line after a record
            header, counted, dumped = THREAD_TIME.search(line), False, False
            if header is not None and b"PERF_RECORD_SWITCH" in line:
                if (switch := SWITCH_ANYWHERE.search(line)) is not None:
                    t = alignment.realtime_us(float(header.group(3)))
                    evidence.switches.setdefault(thread_of(header), []).append((t, switch.group(1) == b"OUT"))
                    evidence.last = max(evidence.last, t)
                header = None
        elif header is not None and not counted and (EXECUTE_TEXT in line or NAIVE_TEXT in line):
            t = alignment.realtime_us(float(header.group(3)))
            evidence.engine_times.setdefault(thread_of(header), []).append(t)
            evidence.last = max(evidence.last, t)
            counted = True
        if header is not None and not dumped and DUMP_FRAME in line:
            evidence.dumpers.add(thread_of(header))
            dumped = True
    for values in evidence.engine_times.values():
        values.sort()
    return evidence


@dataclass
class MxnetHook:
    """The `RecordHook` of `flamegraph record --mxnet`; `note` prints one line for the user."""

    directory: Path
    note: Callable[[str], None] = print
    hooked: bool = False
    summary: dict[str, str] = field(default_factory=dict)  # metadata for the SVG header
    processes: list[dict[str, Any]] = field(default_factory=list)
    last: JoinSummary | None = None  # what the last `report` found
    timing: str = ""  # what building the joiner cost
    memory: bool = False  # record --memory: the profiler's storage counters on too (the bytes table's check)
    budget: int | None = None  # bytes for the trace and the log together (streamed: --max-spool); None: unbounded
    segments: SegmentReaders | None = None  # streamed: the files written in segments, read as the run goes

    def prepare(self, spec: RecordSpec) -> RecordSpec:
        if spec.pid is not None:
            self.note(f"flamegraph: {ATTACH_NOTE}")
            self.summary["MXNet"] = "not joined: attached with --pid (MXNet has no outside switch for its profiler)"
            return spec
        self.directory = private_dir(self.directory)  # the hook and MXNet's profiler write there by name
        for entry in self.directory.iterdir():
            if PREVIOUS.match(entry.name):
                entry.unlink(missing_ok=True)
        wrapped = hook_command(spec.command, ("--mxnet-dir", str(self.directory)))
        if wrapped is None:
            self.note("flamegraph: --mxnet ignored: it works for Python commands (python SCRIPT, -m MODULE, -c CODE)")
            return spec
        self.hooked = True
        self.summary["command"] = shlex.join(user_command(spec.command))  # the user's, not the wrapped one
        env = environment_to_set({*os.environ, *spec.env})
        gate: list[str] = []
        if self.memory:  # the storage counters, and perf's events held until `import mxnet` has finished
            gate, gate_env = open_gate(self.directory)
            env.update({PROFILE_MEMORY: "1", **gate_env})
            self.summary["allocations recorded"] = RECORDED_FROM
        self.note(bulk_line(bulk_settings({**os.environ, **spec.env, **env})))
        if self.budget is not None and CAPS not in {*os.environ, *spec.env}:  # (a user's own split is kept)
            env[CAPS] = ",".join(str(cap) for cap in split_budget(self.budget))
        caps = parse_byte_pair({**os.environ, **spec.env, **env}.get(CAPS))
        if self.segments is not None and caps is not None:
            self.segments.caps = caps  # (read while the program runs only as these need)
            if SEGMENTS not in {*os.environ, *spec.env}:
                env[SEGMENTS] = ",".join(str(size) for size in split_segments(caps))  # read and deleted
        if self.segments is None:
            env[SEGMENTS] = "0"  # nothing here reads segments (recorded whole): one file each, whatever is inherited
        how = spec.options
        extra = how.extra_args if SWITCH_EVENTS in how.extra_args else (*how.extra_args, SWITCH_EVENTS)
        extra = (*extra, *gate)
        return spec.replace(command=wrapped, env={**spec.env, **env}, options=how.replace(extra_args=extra))

    def finish(self, recording: Recording) -> Recording:
        if self.segments is not None:
            self.segments.finish()  # the program has ended: the segments' rest read before the sidecar is
        if self.hooked:
            self.processes = read_sidecars(self.directory)
            if not self.processes:
                self.note(
                    f"flamegraph: --mxnet: the process left no sidecar in {self.directory}: no [op]/[dnnl] frames"
                )
            for facts in self.processes:
                self.summary.update(output_facts(facts, self.segments))
                if (line := cap_line(facts, self.segments)) is not None:
                    self.summary["MXNet instruments"] = line
                    self.note(f"flamegraph: --mxnet: pid {facts['pid']}: {line}")
            if self.memory and not any(facts.get("perf_enabled") for facts in self.processes):
                self.summary["allocations recorded"] = "none: perf's events were never enabled"
                self.note("flamegraph: --memory --mxnet: perf's events are enabled once the program has imported "
                          "mxnet, and they never were: no allocations recorded")  # fmt: skip
        recording.metadata.update(self.summary)
        return recording

    def joiner(
        self, recording: Recording, window: Window | None, gathered: Callable[[Alignment], Evidence] | None = None
    ) -> Joiner | None:
        """The fold's sample hook, or None (with one line saying why) when nothing can be joined. The evidence
        is read in a first `perf script` pass, or `gathered` while a streamed recording was folded."""
        started = time.perf_counter()
        candidates = [load_process(facts, self.directory, self.segments) for facts in self.processes]
        usable = [c for c in candidates if c.usable]
        for inputs in candidates:
            for problem in inputs.problems:
                self.note(f"flamegraph: --mxnet: pid {inputs.pid}: {problem}")
        if not usable:
            if candidates:
                self.note(
                    "flamegraph: --mxnet: neither a profiler trace nor a verbose log to join: no [op]/[dnnl] frames"
                )
            return None
        inputs = max(usable, key=lambda c: c.trace.spans + (len(c.verbose) if c.verbose else 0))
        assert inputs.alignment is not None
        loaded = time.perf_counter()
        alignment = inputs.alignment
        evidence = read_evidence(recording, window, alignment) if gathered is None else gathered(alignment)
        recorded, why = recorded_map(inputs.facts)
        thread_map: ThreadMapping = (
            recorded_threads(inputs.trace.threads, recorded)
            if recorded is not None
            else learn_thread_map(inputs.trace.threads, evidence.engine_times, why)
        )
        passed = time.perf_counter() - loaded
        second = "first perf script pass" if gathered is None else "the streamed samples' evidence"
        self.timing = f"trace and log read in {loaded - started:.2f} s, {second} {passed:.2f} s"
        joiner = Joiner(inputs.trace, inputs.verbose, inputs.alignment, thread_map)
        # A Python thread that runs a few operators itself (the main thread does) is no engine thread:
        # only its samples in ExecuteOprBlock or under an [op] frame count as engine-thread samples.
        python = python_tids(inputs.facts)
        joiner.engine_tids = {tid for tid in joiner.by_tid if tid in evidence.engine_times and tid not in python}
        joiner.instrument_threads = instrument_threads(inputs.facts, evidence.dumpers, python)
        if evidence.switches:
            joiner.off_cpu = off_cpu_intervals(evidence.switches, evidence.last)
        joiner.until = capped_at(inputs.facts)
        freq = recording.spec.options.freq
        joiner.period_us = 1e6 / freq if freq else None
        return joiner

    def report(self, joiner: Joiner, profile: FoldedProfile) -> JoinSummary:
        """After the fold: print coverage, clock, threads and both tables; put them in the header."""
        summary = summarize(joiner)
        for line in summary_lines(summary):
            self.note(line)
        profile.metadata.update(summary_metadata(summary))
        if joiner.counts.after_cap:
            after = (
                f"{joiner.counts.after_cap:,} of {joiner.counts.samples:,} samples came after the instruments were "
                "stopped at their cap: no [op]/[dnnl] frame in them (a larger --max-spool names more)"
            )
            self.note(f"mxnet: {after}")
            profile.metadata["MXNet after the cap"] = after
        instrumentation = instrumentation_fact(profile, "samples")
        profile.metadata["instrumentation"] = instrumentation
        self.note(f"mxnet: instrumentation: {instrumentation}")
        if self.timing:
            profile.metadata["MXNet join after the run"] = self.timing
            self.note(f"mxnet: join after the run: {self.timing}")
        self.last = summary
        return summary

    def report_waits(self, joiner: Joiner, profile: FoldedProfile) -> None:
        """After an off-CPU fold (the join ran once per switch-out): how many engine-thread waits sit under
        a named [op] frame, and the instruments' share of the off-CPU time (printed, in the header)."""
        counts = joiner.counts
        named = sum(n for name, n in counts.ops.items() if not name.startswith("[op] ("))
        self.note(f"mxnet: {named:,} of {counts.engine:,} switch-outs of engine threads under a named [op] frame")
        profile.metadata["MXNet"] = (
            f"waits under the [op] frame of the operator running at the switch-out ({named:,} of {counts.engine:,})"
        )
        instrumentation = instrumentation_fact(profile, "off-CPU time")
        profile.metadata["instrumentation"] = instrumentation
        self.note(f"mxnet: instrumentation: {instrumentation}")


    def report_bytes(self, joiner: Joiner, profile: FoldedProfile) -> list[BytesRow]:
        """After a memory fold: bytes per operator beside the profiler's storage counters (printed, in the header)."""
        rows = bytes_rows(profile, joiner.trace)
        for line in bytes_lines(rows, profile.metadata):
            self.note(line)
        if rows:
            profile.metadata["MXNet bytes per operator"] = check_text(rows, profile.metadata)
        return rows


def instrument_threads(facts: dict[str, Any], dumpers: set[int], python: set[int]) -> dict[int, bytes]:
    """TID -> [instrumentation] frame of the threads that are our instruments, identified exactly:
    MXNet's dump thread is the thread outside Python that ran Profiler::DumpProfile (MXNet calls it
    only from its dump timer and from the C API, on the calling Python thread); our watcher's TID is
    in the sidecar, and so are the PIDs of the processes that write oneDNN's log and MXNet's trace
    (drain.py); the hook writes the dump timer's TID too (the one thread `set_config` started), so a timer never
    seen dumping (a short run on a fast machine) is named as well."""
    found = {tid: PROFILER_THREAD_B for tid in dumpers - python}
    timer = facts.get("dump_thread")
    if isinstance(timer, int) and not isinstance(timer, bool) and timer > 0 and timer not in python:
        found[timer] = PROFILER_THREAD_B
    threads = facts.get("threads")
    watch = threads.get("watch") if isinstance(threads, dict) else None
    if isinstance(watch, int) and not isinstance(watch, bool):
        found[watch] = WATCH_B
    for key, label in (("verbose_drain", VERBOSE_B), ("trace_drain", TRACE_DRAIN_B)):
        drainer = facts.get(key)  # a process that writes oneDNN's log or MXNet's trace (drain.py): one thread
        if isinstance(drainer, int) and not isinstance(drainer, bool) and drainer > 0:
            found[drainer] = label
    return found


def instrumentation_fact(profile: FoldedProfile, what: str) -> str:
    """The capture fact: the share of the profile under [instrumentation] frames, by instrument."""
    return instrumentation_shares(profile.counts).text(what) + " (the tool's own instruments, marked [instrumentation])"


def capped_at(facts: dict[str, Any]) -> float | None:
    """perf's time (CLOCK_MONOTONIC s) the process stopped its instruments at a cap, or None."""
    capped = facts.get("capped")
    try:
        return float(capped["clock"][0]) if isinstance(capped, dict) else None
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def cap_line(facts: dict[str, Any], segments: SegmentReaders | None = None) -> str | None:
    """What the cap cut (the sidecar's "capped"), with the process's run time; None when nothing was. A stop
    our readers asked for (their memory budget) gets their figures from `segments`."""
    capped = facts.get("capped")
    if not isinstance(capped, dict):
        return None
    if capped.get("requested") and segments is not None and segments.requested is not None:
        capped = {**capped, "size": segments.requested[0], "cap": segments.requested[1]}
    start, end = facts.get("clock_start"), facts.get("clock_end")
    try:
        total = float(end[0]) - float(start[0]) if end and start else None  # type: ignore[index]
    except (IndexError, TypeError, ValueError):
        total = None
    return capped_text(capped, total)


def bulk_line(kept: dict[str, str]) -> str:
    """One line: bulk execution is off for the run, and what that costs; or the user's setting is kept."""
    if kept:
        return (
            f"flamegraph: --mxnet: your bulk setting is kept ({_assignments(kept)}): MXNet times each bulk as one"
            " span, drawn as [segment] A,B,... (symbolic) or [segment] (ImperativeBulk: ...) (Gluon, members unnamed)"
        )
    return (
        "flamegraph: --mxnet: bulk execution off for the run (MXNET_EXEC_BULK_EXEC_TRAIN, _INFERENCE,"
        f" _MAX_NODE_TRAIN_FWD, _BWD = 0) so the profiler times every operator; {BULK_COST} (docs/mxnet.md)"
    )


def _assignments(settings: dict[str, str]) -> str:
    return " ".join(f"{name}={value}" for name, value in sorted(settings.items()))


def output_facts(facts: dict[str, Any], segments: SegmentReaders | None = None) -> dict[str, str]:
    """What the profilers wrote and cost after the run, for the header."""
    sizes = []
    for key, label in (("profile", "profiler trace"), ("verbose", "oneDNN verbose log")):
        read = segments.read_bytes(str(facts.get(key))) if segments is not None and facts.get("segments") else None
        if read is not None:
            sizes.append(f"{label} {read[0] / 1e6:.1f} MB (in segments, {read[1] / 1e6:.1f} MB read while it ran)")
            continue
        try:
            sizes.append(f"{label} {os.path.getsize(str(facts.get(key))) / 1e6:.1f} MB")
        except (OSError, TypeError):
            sizes.append(f"{label} missing")
    dumped = facts.get("dump_seconds")
    kept = bulk_settings(facts.get("environment") or {})
    bulk = "bulk execution on: " + _assignments(kept) if kept else "bulk execution off"
    text = f"MXNet {facts.get('mxnet') or '(not imported)'}; {', '.join(sizes)}; {bulk}"
    if dumped is not None:
        text += f"; dumped in {dumped:.2f} s at exit"
    threads = facts.get("threads")
    if isinstance(threads, dict) and isinstance(threads.get("cpu_seconds"), int | float):
        scans = f"{threads.get('scans')} scans, {threads.get('searches', '?')} searched memory"
        text += f"; threads read from memory: {threads['cpu_seconds']:.3f} s CPU ({scans})"
    return {"MXNet profiler": text}
