"""Views of a profile, as pure transforms of its folded stacks: focus, ignore, hide, collapsed
recursion, the callers or callees of a function, the process root stripped or its PIDs merged.

Each view maps one stack to another, or drops it (pprof's -focus/-ignore/-hide, speedscope's
sandwich, stackcollapse-recursive.pl). `apply_views` runs the ones asked for, in one fixed order,
over a whole profile (stacks that become equal add up) and says what it did, typed, for the header:
    python-4242;main;compute;compute;gemm 17   --collapse-recursion  ->  python-4242;main;compute;gemm 17
    python-4242;main;compute;gemm 17           --callers gemm        ->  gemm;compute;main;python-4242 17
    python-4242;main;io;read 20                --hide '^(main|io)$'  ->  python-4242;read 20
    burn1-4242/4243;main;spin 3                --merge-pids          ->  burn1;main;spin 3
A frame matches a pattern when `re.search` finds it in the frame's text (annotations like `_[k]` included).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import filterfalse, groupby, islice
from operator import eq

from ..io.diagnostics import BadOption, NoSamples
from ..model import FoldedProfile

SEP = ";"
# A root "comm-PID" or "comm-PID/TID" (fold --pid/--tid, off-CPU); "comm-?" or "comm-?/TID" where perf
# printed no pid (plain `perf script` prints the thread's id only).
PID_SUFFIX = re.compile(r"-(?:[0-9]+|\?)(?:/[0-9]+)?$")
REGEX_ERRORS = (re.error, OverflowError, RecursionError)  # what re.compile raises for a bad pattern

Frames = list[str]
StackMap = Callable[[Frames], Frames | None]


@dataclass(frozen=True)
class ViewOptions:
    """The views to apply; patterns are regular expressions (the CLI's REGEX), searched in each frame."""

    focus: str | None = None  # keep only stacks through a matching frame
    focus_root: bool = False  # ... and start them at it (the outermost match)
    ignore: str | None = None  # drop stacks through a matching frame
    hide: str | None = None  # remove matching frames; their samples stay on the caller
    collapse_recursion: bool = False  # a;a;a;b -> a;b
    callers: str | None = None  # who calls a matching function: its call paths, inverted, rooted at it
    callees: str | None = None  # what a matching function calls, merged, rooted at it
    strip_root: bool = False  # drop the process/thread root frame
    merge_pids: bool = False  # the root "python-1234/1235" -> "python"

    @property
    def active(self) -> bool:
        return any((self.focus, self.ignore, self.hide, self.collapse_recursion, self.callers, self.callees,
                    self.strip_root, self.merge_pids))  # fmt: skip

    def check(self) -> None:
        """Raise `BadOption` for combinations that mean nothing, and for a bad regular expression."""
        self.compile()

    def compile(self) -> Views:
        if self.focus_root and self.focus is None:
            raise BadOption("--focus-root re-roots at the --focus frame: give --focus REGEX too")
        if self.callers is not None and self.callees is not None:
            raise BadOption("--callers and --callees are two views: draw one at a time")
        steps: list[tuple[Step, StackMap]] = []
        if self.merge_pids:
            steps.append((Step("merge-pids"), _merge_pids))
        if self.strip_root:
            steps.append((Step("strip-root"), _strip_root))
        if self.ignore is not None:
            steps.append((Step("ignore", self.ignore), _ignore(_matcher("--ignore", self.ignore))))
        if self.focus is not None:
            step = Step("focus", self.focus, rooted=self.focus_root)
            steps.append((step, _focus(_matcher("--focus", self.focus), self.focus_root)))
        if self.hide is not None:
            steps.append((Step("hide", self.hide), _hide(_matcher("--hide", self.hide))))
        if self.collapse_recursion:
            steps.append((Step("collapse-recursion"), _collapse_recursion))
        if self.callers is not None:
            steps.append((Step("callers", self.callers), _callers(_matcher("--callers", self.callers))))
        if self.callees is not None:
            steps.append((Step("callees", self.callees), _focus(_matcher("--callees", self.callees), True)))
        return Views(tuple(step for step, _ in steps), tuple(function for _, function in steps))


@dataclass(frozen=True)
class Step:
    """One view applied: its option name (without the dashes) and its pattern, if it has one."""

    kind: str  # "focus", "ignore", "hide", "collapse-recursion", "callers", "callees", "strip-root", "merge-pids"
    pattern: str | None = None
    rooted: bool = False  # focus: the stacks start at the matching frame (--focus-root)


@dataclass(frozen=True)
class Applied:
    """What the views did to a profile: the steps, and the total before and after (for the header)."""

    steps: tuple[Step, ...]
    total_before: float
    total_after: float

    @property
    def kept(self) -> float:
        """The share of the total that remains (1.0 when nothing was dropped)."""
        return self.total_after / self.total_before if self.total_before else 1.0

    @property
    def roots_kept(self) -> bool:
        """Whether each stack still starts at its process or thread (off-CPU's thread view needs it)."""
        moved = {"callers", "callees", "strip-root", "merge-pids"}
        return not any(step.kind in moved or step.rooted for step in self.steps)

    def pattern_of(self, kind: str) -> str | None:
        return next((step.pattern for step in self.steps if step.kind == kind), None)


@dataclass(frozen=True)
class Views:
    """Compiled views: one function per step, applied in order to each stack."""

    steps: tuple[Step, ...] = ()
    functions: tuple[StackMap, ...] = field(default=(), repr=False)

    def map_stack(self, text: str) -> str | None:
        """One folded stack through every step; None when a step drops it."""
        frames = text.split(SEP)
        for function in self.functions:
            mapped = function(frames)
            if mapped is None:
                return None
            frames = mapped
        return SEP.join(frames)

    def map_stacks(self, stacks: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
        """Each (stack, weight) mapped, in the same order (a flame chart's time order), dropped ones left out."""
        out = []
        for text, weight in stacks:
            mapped = self.map_stack(text)
            if mapped is not None:
                out.append((mapped, weight))
        return out


def apply_views(profile: FoldedProfile, views: Views, allow_empty: bool = False) -> tuple[FoldedProfile, Applied]:
    """A new profile (same unit, event and facts) with every stack mapped; stacks that meet add up.
    A profile the views empty is `NoSamples` (exit 3), unless `allow_empty` (a diff's BEFORE may be)."""
    counts: dict[str, float] = {}
    for text, weight in profile.counts.items():
        mapped = views.map_stack(text)
        if mapped is not None:
            counts[mapped] = counts.get(mapped, 0) + weight
    result = FoldedProfile(counts, profile.unit, profile.event, dict(profile.metadata), profile.window_us)
    applied = Applied(views.steps, profile.total, result.total)
    if profile.counts and not counts and not allow_empty:
        shown = ", ".join(f"--{step.kind} {step.pattern!r}" for step in views.steps if step.pattern is not None)
        raise NoSamples(f"nothing left to draw: no stack passes {shown}")
    return result, applied


def roots_of(profile: FoldedProfile) -> set[str]:
    return {text.partition(SEP)[0] for text in profile.counts}


def roots_advice(before: FoldedProfile, after: FoldedProfile) -> str | None:
    """For `diff`: when the two sides share no root frame (`burn1-4242` vs `burn2-4343`), the option
    that would let them meet (else everything is new or gone); None when they share one."""
    old, new = roots_of(before), roots_of(after)
    if not old or not new or not old.isdisjoint(new):
        return None
    if {PID_SUFFIX.sub("", root) for root in old} & {PID_SUFFIX.sub("", root) for root in new}:
        return "--merge-pids drops the -PID suffix of the roots, so their stacks compare"
    if _second_frames(before) & _second_frames(after):
        return "--strip-root drops the root frame (the process or thread), so the stacks below it compare"
    return None  # nothing in common below the roots either: two different programs


def _second_frames(profile: FoldedProfile) -> set[str]:
    return {text.split(SEP, 2)[1] for text in profile.counts if SEP in text}


# --- the steps, one stack at a time ---------------------------------------------------------------


def _compile(option: str, pattern: str) -> re.Pattern[str]:
    try:
        with warnings.catch_warnings():  # "Possible nested set": two lines of Python on the terminal
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(pattern)
    except REGEX_ERRORS as err:  # `a{4294967296}` overflows, 1,000 nested groups recurse
        raise BadOption(f"{option} {pattern!r}: bad regular expression: {err}") from None


class _Matches(dict[str, bool]):
    """Whether a frame matches: `matches[name]`, each distinct name searched once (stacks repeat
    their frames), and a known one found by a dict lookup, not a Python call (81 k stacks x 30 frames)."""

    def __init__(self, option: str, pattern: str) -> None:
        super().__init__()
        self.search = _compile(option, pattern).search

    def __missing__(self, name: str) -> bool:
        found = self[name] = self.search(name) is not None
        return found


def _matcher(option: str, pattern: str) -> _Matches:
    return _Matches(option, pattern)


def _first(matches: _Matches, frames: Frames) -> int:
    """The index of the outermost matching frame, or -1."""
    if not any(map(matches.__getitem__, frames)):
        return -1
    return next(index for index, name in enumerate(frames) if matches[name])


def _focus(matches: _Matches, root: bool) -> StackMap:
    def focus(frames: Frames) -> Frames | None:
        index = _first(matches, frames)  # the outermost match: recursion below it is counted once
        if index < 0:
            return None
        return frames[index:] if root else frames

    return focus


def _ignore(matches: _Matches) -> StackMap:
    def ignore(frames: Frames) -> Frames | None:
        return None if any(map(matches.__getitem__, frames)) else frames

    return ignore


def _hide(matches: _Matches) -> StackMap:
    def hide(frames: Frames) -> Frames | None:
        if not any(map(matches.__getitem__, frames)):
            return frames
        kept = list(filterfalse(matches.__getitem__, frames))
        return kept or frames[:1]  # every frame matches: the root stays, so no weight is lost

    return hide


def _callers(matches: _Matches) -> StackMap:
    def callers(frames: Frames) -> Frames | None:
        index = _first(matches, frames)  # the outermost match, as speedscope's sandwich: a stack counts once
        return frames[index::-1] if index >= 0 else None

    return callers


def _collapse_recursion(frames: Frames) -> Frames:
    if not any(map(eq, frames, islice(frames, 1, None))):  # most stacks: no repeat, checked at C speed
        return frames
    return [name for name, _ in groupby(frames)]


def _strip_root(frames: Frames) -> Frames:
    return frames[1:] or frames  # a stack of the root alone keeps it: no weight is lost


def _merge_pids(frames: Frames) -> Frames:
    return [PID_SUFFIX.sub("", frames[0]), *frames[1:]]
