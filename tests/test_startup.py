"""Start-up: what each command imports before it does its work, and that every command's help stays the same.

`flamegraph fold` on a one-sample file is dominated by imports, so the fold command must not import
what it does not use (pydantic through typer's adapter, rich, jinja2 and the renderer, the JIT and
recording stages, process pools). Counted with `python -X importtime`, in a fresh interpreter.
The help texts are compared with goldens (tests/golden/help/), so a typer upgrade or a lazier import
cannot drop or change an option unnoticed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GOLDEN, REPO, check_golden

import flamegraph
import flamegraph.record
from flamegraph.cli import help_text
from flamegraph.cli.precompiled_help import typer_help

ONE_SAMPLE = (
    b"python 1234 12345.678901: 1 cpu-clock:u: \n"
    b"\t    7f0000001000 main+0x10 (/usr/bin/python3.11)\n"
    b"\t    7f0000000100 __libc_start_main+0x80 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    b"\n"
)
# The off-CPU modules, each by name (so they are followed wherever the layout puts them).
OFFCPU = (
    "flamegraph.record.offcpu",
    "flamegraph.record.proc",
    "flamegraph.folding.offcpu",
    "flamegraph.analysis.offcpu_threads",
)
# Never needed to fold text: the CLI library's extras, the renderer, recording, JIT naming, worker pools.
FOLD_NEVER = (
    "pydantic",
    "pydantic_core",
    "rich",
    "jinja2",
    "markupsafe",
    "elftools",
    "capstone",
    "cairosvg",
    "concurrent.futures",
    "multiprocessing",
    "flamegraph.render",
    "flamegraph.render.layout",
    "flamegraph.frameworks.jit.session",
    "flamegraph.frameworks.jit.hook",
    "flamegraph.record",
    *OFFCPU,
    # `dataclasses` imports `inspect` (ast, dis, tokenize): a fifth of `fold`'s start-up, so every type a
    # fold builds is a NamedTuple or a plain class.
    "dataclasses",
    "inspect",
    # Only for perf.data (build-ids), a gzip input or a fractional count; the colours only to draw.
    "flamegraph.naming.buildid",
    "flamegraph.naming.symbols",
    "flamegraph.io.perf",
    "mmap",
    "gzip",
    "decimal",
    "flamegraph.color",
)
# `flamegraph --help` registers every command but runs none: no stage (the record and offcpu commands
# read their defaults from flamegraph.record.spec, which is light).
HELP_NEVER = (
    *(name for name in FOLD_NEVER if name not in ("flamegraph.record", *OFFCPU)),
    *OFFCPU,
    "flamegraph.record.run",
    "flamegraph.record.script",
    "flamegraph.folding",
    "flamegraph.folding.stage",
    "flamegraph.analysis.report",
    "flamegraph.record.spec",  # the defaults the signatures show are in flamegraph.record.defaults
    "flamegraph.record.memory",
)
# Modules `fold` may import beyond a bare interpreter's: 109 in the editable dev install, 143 in a plain one
# (whose bare interpreter has not imported pathlib & co. yet) with typer 0.28; typer 0.29's pydantic
# adapter took it to 245.
FOLD_MODULE_BUDGET = 160
COMMANDS = ("fold", "render", "diff", "record", "offcpu", "convert", "fleet", "fleet record", "fleet diff")


def imported(args: list[str], cwd: Path) -> tuple[list[str], bytes]:
    """Modules a fresh `python -X importtime ARGS` imports (in order) and its stdout."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, cwd=cwd, env=_env(), check=True
    )
    names = [
        line.rpartition("|")[2].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line and "imported package" not in line
    ]
    return names, result.stdout


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP", "PYTHONPROFILEIMPORTTIME")}
    env["COLUMNS"] = "80"  # click wraps help at the terminal's width
    return env


def _hits(names: list[str], never: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(n == bad or n.startswith(bad + ".") for bad in never)]


def test_fold_imports_only_what_it_uses(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_bytes(ONE_SAMPLE)
    names, out = imported(["-m", "flamegraph", "fold", "one.txt"], tmp_path)
    assert out == b"python;__libc_start_main;main 1\n"
    assert not _hits(names, FOLD_NEVER), _hits(names, FOLD_NEVER)
    bare, _ = imported(["-c", "pass"], tmp_path)
    extra = len(set(names) - set(bare))
    assert extra <= FOLD_MODULE_BUDGET, f"fold imports {extra} modules beyond a bare interpreter's"


def test_fold_to_a_file_imports_only_what_it_uses(tmp_path: Path) -> None:
    """`fold -o` writes FILE.json beside FILE; checking that an existing one is ours reads its marker, not
    its fields (whose checks import the colours), and a text input builds no namer (build-ids, ELF)."""
    (tmp_path / "one.txt").write_bytes(ONE_SAMPLE)
    for _ in range(2):  # the second run finds the sidecar of the first
        names, _ = imported(["-m", "flamegraph", "fold", "one.txt", "-o", "out.folded"], tmp_path)
        assert (tmp_path / "out.folded").read_bytes() == b"python;__libc_start_main;main 1\n"
        assert not _hits(names, FOLD_NEVER), _hits(names, FOLD_NEVER)
    assert b'"flamegraph-perf"' in (tmp_path / "out.folded.json").read_bytes()


def test_help_imports_no_stage(tmp_path: Path) -> None:
    names, out = imported(["-m", "flamegraph", "--help"], tmp_path)
    assert b"Commands:" in out
    assert not _hits(names, HELP_NEVER), _hits(names, HELP_NEVER)
    assert not _hits(names, ("typer", "flamegraph.cli.app")), "the top-level help at 80 columns is precompiled"


def test_precompiled_help_is_typers() -> None:
    """cli/help_text.py is what typer prints for `flamegraph --help` now (after a change to the commands'
    help or a typer upgrade: `python -m flamegraph.cli.precompiled_help`)."""
    assert help_text.TEXT == typer_help(help_text.PROG), "run: python -m flamegraph.cli.precompiled_help"


@pytest.mark.parametrize("columns", [50, 79, 80, 200])
@pytest.mark.parametrize("how", ["module", "script"])
def test_help_prints_typers_bytes_at_any_width(columns: int, how: str) -> None:
    """From 80 columns on the precompiled text (the program's name on its usage line), below them typer:
    either way the bytes typer prints, for `python -m flamegraph` and for the installed script."""
    script = Path(sys.executable).with_name("flamegraph")
    if how == "script" and not script.exists():
        pytest.skip("no installed `flamegraph` script beside this interpreter")
    command = [sys.executable, "-m", "flamegraph"] if how == "module" else [str(script)]
    prog = "python -m flamegraph" if how == "module" else "flamegraph"
    for flag in ("--help", "-h"):
        env = {**_env(), "COLUMNS": str(columns)}
        result = subprocess.run([*command, flag], capture_output=True, text=True, env=env)
        assert result.returncode == 0 and result.stdout == typer_help(prog, columns), (flag, result.stderr)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_is_unchanged(command: str) -> None:
    """Every command's help, option by option, as the goldens have it (UPDATE_GOLDEN=1 after a deliberate change)."""
    args = [sys.executable, "-m", "flamegraph", *command.split(), "--help"]
    result = subprocess.run(args, capture_output=True, cwd=REPO, env=_env())
    assert result.returncode == 0, result.stderr
    check_golden(result.stdout, GOLDEN / "help" / f"{command.replace(' ', '-') or 'flamegraph'}.txt")


def test_record_help_says_the_call_graph_jit_records_with() -> None:
    """`record --help` states --jit's call graph as a literal (help imports no stage): it must be the one
    `record --jit` uses (JIT_CALL_GRAPH; chosen by `make stack-copy`, docs/record.md)."""
    from flamegraph.frameworks.jit.hook import JIT_CALL_GRAPH

    args = [sys.executable, "-m", "flamegraph", "record", "--help"]
    result = subprocess.run(args, capture_output=True, text=True, env={**_env(), "COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    assert f"the call graph default becomes {JIT_CALL_GRAPH})" in " ".join(result.stdout.split())


@pytest.mark.parametrize("package", [flamegraph, flamegraph.record])
def test_lazy_exports_resolve(package: object) -> None:
    """Every public name of a lazy facade (flamegraph.lazy) imports; other names are errors, as before."""
    names = package.__all__  # type: ignore[attr-defined]
    for name in names:
        assert getattr(package, name) is not None
    with pytest.raises(AttributeError):
        package.no_such_name  # type: ignore[attr-defined]  # noqa: B018


LISTING = """
import json
import typer.main
from typer._click import Context
from flamegraph.cli import register_commands
from flamegraph.cli.app import CommandGroup, app

register_commands(["--", "all"])  # not a group option: every command module, as `flamegraph x` imports them
for group in (typer.main.get_command(app), CommandGroup(name="flamegraph")):
    ctx = Context(group)
    commands = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
    print(json.dumps([[name, c.hidden, [c.get_short_help_str(n) for n in range(10, 160)]] for name, c in commands]))
"""


def test_the_help_lists_the_commands_as_they_are(tmp_path: Path) -> None:
    """`flamegraph --help` lists the commands from a table (cli/app.py LISTED) without importing them: the
    table is the registered commands, in their order, and each one's short help comes out alike at any width
    (in a fresh interpreter: the order is the one the command modules register in)."""
    out = subprocess.run([sys.executable, "-c", LISTING], capture_output=True, cwd=REPO, env=_env(), check=True)
    registered, listed = out.stdout.decode().splitlines()
    assert registered == listed


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    names, out = imported(["-m", "flamegraph", "--help"], tmp_path)
    assert b"fold     Collapse perf script output" in out
    commands = {f"flamegraph.cli.{module}" for module in ("fold", "render", "record", "offcpu", "convert", "fleet")}
    assert not commands & set(names), commands & set(names)
