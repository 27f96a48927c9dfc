"""Benchmark inputs that the corpus recipe does not make (used by `make bench`).

    python bench/make_inputs.py shift-copies N IN OUT      N copies of IN, copy k's addresses XOR k << 36
    python bench/make_inputs.py perf-script JSON OUT       the `perf script` text `make flamegraph` folded

`shift-copies` keeps every symbol and DSO, so the folded stacks are IN's with N times the counts, but
each copy's frame lines are new: a folder that caches per distinct frame line parses N times as many.
`perf-script` reruns the command line `make flamegraph` saved in its JSON (`perf_script`), so the text
is exactly what that fold read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

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
    args = parser.parse_args()
    if args.what == "shift-copies":
        write_atomically(args.out, shift_copies(args.input.read_bytes(), args.copies))
    else:
        save_perf_script(args.summary, args.out)


if __name__ == "__main__":
    main()
