"""`flamegraph convert perf.txt out.svg` loads what folding and drawing text need, and nothing else:
its start-up is part of what it is timed by against cargo-flamegraph (make bench, the -> SVG rows)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

PERF_TEXT = (
    "python 1234/1234 [001] 100.000001: 1001001 cpu-clock:\n"
    "\t    7f0000001000 main+0x10 (/usr/bin/python3.11)\n"
    "\t    7f0000000100 __libc_start_main+0x80 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
)
# Only a perf.data input, a recording or a timeline format needs these (Jinja2: only a template edit);
# only a differential or off-CPU graph, or a view (--focus...), the analyses and their drawing.
NOT_FOR_TEXT = (
    "jinja2",
    "flamegraph.record",
    "flamegraph.export.timeline",
    "flamegraph.folding.perf_sched",
    "flamegraph.analysis",
    "flamegraph.render.diff",
    "flamegraph.render.offcpu",
)


def test_convert_text_to_svg_imports_no_recording_timeline_offcpu_or_jinja2(tmp_path: Path) -> None:
    text = tmp_path / "perf.txt"
    text.write_text(PERF_TEXT)
    out = tmp_path / "out.svg"
    code = (
        "import sys\nfrom flamegraph.cli import main\n"
        "sys.argv = ['flamegraph', 'convert', sys.argv[1], sys.argv[2]]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code, str(text), str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert b"main" in out.read_bytes()
    loaded = result.stdout.split()
    assert "flamegraph.render.svg" in loaded  # it did draw
    assert [name for name in loaded if name.startswith(NOT_FOR_TEXT)] == []


def test_the_program_ends_at_once_and_flushes_what_it_printed(tmp_path: Path) -> None:
    """`flamegraph fold|convert` as the whole program leaves without freeing its objects one by one
    (os._exit), after flushing: a fold to a pipe arrives whole; convert with stdout closed succeeds."""
    text = tmp_path / "perf.txt"
    text.write_text(PERF_TEXT * 3000)  # more than a pipe and a stdio buffer hold
    folded = subprocess.run([sys.executable, "-m", "flamegraph", "fold", str(text)], capture_output=True, check=False)
    assert folded.returncode == 0, folded.stderr
    assert folded.stdout == b"python;__libc_start_main;main 3003003000\n"
    out = tmp_path / "out.svg"
    closed = subprocess.run(
        [sys.executable, "-m", "flamegraph", "convert", str(text), str(out)], stdout=subprocess.DEVNULL, check=False
    )
    assert closed.returncode == 0 and out.read_bytes().rstrip().endswith(b"</svg>")
    quoted = " ".join(shlex.quote(str(arg)) for arg in (sys.executable, "-m", "flamegraph", "convert", text, out))
    assert subprocess.run(["sh", "-c", f"exec {quoted} >&-"], check=False).returncode == 0
    # the interpreter's shutdown is skipped (an exit handler never runs), unless main() is one call of many
    for call, shut_down in (("run()", b""), ("main()", b"shut down\n")):
        code = (
            "import atexit, sys\nfrom flamegraph.cli import main, run\n"
            "atexit.register(lambda: print('shut down'))\n"
            f"sys.argv = ['flamegraph', 'convert', sys.argv[1], sys.argv[2]]\n{call}\n"
        )
        ended = subprocess.run([sys.executable, "-c", code, str(text), str(out)], capture_output=True, check=False)
        assert (ended.returncode, ended.stdout) == (0, shut_down), ended.stderr
