"""The CLI follows its ecosystem's conventions: --version, shell completion, help that starts with a
whole sentence and ends with examples, one meaning per flag (old names kept as deprecated aliases),
the render options on record/offcpu, fold --window, --open, hints for wrong input, no SVG on a
terminal, and the capture facts beside a folded file so `render out.folded` draws what was recorded."""

from __future__ import annotations

import gzip
import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import GOLDEN, REPO
from helpers.svg import frames, parse, texts

SVG = "{http://www.w3.org/2000/svg}"
COMMANDS = ("fold", "render", "diff", "record", "offcpu", "convert")
PERF_TEXT = GOLDEN / "fold" / "cxx-names.perf.txt"
SAMPLE = REPO / "sample_data" / "mlp-oncpu.perf.txt.gz"


def run(*args: str, stdin: bytes | None = None, cwd: Path = REPO, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args], input=stdin, capture_output=True, cwd=cwd, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def on_a_terminal(*args: str, stdin_tty: bool, stdout_tty: bool, stdin: bytes = b"") -> tuple[int, str]:
    """Run with stdin and/or stdout on a pseudo-terminal; (exit code, what reached the terminal and stderr)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "flamegraph", *args], cwd=REPO,
        stdin=follower if stdin_tty else subprocess.PIPE, stdout=follower if stdout_tty else subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(follower)
    if not stdin_tty:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    else:
        time.sleep(1.5)
        os.write(leader, b"main;a 1\n\x04")  # what a user types, then Ctrl-D
        time.sleep(0.5)
        os.write(leader, b"\x04")  # fold reads blocks: a second Ctrl-D ends the second read
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=60)
    os.close(leader)
    return code, stderr


def test_version_and_completion() -> None:
    version = run("--version")
    assert version.returncode == 0 and re.fullmatch(rb"flamegraph \d+\.\d+\.\d+\n", version.stdout)
    top = run("--help").stdout.decode()
    assert "--install-completion" in top and "--show-completion" in top


def test_every_command_starts_with_a_whole_sentence_and_ends_with_examples() -> None:
    listing = run("--help").stdout.decode()
    for command in COMMANDS:
        summary = re.search(rf"^  {command}\s+(.*)$", listing, re.M)
        assert summary is not None, command
        assert summary.group(1).endswith(".") and "..." not in summary.group(1), summary.group(1)
        text = run(command, "--help").stdout.decode()
        examples = text.split("Examples:\n", 1)[1].split("\n\n", 1)[0].splitlines() if "Examples:" in text else []
        assert 2 <= len(examples) <= 3 and all(e.strip().startswith(("flamegraph ", "perf ")) for e in examples), (
            command, examples,
        )  # fmt: skip


def test_placeholders_say_what_goes_there_and_are_the_same_everywhere() -> None:
    seen: dict[str, set[str]] = {}
    for command in COMMANDS:
        text = run(command, "--help").stdout.decode().split("Options:", 1)[1]
        assert not re.search(r"--\S+ (INTEGER|FLOAT|PATH)\b", text), (command, re.findall(r"--\S+ [A-Z]+", text))
        for option, placeholder in re.findall(r"(--[a-z][-a-z]*) ([A-Z][A-Z_,=|%\[\]:.]*)", text):
            seen.setdefault(option, set()).add(placeholder)
    assert {option: names for option, names in seen.items() if len(names) > 1} == {}
    assert seen["--output"] == {"FILE"} and seen["--pid"] == {"PID"} and seen["--window"] == {"START,END"}


def test_one_meaning_per_flag() -> None:
    fold = run("fold", "--help").stdout.decode().split("Options:", 1)[1]
    for old in ("--pid", "--tid", "--kernel", "--jit", "--all", "--event-filter"):
        assert not re.search(rf"(^|\s){old}\b", fold), old  # hidden: the old names mean something else elsewhere
    for command in ("fold", "record", "render"):
        assert re.search(r"-e, --event EVENT", run(command, "--help").stdout.decode()), command
    for command in ("record", "offcpu"):
        assert "--pid PID" in run(command, "--help").stdout.decode()
    assert "--kernel / --no-kernel" in run("offcpu", "--help").stdout.decode()


def test_old_fold_flags_still_work_and_say_what_replaced_them() -> None:
    pairs = [(("--pid",), ("--with-pid",)), (("--tid",), ("--with-tid",)), (("--all",), ("--annotate",)),
             (("--kernel", "--jit"), ("--annotate-kernel", "--annotate-jit")),
             (("--event-filter", "cpu-clock"), ("-e", "cpu-clock"))]  # fmt: skip
    for old, new in pairs:
        before = run("fold", "--no-group-unknown", *old, str(PERF_TEXT))
        after = run("fold", "--no-group-unknown", *new, str(PERF_TEXT))
        assert before.returncode == after.returncode == 0 and before.stdout == after.stdout, old
        assert before.stderr.startswith(f"note: fold {old[0]} is deprecated".encode()) and after.stderr == b"", old


def test_record_and_offcpu_take_the_render_options() -> None:
    for command in ("record", "offcpu"):
        text = run(command, "--help").stdout.decode()
        for option in ("--png FILE", "--top N", "--width PIXELS", "--preset NAME", "--highlight", "--open"):
            assert option in text, (command, option)
        # Checked before anything is recorded: a bad value costs no recording (and needs no perf).
        bad = run(command, "--width", "50", "--", "true")
        assert bad.returncode == 2 and b"--width 50: at least 200 pixels" in bad.stderr, bad.stderr
        unknown = run(command, "--preset", "nope", "--", "true")
        assert unknown.returncode == 2 and b"nope" in unknown.stderr
    assert "--show-idle" in run("offcpu", "--help").stdout.decode()


def test_fold_window_keeps_the_samples_in_the_span(tmp_path: Path) -> None:
    start, end = json.loads(SAMPLE.with_name("mlp-oncpu.json").read_text())["window"]  # the training window
    middle = round((start + end) / 2, 3)
    whole = run("fold", "--annotate", str(SAMPLE)).stdout
    first = run("fold", "--annotate", "--window", f"{start},{middle}", str(SAMPLE), "-o", str(tmp_path / "a.folded"))
    rest = run("fold", "--annotate", "--window", f"{middle + 1e-6:.6f},", str(SAMPLE), "-o", str(tmp_path / "b.folded"))
    assert first.returncode == rest.returncode == 0, (first.stderr, rest.stderr)

    def total(data: bytes) -> int:
        return sum(int(line.rsplit(b" ", 1)[1]) for line in data.splitlines())

    a, b = (tmp_path / "a.folded").read_bytes(), (tmp_path / "b.folded").read_bytes()
    assert 0 < total(a) < total(whole) and total(a) + total(b) == total(whole)
    assert f"{start:.3f}–{middle:.3f} s of perf's clock" in (tmp_path / "a.folded.json").read_text()
    empty = run("fold", "--window", "1,2", str(SAMPLE))
    assert empty.returncode == 3 and b"no samples in the window 1.000\xe2\x80\x932.000 s" in empty.stderr
    assert run("fold", "--window", "2,1", str(SAMPLE)).returncode == 2


def test_open_shows_the_result_in_the_users_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    (tmp_path / "in.folded").write_bytes(b"main;a 3\nmain;b 1\n")
    done = run("render", "in.folded", "-o", "out.svg", "--open", cwd=tmp_path, env={"BROWSER": f"{browser} %s"})
    assert done.returncode == 0, done.stderr
    for _ in range(100):
        if opened.exists():
            break
        time.sleep(0.05)
    assert opened.read_text().strip() == (tmp_path / "out.svg").resolve().as_uri()


@pytest.mark.parametrize(
    ("command", "content", "says"),
    [
        ("render", PERF_TEXT.read_bytes(), "perf script output, not folded stacks: run `flamegraph fold"),
        ("render", gzip.compress(PERF_TEXT.read_bytes()), "this looks like perf script output"),
        ("render", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>\n', "an SVG"),
        ("fold", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>\n', "an SVG"),
        ("fold", b"python;main;compute 17\npython;main 3\n", "folded stacks, not perf script output: they are "
                                                              "folded already: draw them with `flamegraph render"),
    ],
    ids=["render-perf-script", "render-perf-script-gz", "render-svg", "fold-svg", "fold-folded"],
)
def test_wrong_input_gets_a_hint(tmp_path: Path, command: str, content: bytes, says: str) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    done = run(command, str(path), "-o", str(tmp_path / "out"))
    assert done.returncode == 4
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"flamegraph: {path}: this looks like")  # one line
    assert says in lines[0]
    assert not (tmp_path / "out").exists()
    piped = run(command, "-", stdin=content)  # the same from stdin, read ahead without consuming it
    assert piped.returncode == 4 and says.split(":")[0] in piped.stderr.decode()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>\n', "diff reads folded stacks"),
        (PERF_TEXT.read_bytes(), "then diff out.folded"),
        (b'{"a": 1}\n', "diff reads folded stacks"),
    ],
    ids=["svg", "perf-script", "json"],
)
def test_diff_names_diff_in_its_wrong_input_hint(tmp_path: Path, content: bytes, says: str) -> None:
    (tmp_path / "a.folded").write_bytes(b"main;a 3\n")
    (tmp_path / "x").write_bytes(content)
    done = run("diff", str(tmp_path / "a.folded"), str(tmp_path / "x"), "-o", str(tmp_path / "d.svg"))
    assert done.returncode == 4 and says in done.stderr.decode(), done.stderr
    assert b"render" not in done.stderr


def test_reading_stdin_from_a_terminal_says_so() -> None:
    code, stderr = on_a_terminal("render", "-o", "/dev/null", stdin_tty=True, stdout_tty=False)
    assert code == 0 and "reading folded stacks from stdin (the terminal)" in stderr and "Ctrl-D" in stderr
    code, stderr = on_a_terminal("fold", "-o", "/dev/null", stdin_tty=True, stdout_tty=False)
    assert "reading perf script output from stdin" in stderr


def test_render_never_pours_svg_onto_a_terminal() -> None:
    code, stderr = on_a_terminal("render", stdin_tty=False, stdout_tty=True, stdin=b"main;a 1\n")
    assert code == 2 and "the SVG would be written to the terminal: give -o FILE.svg" in stderr
    assert run("render", "-", stdin=b"main;a 1\n").stdout.startswith(b"<?xml")  # piped: as before


def test_render_of_a_folded_file_draws_what_record_drew(tmp_path: Path) -> None:
    """fold -o writes out.folded.json; render picks up its event and unit (off-CPU: microseconds)."""
    offcpu = GOLDEN / "offcpu" / "attach-new-thread.perf.txt"
    assert run("fold", "--offcpu", str(offcpu), "-o", str(tmp_path / "w.folded")).returncode == 0
    drawn = run("render", str(tmp_path / "w.folded"))
    assert parse(drawn.stdout).findtext(f"{SVG}title") == "Off-CPU Time Flame Graph"
    assert all(f.title.endswith("%)") and " s," in f.title or " ms," in f.title or " µs," in f.title
               for f in frames(drawn.stdout))  # fmt: skip
    ignored = run("render", "--no-context", str(tmp_path / "w.folded"))
    assert parse(ignored.stdout).findtext(f"{SVG}title") == "Flame Graph"
    # A FILE.json the user wrote is theirs: not read, not replaced.
    (tmp_path / "mine.folded.json").write_text('{"my": "notes"}\n')
    assert run("fold", "--no-group-unknown", str(PERF_TEXT), "-o", str(tmp_path / "mine.folded")).returncode == 0
    assert (tmp_path / "mine.folded.json").read_text() == '{"my": "notes"}\n'
    mine = run("render", str(tmp_path / "mine.folded"))
    assert mine.returncode == 0 and b"not used" in mine.stderr


def test_record_facts_travel_with_the_folded_file(tmp_path: Path) -> None:
    """What `record --folded` saves (title, subtitle, preset, capture facts) gives `render` the same graph."""
    from flamegraph.io.sidecar import Context, render_sidecar
    from flamegraph.model import FoldedProfile
    from flamegraph.render import RenderOptions, render_svg

    profile = FoldedProfile({"python;mxnet::MKLDNNRun;jit_avx512_gemm": 3, "python;main": 1}, event="cpu-clock",
                            metadata={"command": "python train.py", "perf": "6.1.187"})  # fmt: skip
    options = RenderOptions(title="train.py: on-CPU", subtitle="cpu-clock, 499 Hz", preset="onednn")
    recorded = render_svg(profile, options)
    (tmp_path / "out.folded").write_bytes(b"python;main 1\npython;mxnet::MKLDNNRun;jit_avx512_gemm 3\n")
    context = Context.of(profile, title=options.title, subtitle=options.subtitle, preset="onednn")
    (tmp_path / "out.folded.json").write_bytes(render_sidecar(context))
    assert run("render", str(tmp_path / "out.folded")).stdout == recorded


def test_one_sample_is_singular() -> None:
    drawn = run("render", "-", stdin=b"main;a 1\nmain;b 1\nmain;b;c 2\n").stdout
    titles = {f.name: f.title for f in frames(drawn)}
    assert titles["b"] == "b (3 samples, 75.00%; self 1, 25.00%)"  # the unit said once; the page adds it back
    assert titles["a"] == "a (1 sample, 25.00%; all self)"  # a leaf: the page spells the numbers out again
    assert titles["c"] == "c (2 samples, 50.00%; all self)"
    assert titles["main"] == "main (4 samples, 100.00%)"  # no self time: not said (the page says "self 0")
    assert texts(drawn, "summary") == ["event not recorded · 4 samples · 3 stacks"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
@pytest.mark.parametrize(
    "command",
    [
        ["offcpu", "-p", "1", "--duration"],
        ["record", "--duration"],
        ["fleet", "record", "--scheduler", "local:1", "--duration"],
        ["fleet", "record", "--scheduler", "local:1", "--grace"],
        ["offcpu", "--min-us"],
    ],
    ids=lambda c: " ".join(c),
)
def test_nan_and_infinity_are_refused_as_negatives_are(command: list[str], value: str, tmp_path: Path) -> None:
    """`offcpu -p PID --duration nan` never stopped: nan and inf are a usage error (exit 2), as -1 is,
    before anything is recorded."""
    result = run(*command, value, "-o", str(tmp_path / "out.svg"), "--", "true")
    assert result.returncode == 2, result.stderr
    said = result.stderr.decode()
    assert said.startswith(f"flamegraph: {command[-1]} {value!r}: ") and said.count("\n") == 1, said  # one line
    assert b"Traceback" not in result.stderr and not (tmp_path / "out.svg").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["record", "--no-svg", "--", "true"],
        ["record", "--call-graph", "xx", "--", "true"],
        ["offcpu", "--state", "S,Q", "--", "true"],
        ["fold", "--window", "3,1", "-"],
        ["fold", "--scheduler", "local:1", "--window", "1,2", "-"],
        ["fleet", "record", "--scheduler", "local:1", "--no-svg", "--all-cpus"],
        ["render", "--order", "sideways", "-"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_bad_option_is_one_line(args: list[str]) -> None:
    """docs/exit-codes.md: a bad option is one line and exit 2, the same path (BadOption) for every
    check: typer.BadParameter printed a usage block of four lines for some of them."""
    result = run(*args, stdin=b"")
    said = result.stderr.decode()
    assert result.returncode == 2, said
    assert said.startswith("flamegraph: ") and said.count("\n") == 1, said


def test_no_command_raises_typer_s_bad_parameter() -> None:
    for path in (REPO / "flamegraph").rglob("*.py"):
        assert "BadParameter" not in path.read_text(), f"{path}: raise BadOption (one line) instead"
