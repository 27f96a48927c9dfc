"""`flamegraph fold ARGS` and `flamegraph convert IN OUT` read without typer (flamegraph/cli/quick.py) run
exactly as typer would run them.

The quick reader keeps its own table of each command's options; these tests hold it to typer's view
of the command (names, flags, value types) and hold what it reads to what typer's click reads, for any
command line made of the command's options, values and arguments. A line it does not read goes to typer.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click.types import STRING, IntRange
from typer.models import TyperPath
from typer.testing import CliRunner

import flamegraph.cli.convert as convert_command
import flamegraph.cli.fold as fold_command
from flamegraph.cli import register_commands
from flamegraph.cli.app import app
from flamegraph.cli.convert_run import run_convert
from flamegraph.cli.fold_run import run_fold
from flamegraph.cli.quick import (
    CONVERT_OPTIONS,
    FLAG,
    FOLD_OPTIONS,
    JOBS,
    MANY,
    PATH,
    QUICK_COMMANDS,
    TEXT,
    parse_args,
)

ONE_SAMPLE = b"python 1234 12345.678901: 1 cpu-clock:u: \n\t    7f0000001000 main+0x10 (/usr/bin/python3.11)\n\n"
DEFAULTS = {name: p.default for name, p in inspect.signature(run_fold).parameters.items()}
RUNS = {"fold": (fold_command, "run_fold", run_fold), "convert": (convert_command, "run_convert", run_convert)}


def _command(name: str = "fold") -> Any:
    register_commands([name])
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(QUICK_COMMANDS))
def test_the_table_is_the_commands_options(name: str) -> None:
    """Every option string typer declares for the command is in its table with its parameter and kind, and
    no other; its arguments are the table's, in order."""
    declared: dict[str, tuple[str, str, bool | None]] = {}
    arguments: list[str] = []
    for param in _command(name).params:
        if param.param_type_name == "argument":
            arguments.append(param.name)
            continue
        if param.name == "help":
            continue
        if param.is_flag:
            declared.update({opt: (param.name, FLAG, True) for opt in param.opts})
            declared.update({opt: (param.name, FLAG, False) for opt in param.secondary_opts})
            continue
        kind = JOBS if isinstance(param.type, IntRange) and param.type.min == 1 else None
        kind = PATH if isinstance(param.type, TyperPath) else kind
        kind = TEXT if param.type is STRING else kind
        kind = MANY if kind == TEXT and param.multiple else kind
        assert kind is not None, (param.name, param.type)
        declared.update({opt: (param.name, kind, None) for opt in param.opts})
    assert declared == QUICK_COMMANDS[name].options
    assert tuple(arguments) == (QUICK_COMMANDS[name].arguments or ("inputs",))


@pytest.mark.parametrize("name", sorted(QUICK_COMMANDS))
def test_the_run_functions_defaults_are_the_commands(name: str) -> None:
    """The quick path passes only the options given: the run function's defaults must be the command's."""
    command = _command(name)
    run = RUNS[name][2]
    defaults = {key: p.default for key, p in inspect.signature(run).parameters.items()}
    declared = {p.name: p.default for p in command.params if p.name != "help"}
    if name == "convert":  # IN and OUT are required: no default on either side
        defaults = {key: value for key, value in defaults.items() if value is not inspect.Parameter.empty}
        declared = {key: value for key, value in declared.items() if key not in ("source", "output")}
    assert declared == defaults


def _as_typer_reads(
    args: list[str], monkeypatch: pytest.MonkeyPatch, name: str = "fold"
) -> tuple[int, dict[str, Any] | None]:
    seen: list[dict[str, Any]] = []
    module, attribute, _ = RUNS[name]
    monkeypatch.setattr(module, attribute, lambda **values: seen.append(values))
    _command(name)
    result = CliRunner().invoke(app, [name, *args])
    return result.exit_code, seen[0] if seen else None


VALUES = ["0", "2", "-1", "+3", " 4", "1_0", "", "=", "x", "-", "--with-pid", "-h", "a=b", "cpu-clock"]
JUNK = ["--", "-h", "--help", "-x", "--nope", "--with", "-jx", "-wx", "fold", "--with-pid=1", "-oj", "-e"]


def _valued(option: str, value: str, attached: bool) -> list[str]:
    if not attached:
        return [option, value]
    return [f"{option}={value}" if option.startswith("--") else option + value]


PIECES = st.one_of(
    st.sampled_from([o for o, (_, kind, _) in FOLD_OPTIONS.items() if kind == FLAG]).map(lambda o: [o]),
    st.builds(
        _valued,
        st.sampled_from([o for o, (_, kind, _) in FOLD_OPTIONS.items() if kind != FLAG]),
        st.sampled_from(VALUES),
        st.booleans(),
    ),
    st.sampled_from(["-", "in.txt", "x"]).map(lambda s: [s]),
    st.sampled_from(JUNK).map(lambda s: [s]),
)


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(PIECES, max_size=6))
def test_what_the_quick_path_reads_typer_reads_alike(pieces: list[list[str]]) -> None:
    """A command line read quickly is one typer accepts with the same values; one it leaves to typer is
    typer's (often a usage error or help)."""
    args = [arg for piece in pieces for arg in piece]
    with pytest.MonkeyPatch.context() as monkeypatch:
        code, typer_values = _as_typer_reads(args, monkeypatch)
    quick = parse_args("fold", args)
    if quick is not None:
        assert code == 0 and typer_values == {**DEFAULTS, **quick}, (args, code, typer_values, quick)


CONVERT_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(run_convert).parameters.items()
    if p.default is not inspect.Parameter.empty
}
CONVERT_JUNK = ["--", "-h", "--help", "-x", "--nope", "--thread", "-ex", "--strict=1", "--meta", "-e", "convert"]
CONVERT_PIECES = st.one_of(
    st.sampled_from([o for o, (_, kind, _) in CONVERT_OPTIONS.items() if kind == FLAG]).map(lambda o: [o]),
    st.builds(
        _valued,
        st.sampled_from([o for o, (_, kind, _) in CONVERT_OPTIONS.items() if kind != FLAG]),
        st.sampled_from(VALUES),
        st.booleans(),
    ),
    st.sampled_from(["-", "in.txt", "out.svg", "x"]).map(lambda s: [s]),
    st.sampled_from(CONVERT_JUNK).map(lambda s: [s]),
)


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(CONVERT_PIECES, max_size=6))
def test_what_the_quick_path_reads_of_convert_typer_reads_alike(pieces: list[list[str]]) -> None:
    """The same for convert: two arguments, repeatable --meta, --threads/--no-threads."""
    args = [arg for piece in pieces for arg in piece]
    with pytest.MonkeyPatch.context() as monkeypatch:
        code, typer_values = _as_typer_reads(args, monkeypatch, "convert")
    quick = parse_args("convert", args)
    if quick is not None:
        assert code == 0 and typer_values == {**CONVERT_DEFAULTS, **quick}, (args, code, typer_values, quick)


@pytest.mark.parametrize(
    "args",
    [
        ["perf.txt", "out.svg"],
        ["perf.data", "out.pb.gz", "--title", "T", "--no-threads", "--meta", "a=1", "--meta=b=2"],
        ["-", "-", "--to", "speedscope", "-ecpu-clock", "--strict", "--group-unknown"],
        ["--", "-in", "-out.svg"],
    ],
)
def test_usual_convert_command_lines_are_read_quickly(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    quick = parse_args("convert", args)
    code, typer_values = _as_typer_reads(args, monkeypatch, "convert")
    assert quick is not None and code == 0 and typer_values == {**CONVERT_DEFAULTS, **quick}


@pytest.mark.parametrize("args", [[], ["in.txt"], ["a", "b", "c"], ["a", "b", "-h"], ["a", "b", "--meta"]])
def test_convert_help_and_mistakes_are_left_to_typer(args: list[str]) -> None:
    assert parse_args("convert", args) is None


@pytest.mark.parametrize(
    "args",
    [
        ["in.txt", "-o", "out.folded", "-j2"],
        ["--with-pid", "--event=cpu-clock", "-", "--no-group-unknown"],
        ["-oout", "--", "-j", "--with-pid"],
        ["--group-unknown", "--no-group-unknown", "-e", "--compat"],
        [],
    ],
)
def test_usual_command_lines_are_read_quickly(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    quick = parse_args("fold", args)
    code, typer_values = _as_typer_reads(args, monkeypatch)
    assert quick is not None and code == 0 and typer_values == {**DEFAULTS, **quick}


@pytest.mark.parametrize(
    "args", [["-h"], ["--help"], ["--nope"], ["-j", "0"], ["-jx"], ["-o"], ["--with-pid=yes"], ["-ox", "-h"]]
)
def test_help_and_mistakes_are_left_to_typer(args: list[str]) -> None:
    assert parse_args("fold", args) is None


def test_an_unreadable_existing_output_is_left_to_typer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """typer's path type refuses an existing path it cannot read; the quick path lets typer say so (os.access
    answers as for a user without read permission: root reads everything)."""
    locked = tmp_path / "locked"
    locked.write_text("")
    assert parse_args("fold", ["-o", str(locked)]) == {"output": locked}
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert parse_args("fold", ["-o", str(locked)]) is None
    assert parse_args("fold", ["-o", str(tmp_path / "new.folded")]) == {"output": tmp_path / "new.folded"}
    code, _ = _as_typer_reads(["-o", str(locked)], monkeypatch)
    assert code == 2  # typer: "File '...' is not readable."


def _flamegraph(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    boot = "import sys; sys.argv[0] = 'flamegraph'; from flamegraph.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-c", boot, *args], capture_output=True, cwd=cwd, check=False
    )


def _imported(stderr: bytes) -> set[str]:
    return {
        line.rpartition("|")[2].strip()
        for line in stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("extra", [[], ["-o", "out.folded"], ["--with-pid", "-j1", "--annotate"]])
def test_a_plain_fold_never_imports_typer(tmp_path: Path, extra: list[str]) -> None:
    (tmp_path / "one.txt").write_bytes(ONE_SAMPLE)
    result = _flamegraph(["fold", "one.txt", *extra], tmp_path)
    assert result.returncode == 0, result.stderr[-500:]
    assert not {name for name in _imported(result.stderr) if name == "typer" or name.startswith("typer.")}


def test_fold_help_and_errors_still_come_from_typer(tmp_path: Path) -> None:
    helped = _flamegraph(["fold", "--help"], tmp_path)
    assert helped.returncode == 0 and b"Usage:" in helped.stdout and "typer" in _imported(helped.stderr)
    wrong = _flamegraph(["fold", "-j", "0"], tmp_path)
    assert wrong.returncode == 2 and b"Invalid value for '-j' / '--jobs'" in wrong.stderr


def test_a_plain_convert_never_imports_typer(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_bytes(ONE_SAMPLE)
    result = _flamegraph(["convert", "one.txt", "one.svg", "--title", "One"], tmp_path)
    assert result.returncode == 0, result.stderr[-500:]
    assert b"<title>One</title>" in (tmp_path / "one.svg").read_bytes()
    assert not {name for name in _imported(result.stderr) if name == "typer" or name.startswith("typer.")}


def test_convert_help_and_errors_still_come_from_typer(tmp_path: Path) -> None:
    helped = _flamegraph(["convert", "--help"], tmp_path)
    assert helped.returncode == 0 and b"Usage:" in helped.stdout and "typer" in _imported(helped.stderr)
    wrong = _flamegraph(["convert", "one.txt"], tmp_path)
    assert wrong.returncode == 2 and b"Missing argument 'OUT'" in wrong.stderr
    said = _flamegraph(["convert", "one.txt", "one.xyz"], tmp_path)  # our own error, on the quick path
    assert said.returncode == 2 and b"cannot tell the format from the name" in said.stderr
