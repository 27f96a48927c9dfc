"""FoldedProfile -> pprof's profile.proto, gzip'd: what `go tool pprof`, Pyroscope and Grafana read.

Sample types: `samples/count`, plus `cpu/nanoseconds` when the event is a clock (cpu-clock,
task-clock) sampled at a known frequency (the `frequency` capture fact, "499 Hz": one sample stands
for 1e9/499 ns); off-CPU profiles hold `off_cpu/microseconds` (`off_cpu/nanoseconds` when a weight
has a fraction of a microsecond). Each distinct frame is one Function and one Location (leaf first in
each Sample, as pprof wants). A frame our folder named `libmxnet.so+0x62333d0` keeps its DSO as a
Mapping and its address as the Location's address. Mapping 1 is the profiled program (`main_program`),
which pprof names the profile after ("File: tmpl"); unknown, it has no name (pprof then names none,
not the first library). Thread-rooted profiles label each sample `thread=comm-PID/TID`. The title and
capture facts are the profile's comments.

    python-42/43;main;libmxnet.so+0x62333d0 7   ->  Sample(location_id=[3, 2, 1], value=[7, 14028056],
                                                    label=[thread=python-42/43])
"""

from __future__ import annotations

import gzip
import os
import re
from datetime import datetime
from typing import Any

from ..io.folded import check_total, encode
from ..model import CLOCK_EVENTS, FoldedProfile
from .formats import EXPORTER, ExportError, capture_facts, describe, sampling_interval_ns, threaded
from .names import export_name
from .pprof_schema import message_classes

PID_PREFIX = re.compile(r"^pid \d+: ")  # the command of `record --pid`: "pid 42: python train.py"
THREAD_SUFFIX = re.compile(r"-\d+(?:/\d+)?$")  # a thread root's -PID/TID (formats.THREAD_ROOT)
MAPPED_FRAME = re.compile(r"^([^\s;+]+)\+0x([0-9a-f]+)$")  # `libmxnet.so+0x62333d0` (symbols.FunctionNamer)


def sampling_period_ns(profile: FoldedProfile) -> int | None:
    """Nanoseconds of CPU time one sample stands for, where the capture facts say; None otherwise."""
    event = (profile.event or profile.metadata.get("event") or "").split(":")[0]
    if profile.unit != "samples" or event not in CLOCK_EVENTS:
        return None
    return sampling_interval_ns(profile.metadata)


def _value_types(profile: FoldedProfile) -> tuple[list[tuple[str, str]], int]:
    """(the sample types, the factor from a weight to the first value)."""
    whole = all(float(weight).is_integer() for weight in profile.counts.values())
    if profile.unit == "microseconds":
        return ([("off_cpu", "microseconds")], 1) if whole else ([("off_cpu", "nanoseconds")], 1000)
    if profile.unit == "nanoseconds" and whole:  # perf script text weighed by a clock event's period
        return [("cpu", "nanoseconds")], 1
    if not whole:
        raise ExportError(
            f"pprof holds whole numbers: these {profile.unit} have fractions (convert them to a finer unit first)"
        )
    name = "samples" if profile.unit == "samples" else profile.unit
    return [(name, "count")], 1


INT64_MAX = 2**63 - 1  # pprof's values are int64 (the protobuf runtime raises ValueError past it)


def _check_int64(profile: FoldedProfile, scale: int) -> None:
    """Refuse (exit 3) values, or a total, that int64 cannot hold: pprof would wrap or refuse them."""
    total = sum(round(weight) for weight in profile.counts.values()) * scale
    if total > INT64_MAX:
        raise ExportError(
            f"pprof holds 64-bit integers: a total of {total:.3g} {profile.unit}"
            f"{' in nanoseconds' if scale > 1 else ''} is past their largest, {INT64_MAX:,}"
        )


class _Strings:
    """pprof's string table: index 0 is ''."""

    def __init__(self) -> None:
        self.table = [""]
        self.index = {"": 0}

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.table)
            self.table.append(text)
        return i


def pprof_message(profile: FoldedProfile, title: str | None = None) -> Any:
    """The perftools.profiles.Profile message of `profile`."""
    classes = message_classes()
    strings = _Strings()
    message = classes["Profile"]()
    types, factor = _value_types(profile)
    period = sampling_period_ns(profile)
    if period is not None:
        types.append(("cpu", "nanoseconds"))
        message.period_type.type, message.period_type.unit = strings("cpu"), strings("nanoseconds")
        message.period = period
    for kind, unit in types:
        message.sample_type.add(type=strings(kind), unit=strings(unit))
    message.default_sample_type = strings(types[-1][0])

    _check_int64(profile, factor * (period or 1))
    mappings: dict[str, Any] = {}
    program = main_program(profile)
    if program is not None or any(MAPPED_FRAME.match(frame) for frame in _frames(profile)):
        # Mapping 1 is the profiled program: pprof names the profile after it ("File: tmpl"). Unknown
        # (several programs, no command), it has no name, so pprof names none rather than a library.
        name = os.path.basename(program) if program else ""
        mappings[name] = message.mapping.add(id=1, filename=strings(export_name(name)), has_functions=True)
    locations: dict[str, int] = {}
    label_threads = threaded(profile)
    for stack, weight in sorted(profile.counts.items(), key=lambda item: encode(item[0])):
        frames = stack.split(";")
        ids = []
        for frame in reversed(frames):  # leaf first
            location = locations.get(frame)
            if location is None:
                location = locations[frame] = _add_location(message, frame, len(locations) + 1, strings, mappings)
            ids.append(location)
        value = round(weight * factor)
        values = [value] if period is None else [value, value * period]
        sample = message.sample.add(location_id=ids, value=values)
        if label_threads:
            sample.label.add(key=strings("thread"), str=strings(export_name(frames[0])))

    comments = [describe(profile, title), *(f"{k}: {v}" for k, v in capture_facts(profile).items())]
    message.comment.extend(strings(export_name(text)) for text in [*comments, f"exported by {EXPORTER}"])
    started = _epoch_ns(profile.metadata.get("date"))
    if started is not None:
        message.time_nanos = started
    message.string_table.extend(strings.table)
    return message


def main_program(profile: FoldedProfile) -> str | None:
    """The program profiled: the capture facts' `program` or the command's first word (`pid N: ...`
    too), else the one comm every root names (`python-1/2`: python); None for several or none."""
    if program := profile.metadata.get("program"):
        return program
    if command := profile.metadata.get("command"):
        import shlex

        try:
            words = shlex.split(PID_PREFIX.sub("", command))
        except ValueError:
            words = command.split()
        if words:
            return words[0]
    roots = {THREAD_SUFFIX.sub("", stack.split(";", 1)[0]) for stack in profile.counts}
    return roots.pop() if len(roots) == 1 else None


def _frames(profile: FoldedProfile) -> set[str]:
    return {frame for stack in profile.counts for frame in stack.split(";")}


def _add_location(message: Any, frame: str, ident: int, strings: _Strings, mappings: dict[str, Any]) -> int:
    name = strings(export_name(frame))
    # No system_name: pprof then takes the name as already demangled and shows it whole (with
    # system_name == name it strips template and parameter lists, merging distinct functions).
    message.function.add(id=ident, name=name)
    location = message.location.add(id=ident)
    location.line.add(function_id=ident)
    mapped = MAPPED_FRAME.match(frame)
    if mapped is not None:
        dso, address = mapped.group(1), int(mapped.group(2), 16)
        mapping = mappings.get(dso)
        if mapping is None:
            mapping = mappings[dso] = message.mapping.add(
                id=len(mappings) + 1, filename=strings(dso), has_functions=True
            )
        mapping.memory_limit = max(mapping.memory_limit, address + 1)
        location.mapping_id, location.address = mapping.id, address
    return ident


def _epoch_ns(date: str | None) -> int | None:
    """The `date` capture fact (ISO 8601, as the recorder writes it) in ns since the epoch."""
    try:
        stamp = datetime.fromisoformat(date) if date else None
    except ValueError:
        return None
    return round(stamp.timestamp() * 1e9) if stamp is not None and stamp.tzinfo is not None else None


def render_pprof(profile: FoldedProfile, title: str | None = None) -> bytes:
    """The gzip'd profile.proto (mtime 0: the same profile gives the same bytes)."""
    check_total(profile.total)  # the rule every writer of a total keeps (pprof sums the values it shows)
    return gzip.compress(pprof_message(profile, title).SerializeToString(deterministic=True), mtime=0)
