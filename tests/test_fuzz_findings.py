"""What the fuzz campaign found, as the user meets it on the command line: one line and the
documented exit code, or the right output; never a traceback. (The inputs themselves are replayed
by tests/test_fuzz.py from tests/fuzz/corpus/.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flamegraph.color import parse_palette
from flamegraph.io.diagnostics import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE
from tests.fuzz.common import run_cli


def cli(*args: str) -> tuple[int, bytes, str]:
    """Run `flamegraph ARGS` in this process: (exit code, stdout bytes, stderr). A traceback fails the test."""
    return run_cli(list(args))


def one_line(err: str, needle: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], err


def test_fold_jobs_on_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    code, _, err = cli("fold", "--jobs", "2", str(empty))
    assert code == EXIT_BAD_INPUT
    one_line(err, "no samples found")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_event_filter_with_raw_bytes(tmp_path: Path, jobs: str) -> None:
    """An event named with a non-UTF-8 byte, given on the command line (argv decodes it with surrogates)."""
    path = tmp_path / "perf.txt"
    path.write_bytes(b"a 1 1.0: 1 cpu\xf6:\n\t1 f (/x)\n\nb 2 2.0: 1 other:\n\t1 g (/x)\n\n")
    event = b"cpu\xf6".decode("utf-8", "surrogateescape")
    code, out, err = cli("fold", "--no-group-unknown", "--jobs", jobs, "--event-filter", event, str(path))
    assert (code, out) == (EXIT_OK, b"a;f 1\n"), err


def test_fold_keeps_a_carriage_return_in_the_last_record(tmp_path: Path) -> None:
    """The last record (no blank line after it) was split at '\\r' as well as '\\n'."""
    path = tmp_path / "perf.txt"
    path.write_bytes(b"python 1 1.0: 1 cpu-clock:\n\t1 f\rg (/x)\n")
    code, out, err = cli("fold", "--no-group-unknown", str(path))
    assert (code, out, err) == (EXIT_OK, b"python;f\rg 1\n", "")


@pytest.mark.parametrize("digits", [21, 5000])
def test_fold_period_past_u64_is_a_bad_header(tmp_path: Path, digits: int) -> None:
    path = tmp_path / "perf.txt"
    path.write_bytes(b"a 1 1.0: " + b"9" * digits + b" cpu-clock:\n\t1 f (/x)\n\nb 2 2.0: 7 cpu-clock:\n\t1 g (/x)\n\n")
    code, out, err = cli("fold", "--no-group-unknown", str(path))
    assert (code, out) == (EXIT_OK, b"b;g 7\n"), err
    assert f"{path}:1: bad-header" in err and "skipped 1 of 2 records: 1 bad-header" in err


@pytest.mark.parametrize("window", ["inf,", ",inf", "nan,1", "-1,2", "1e400,", "1_0,20"])
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_window_not_plain_seconds_is_a_usage_error(command: str, window: str) -> None:
    code, _, err = cli(command, "--window", window, "--", "true")
    assert code == EXIT_USAGE and f"window {window!r}: expected START,END" in err and "Traceback" not in err


@pytest.mark.parametrize("pattern", ["a{4294967296}", "(" * 1000 + ")" * 1000])
def test_highlight_regex_that_cannot_compile(tmp_path: Path, pattern: str) -> None:
    (tmp_path / "in.folded").write_bytes(b"a;b 1\n")
    code, _, err = cli("render", str(tmp_path / "in.folded"), "--highlight", pattern)
    assert code == EXIT_USAGE
    one_line(err, "bad regular expression")


def test_a_stack_that_starts_with_hash_is_drawn(tmp_path: Path) -> None:
    """A thread may be named '#1' (off-CPU roots are comm-tid); flamegraph.pl draws such a line too."""
    (tmp_path / "in.folded").write_bytes(b"# a comment\n#1-42;futex_wait;[S] 5\nmain;f 5\n")
    code, out, err = cli("render", str(tmp_path / "in.folded"))
    assert code == EXIT_OK and err == ""
    assert b"#1-42 (5 samples, 50.00%)" in out and b"a comment" not in out


def test_palette_names_with_unicode_line_breaks_survive(tmp_path: Path) -> None:
    """U+0085 and U+2028 are line breaks to str.splitlines, not to a palette file (nor to flamegraph.pl)."""
    palette = tmp_path / "palette.map"
    palette.write_bytes("a\x85b->rgb(1,2,3)\nc\u2028d->rgb(4,5,6)\n".encode())
    (tmp_path / "in.folded").write_bytes("m;a\x85b 1\nm;c\u2028d 1\n".encode())
    code, out, err = cli("render", str(tmp_path / "in.folded"), "--palette-file", str(palette))
    assert code == EXIT_OK, err
    written = parse_palette(palette.read_bytes().decode())
    assert written.items() >= {"a\x85b": "#010203", "c\u2028d": "#040506"}.items()
    assert b'fill="#010203"' in out and b'fill="#040506"' in out


def test_a_thread_named_with_a_leading_hash_keeps_its_samples(tmp_path: Path) -> None:
    """perf prints its sample header as is; only perf's own header lines are comments (--compat: the reference
    drops the sample, and so do we there)."""
    path = tmp_path / "perf.txt"
    path.write_bytes(b"# ========\n# cmdline : perf record -g\n#\n#c 100 1.0: 1 cpu-clock: \n\t1 f (/x)\n\n")
    code, out, err = cli("fold", "--no-group-unknown", str(path))
    assert (code, out, err) == (EXIT_OK, b"#c;f 1\n", "")
    code, out, _ = cli("fold", "--compat", str(path))
    assert (code, out) == (EXIT_BAD_INPUT, b"")


def test_normalize_from_a_vanishing_total(tmp_path: Path) -> None:
    """--normalize scales BEFORE by AFTER/BEFORE: from a total of 5e-324 that is infinite."""
    (tmp_path / "before").write_bytes(b"a;b 0." + b"0" * 323 + b"5\n")
    (tmp_path / "after").write_bytes(b"a;b 1\n")
    code, _, err = cli("diff", str(tmp_path / "before"), str(tmp_path / "after"), "--normalize")
    assert code == EXIT_BAD_INPUT
    one_line(err, "--normalize: BEFORE's total (4.94066e-324) is too small to scale to AFTER's")


@pytest.mark.parametrize("field", ["time", "prev_pid", "fork"])
def test_offcpu_numbers_longer_than_perf_prints(tmp_path: Path, field: str) -> None:
    """int() refuses 4,300+ digits (ValueError): such a record is a bad one, counted, and the rest is folded."""
    big = "9" * 5000
    lines = {
        "time": f"a 1 {big}.0: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> "
        "next_comm=b next_pid=2 next_prio=120",
        "prev_pid": f"a 1 1.5: sched:sched_switch: prev_comm=a prev_pid={big} prev_prio=120 prev_state=S ==> "
        "next_comm=b next_pid=2 next_prio=120",
        "fork": f"a 1 1.5: PERF_RECORD_FORK(1:{big}):(1:1)",  # the child tid is read
    }
    good = (
        "a 1 1.0: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b "
        "next_pid=2 next_prio=120\n\tffff f ([kernel.kallsyms])\n"
    )
    path = tmp_path / "sched.txt"
    path.write_text(good + lines[field] + "\nb 1 3.0: PERF_RECORD_SWITCH IN\n")
    code, out, err = cli("fold", "--offcpu", str(path))
    assert (code, out) == (EXIT_OK, b"a-1;f;[S] 2000000\n"), err
    assert "Traceback" not in err


def test_a_long_run_of_digits_after_the_event_does_not_hang(tmp_path: Path) -> None:
    """The reference's `(\\d+)*` backtracked exponentially: 20 digits took 1.4 s, 40 digits hours."""
    path = tmp_path / "perf.txt"
    path.write_bytes(b"t 5680 571.677724: 1001001 cpu-clock:   " + b"1" * 40 + b" 55a2f work+0x34 (/tmp/x)\n")
    argv = [sys.executable, "-m", "flamegraph", "fold", "--no-group-unknown", str(path)]
    proc = subprocess.run(argv, capture_output=True, timeout=30)
    assert (proc.returncode, proc.stdout) == (EXIT_OK, b"t;55a2f work 1001001\n"), proc.stderr


def test_a_header_ending_in_carriage_return_is_read_alike_by_both_paths(tmp_path: Path) -> None:
    """`comm 6\\r` is no sample header once its line end is stripped; the fast path read the '\\r' as
    the blank after the pid and folded it (with `fold --jobs` or `record`, it was dropped)."""
    path = tmp_path / "perf.txt"
    path.write_bytes(b"ok 1 1.0: 5 ev:\n\t1 f (/x)\n\n=x 6\r\n\t1 g (/x)\n\n")
    code, out, err = cli("fold", "--no-group-unknown", str(path))
    assert (code, out) == (EXIT_OK, b"ok;f 5\n"), err
    assert f"{path}:4: bad-header" in err


def test_an_empty_inlined_name_is_no_frame(tmp_path: Path) -> None:
    """`x->` splits into `x` and nothing (Perl's split drops trailing empty fields): no `_[i]` frame of
    nothing, in --compat (as stackcollapse-perf.pl) and by default."""
    path = tmp_path / "perf.txt"
    path.write_bytes(b"ab 1 1.0: 5 page-faults:\n\t1 x-> (y)\n\t2 -> (y)\n\t3 ->z-> (y)\n\n")
    for mode in ("--compat", "--no-group-unknown"):
        code, out, err = cli("fold", mode, str(path))
        assert (code, out) == (EXIT_OK, b"ab;;z_[i];x 5\n"), (mode, err)
