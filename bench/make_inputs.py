"""Benchmark inputs that the corpus recipe does not make (used by `make bench`).

    python bench/make_inputs.py shift-copies N IN OUT      N copies of IN, copy k's addresses XOR k << 36
    python bench/make_inputs.py perf-script JSON OUT       the `perf script` text `make flamegraph` folded
    python bench/make_inputs.py record-system OUT [--seconds 10] [--freq 999]
        `perf record -a -g` of a mixed workload (Python, gcc, C++, gzip, and whatever else runs here)
    python bench/make_inputs.py record-cpp-dwarf OUT [--seconds 4] [--freq 999]
        `perf record --call-graph dwarf` of bench/workload.cpp (deep template stacks, many distinct frames)

`shift-copies` keeps every symbol and DSO, so the folded stacks are IN's with N times the counts, but
each copy's frame lines are new: a folder that caches per distinct frame line parses N times as many.
`perf-script` reruns the command line `make flamegraph` saved in its JSON (`perf_script`), so the text
is exactly what that fold read. The two recordings are made on the machine that runs the bench, with
perf's default `perf script` (what a user pastes): their perf.data, the workload's build and perf's
messages stay in OUT's directory under work/. They need perf (root), gcc and g++.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_BENCH = Path(os.environ.get("SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))

# a stack line of `perf script`: indentation, the address, the rest
# 	ffffffff8104f45a native_write_msr_safe ([kernel.kallsyms])
# 	          12b25d _PyEval_EvalFrameDefault (/usr/bin/python3.11)
FRAME_ADDRESS = re.compile(rb"^([ \t]+)([0-9a-f]+)(?= )", re.MULTILINE)


def write_atomically(path: Path, chunks: list[bytes]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as out:
        out.writelines(chunks)
    os.replace(tmp, path)


def shift_copies(text: bytes, copies: int) -> list[bytes]:
    """`copies` copies of `text`; in copy k every frame address is XOR'd with k << 36 (copy 0 unchanged)."""
    if not text.endswith(b"\n\n"):
        text = text.rstrip(b"\n") + b"\n\n"  # a copy must not run into the next one's first record

    def shifted(k: int) -> bytes:
        mask = k << 36
        return FRAME_ADDRESS.sub(lambda m: m[1] + b"%x" % (int(m[2], 16) ^ mask), text)

    return [shifted(k) if k else text for k in range(copies)]


def save_perf_script(summary: Path, out: Path) -> None:
    """Run the `perf script` command line recorded in `make flamegraph`'s JSON, its stdout to `out`."""
    command = json.loads(summary.read_text()).get("perf_script")
    if not command:
        sys.exit(f"{summary}: no perf_script command line (re-run `make flamegraph`)")
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "wb") as sink:
        subprocess.run(command, stdout=sink, check=True)
    os.replace(tmp, out)


def run(command: list[str], **kwargs: object) -> None:
    print(f"+ {shlex.join(command)}", file=sys.stderr, flush=True)
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]


def build_workloads(work: Path) -> None:
    """The C++ workload (-O2 -g: DWARF unwinding needs the debug info) and gcc's fodder for the mix."""
    work.mkdir(parents=True, exist_ok=True)
    cpp = work / "cppwork"
    if not cpp.exists() or cpp.stat().st_mtime < (HERE / "workload.cpp").stat().st_mtime:
        run(["g++", "-O2", "-g", "-std=c++17", "-o", str(cpp), str(HERE / "workload.cpp")])
    gen = work / "gen.c"
    if not gen.exists():
        with open(gen, "wb") as out:
            run([sys.executable, str(SHARED_BENCH / "gen_c.py"), "600"], stdout=out)


def record_and_script(out: Path, record_args: list[str], workload: list[str]) -> None:
    """`perf record RECORD_ARGS -- WORKLOAD`, then `perf script` (default options) into `out`."""
    work = out.parent / "work"
    data = work / f"{out.name.removesuffix('.perf.txt')}.data"
    run(["perf", "record", "-q", "-o", str(data), *record_args, "--", *workload])
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "wb") as sink, open(work / f"{out.name}.err", "wb") as errors:
        run(["perf", "script", "-i", str(data)], stdout=sink, stderr=errors)
    os.replace(tmp, out)


def record_system(out: Path, seconds: float, freq: int) -> None:
    """System-wide: four programs at once for `seconds` (the machine's own processes come along)."""
    work = out.parent / "work"
    build_workloads(work)
    mix = (
        f"timeout {seconds} {shlex.quote(sys.executable)} {shlex.quote(str(SHARED_BENCH / 'workload.py'))} 1000"
        " >/dev/null &"
        f" timeout {seconds} gcc -O2 -c {shlex.quote(str(work / 'gen.c'))} -o /dev/null &"
        f" timeout {seconds} {shlex.quote(str(work / 'cppwork'))} {seconds} >/dev/null &"
        f" timeout {seconds} sh -c 'tar -cf - /usr/lib 2>/dev/null | gzip -6 >/dev/null' &"
        " wait; true"
    )
    record_and_script(out, ["-a", "-g", "-F", str(freq), "-e", "cpu-clock"], ["sh", "-c", mix])


def record_cpp_dwarf(out: Path, seconds: float, freq: int) -> None:
    work = out.parent / "work"
    build_workloads(work)
    dwarf = ["--call-graph", "dwarf", "-F", str(freq), "-e", "cpu-clock"]
    record_and_script(out, dwarf, [str(work / "cppwork"), str(seconds)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    shift = sub.add_parser("shift-copies")
    shift.add_argument("copies", type=int)
    shift.add_argument("input", type=Path)
    shift.add_argument("out", type=Path)
    script = sub.add_parser("perf-script")
    script.add_argument("summary", type=Path)
    script.add_argument("out", type=Path)
    for name, seconds in (("record-system", 10.0), ("record-cpp-dwarf", 4.0)):
        recording = sub.add_parser(name)
        recording.add_argument("out", type=Path)
        recording.add_argument("--seconds", type=float, default=seconds)
        recording.add_argument("--freq", type=int, default=999)
    args = parser.parse_args()
    if args.what == "shift-copies":
        write_atomically(args.out, shift_copies(args.input.read_bytes(), args.copies))
    elif args.what == "perf-script":
        save_perf_script(args.summary, args.out)
    elif args.what == "record-system":
        record_system(args.out, args.seconds, args.freq)
    else:
        record_cpp_dwarf(args.out, args.seconds, args.freq)


if __name__ == "__main__":
    main()
