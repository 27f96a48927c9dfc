"""`record --mxnet` streamed: the samples kept compactly while the chunks are folded, the operators joined
as the trace allows (running.py) and at the end.

A chunk cannot simply be joined when it is folded: MXNet writes an operator's span when it has ended (and its
dump thread once a second), oneDNN an execution's line when it has ended, and the in-process hook the thread
map and a clock reading when asked as the run goes (inprocess.Session.refresh). Each sample instead leaves its time, its
thread and the id of its stack (16 bytes; the stacks are the fold's distinct ones); perf's raw chunks are
deleted as usual. What the join needs of the samples themselves (the evidence the whole recording's first
`perf script` pass would read: which threads run operators, the dump thread, the context switches) is
gathered as they come, not kept per sample. When the kept samples pass their budget (running.py:
FLAMEGRAPH_MXNET_JOIN_BYTES, else a share of --max-spool), those the trace and the log already cover are
joined and dropped, each as what it found (`join.Found`) counted by thread and stack; at the end the
`Joiner` of the whole recording settles those counts and joins the rest, so the profile is the one a whole
join gives. Memory is then the distinct stacks (per thread and what was found) and the samples of the last
seconds, not the run's length (a run under the budget is joined only at the end, as before). The interval
graphs of `--every` are drawn as their chunks are folded, before any trace exists: they carry no operator
frames.

    deferred = DeferredJoin(MxnetHook(directory / "mxnet", note=print), root_of, join_budget)
    options = FoldOptions.with_all(sample_hook=deferred.log)       # the streamed fold's hook
    StreamedFold(..., fold_chunk=deferred.fold_chunk)             # with the chunks' context switches
    record(spec, data, hooks=[deferred.hook], spool=spool)
    deferred.join(profile, recording)                             # the operator frames, the tables

Lines the switch tap reads in the fold's text (`perf script --show-switch-events`):
    python 22378/22391 34114.850008: PERF_RECORD_SWITCH OUT preempt
    python 22378/22391 34114.853911: PERF_RECORD_SWITCH IN
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...folding.perf import PerfCollapser
from ...folding.perf_blocks import fold_blocks, iter_blocks
from ...folding.stage import BlockFilter
from ...io.inputs import open_stream
from ...model import FoldedProfile
from ...record.spec import Recording
from .hook import MxnetHook
from .running import RunningJoin
from .sample_log import SHOW_SWITCHES, SampleLog
from .segment_reader import SegmentReaders, memory_budget


class DeferredJoin:
    """The streamed `--mxnet`: the record hook, the fold's sample hook and chunk folder, the join at the end.
    With a budget (--max-spool), the instruments write segments read as the run goes (segment_reader.py), and
    with `join_budget` bytes of kept samples, those the segments already cover are joined as it goes
    (running.py)."""

    def __init__(self, hook: MxnetHook, root_of: Callable[[bytes], bytes], join_budget: int | None = None) -> None:
        self.hook = hook
        self.log = SampleLog(root_of)
        self.running: RunningJoin | None = None
        if hook.budget is not None and hook.segments is None:
            hook.segments = SegmentReaders(hook.directory, budget=memory_budget(hook.budget))  # (caps: by prepare)
            hook.segments.start()
        if hook.segments is not None and join_budget:
            self.running = RunningJoin(hook.directory, hook.segments)
            self.log.watch(join_budget, self.running)

    def stop(self) -> None:
        """The run was abandoned: the segments' readers end (the directory goes with the spool's)."""
        if self.hook.segments is not None:
            self.hook.segments.stop()

    def fold_chunk(self, collapser: PerfCollapser, path: str, script_args: Sequence[str], named: BlockFilter) -> None:
        """fold_input's path for a chunk (no window filter, no --jobs: a sample hook folds in order), with the
        context switches printed and tapped; they change no stack. `named`: the chunks' thread names."""
        with open_stream(path, False, [*script_args, SHOW_SWITCHES]) as stream:
            fold_blocks(collapser, self.log.tap(named(iter_blocks(stream))), path)

    def join(self, profile: FoldedProfile, recording: Recording) -> None:
        """The whole run's profile gets its operator and primitive frames, the tables are said and go in
        its header; nothing to join (no trace, no sidecar: said by the hook): the profile stays as folded."""
        joiner = self.hook.joiner(recording, None, self.log.evidence)
        if joiner is None:
            return
        settled: dict[bytes, int] = {}
        problems: list[str] = []
        self.log.peak = max(self.log.peak, self.log.held())  # (what the run ended with)
        if self.running is not None:
            settled, problems = self.running.settle(self.log, joiner)
        counts = self.log.joined(joiner, settled)
        # Every folded sample passed the hook once, weighing 1 (the streamed fold prints no period).
        assert sum(counts.values()) == profile.total, f"{len(self.log):,} samples kept, {profile.total:,} folded"
        profile.counts = dict(counts)
        summary = self.hook.report(joiner, profile)
        if self.running is not None:
            text = self.running.text(self.log)
            profile.metadata["MXNet join while recording"] = text
            self.hook.note(f"mxnet: join while recording: {text}")
        for problem in problems:
            summary.problems.append(problem)
            self.hook.note(f"mxnet: problem: {problem}")
