"""`flamegraph convert perf.txt out.svg` loads what folding and drawing text need, and nothing else:
its start-up is part of what it is timed by against cargo-flamegraph (make bench, the -> SVG rows)."""

from __future__ import annotations

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
