"""The command the user typed is the command that runs: found as their shell finds it, run with
their PATH, whatever perf does to its own.

perf (6.1, Debian's /usr/bin/perf) changes its environment before it execs the workload: it puts its
exec path and its own directory in front of PATH (`/usr/lib/perf-core:/usr/bin:...`) and sets PREFIX,
PERF_BUILDID_DIR and DEBUGINFOD_URLS. The workload inherits all of it, so a bare `python3` became
/usr/bin/python3 inside a virtualenv. So the program is resolved here (the user's PATH, their working
directory) and handed to perf as an absolute path; and perf is started as `perf` (argv[0] without a
directory: it then adds no directory of its own) with PERF_EXEC_PATH set to the first directory of
the user's PATH: what perf puts in front is that directory again, so every lookup the program makes
finds what the user's shell finds (PATH reads `/v/bin:/v/bin:/usr/bin...`).

Why not `env PATH=... PROGRAM` (one exec, the exact environment): perf 6.1's DWARF unwinder keeps the
launcher's libc after the exec, and in 3 of 8 recordings no stack of the program unwound through libc
(10 of 10 without the launcher). The variables perf sets (PERF_EXEC_PATH, PREFIX, PERF_BUILDID_DIR,
DEBUGINFOD_URLS) are the price, said in docs/record.md.

    resolve_program("python3", env, cwd) -> "/home/u/venv/bin/python3"     # or CommandNotFound (exit 8)
    perf_environment({"PATH": "/v/bin:/usr/bin"}, cwd) -> {..., "PERF_EXEC_PATH": "/v/bin"}
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..io.diagnostics import CommandNotFound

# What perf sets in its own environment before exec'ing the workload (perf.c, util/config.c,
# subcmd/exec-cmd.c in 6.1; PREFIX and PERF_BUILDID_DIR overwrite the user's own value).
PERF_SETS = ("PATH", "PREFIX", "PERF_BUILDID_DIR", "DEBUGINFOD_URLS", "PERF_EXEC_PATH")


def search_path(env: Mapping[str, str]) -> list[str]:
    """PATH's directories as execvp(3) and the shell read them: an empty entry is the working directory;
    no PATH at all is the system default (confstr _CS_PATH)."""
    path = env.get("PATH")
    if path is None:
        path = os.confstr("CS_PATH") or os.defpath
    return [entry or "." for entry in path.split(":")]


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def resolve_program(program: str, env: Mapping[str, str], cwd: str | None = None) -> str:
    """The absolute path the user's shell would run for `program`: a name with a slash is taken as it
    is, from `cwd`; a bare name is searched on PATH (relative entries from `cwd`). Not lexically
    normalised nor symlink-resolved: a venv's bin/python must stay that path, not the one it links to."""
    base = cwd if cwd is not None else os.getcwd()
    if "/" in program:
        path = os.path.join(base, program)
        if os.path.isdir(path):
            raise CommandNotFound(f"{program}: is a directory, not a program")
        if not os.path.exists(path):
            raise CommandNotFound(f"{program}: no such executable file")
        if not _executable(path):
            raise CommandNotFound(f"{program}: not executable (chmod +x {program})")
        return path
    if not program:
        raise CommandNotFound("'': command not found")
    found_unexecutable = None
    for directory in search_path(env):
        path = os.path.join(base, directory, program)
        if _executable(path):
            return path
        if found_unexecutable is None and os.path.isfile(path):
            found_unexecutable = path
    if found_unexecutable is not None:
        raise CommandNotFound(f"{program}: {found_unexecutable} is not executable, and no other one is on PATH")
    raise CommandNotFound(f"{program}: command not found (not on PATH)")


def resolve_command(command: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> tuple[str, ...]:
    """`command` with its program made absolute (resolve_program); the arguments as they are."""
    return (resolve_program(command[0], env, cwd), *command[1:])


def perf_environment(env: Mapping[str, str], cwd: str | None) -> dict[str, str]:
    """What perf is given so that the command it launches searches the user's PATH in the user's order:
    perf puts PERF_EXEC_PATH in front of PATH, so that is the user's first directory (made absolute as
    perf makes it: from the working directory). A PERF_EXEC_PATH of the user's own is kept."""
    given = dict(env)
    if "PERF_EXEC_PATH" not in given:
        given["PERF_EXEC_PATH"] = os.path.join(cwd or os.getcwd(), search_path(env)[0])
    return given


def command_facts(typed: Sequence[str], ran: Sequence[str]) -> dict[str, str]:
    """The capture facts of a launched command: what the user typed, and the program that ran for it."""
    facts = {"command": shlex.join(typed)}
    if ran and ran[0] != typed[0]:
        facts["program"] = ran[0]
    return facts


PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")  # python, python3, python3.11 (not python3-config)
VERSIONED = re.compile(r"^python(\d+)\.(\d+)$")
VENV_VERSION = re.compile(r"^\s*version(?:_info)?\s*=\s*(\d+)\.(\d+)", re.MULTILINE)  # pyvenv.cfg
ASK_VERSION = "import sys; print(*sys.version_info[:2])"


def python_interpreter(program: str, env: Mapping[str, str], cwd: str | None = None) -> str | None:
    """The Python interpreter that runs `program` (absolute): itself if it is named python*, or the one
    its `#!` line names (`#!/usr/bin/python3`, `#!/usr/bin/env python3`: pytest, pip and console scripts)."""
    found = _interpreter(program, env, cwd)
    return found[0] if found else None


def _interpreter(program: str, env: Mapping[str, str], cwd: str | None) -> tuple[str, bool] | None:
    """(interpreter, whether it runs `program` as `interpreter program` exactly: a `#!` line with no
    options), or None."""
    if PYTHON.match(os.path.basename(program)):
        return program, True
    try:
        with open(program, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    plain = len(words) == 1
    if words and os.path.basename(words[0]) == "env":  # the first word that is neither an option nor NAME=VALUE
        plain = len(words) == 2
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w][:1]
    if not words or not PYTHON.match(os.path.basename(words[0])):
        return None
    try:
        return resolve_program(words[0], env, cwd), plain
    except CommandNotFound:
        return None


@dataclass(frozen=True)
class PythonTarget:
    """The Python a command runs: its interpreter, version, and the command as `python ...` (a plain
    `#!` script run by the interpreter it names; the command itself otherwise)."""

    interpreter: str
    version: tuple[int, int]
    command: tuple[str, ...]

    @property
    def release(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def python_target(command: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> PythonTarget | None:
    """The Python `command` (its program absolute) runs, if it is one and its version can be told.
    A plain `#!` script reads as `INTERPRETER SCRIPT ARGS` (what --jit's launcher wraps); one whose `#!`
    line carries options (`#!/usr/bin/python3 -u`) keeps its command (its functions are named and unwound
    all the same: the command runs as given, see frameworks.jit.pysite)."""
    found = _interpreter(command[0], env, cwd)
    if found is None:
        return None
    interpreter, plain = found
    version = python_version(interpreter, env, cwd)
    if version is None:
        return None
    if interpreter == command[0] or not plain:
        return PythonTarget(interpreter, version, tuple(command))
    return PythonTarget(interpreter, version, (interpreter, *command))


def python_version(interpreter: str, env: Mapping[str, str], cwd: str | None = None) -> tuple[int, int] | None:
    """(major, minor) of `interpreter`, the cheapest sure way first: the file it links to (a venv's python3
    -> python3.11), its venv's pyvenv.cfg, else asking it (-I -S: ~10 ms; a pyenv shim ~0.4 s, and it
    picks the version from `cwd` and `env` as it will for the run). None if it cannot tell."""
    if match := VERSIONED.match(os.path.basename(os.path.realpath(interpreter))):
        return int(match.group(1)), int(match.group(2))
    try:
        cfg = Path(interpreter).parent.parent.joinpath("pyvenv.cfg").read_text(errors="replace")
    except OSError:
        cfg = ""
    if match := VENV_VERSION.search(cfg):
        return int(match.group(1)), int(match.group(2))
    try:
        asked = subprocess.run(
            [interpreter, "-I", "-S", "-c", ASK_VERSION], env=dict(env), cwd=cwd, capture_output=True, timeout=10
        )
        major, minor = asked.stdout.split()
        return int(major), int(minor)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def python_note(command: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> str | None:
    """One line when `command` (its program absolute) runs a Python older than 3.12: perf sees only the
    interpreter's C functions (_PyEval_EvalFrameDefault, python3.11+0x574e70), never the program's own."""
    interpreter = python_interpreter(command[0], env, cwd)
    version = python_version(interpreter, env, cwd) if interpreter else None
    if version is None or version >= (3, 12):
        return None
    return (
        f"{interpreter} is Python {version[0]}.{version[1]}: its Python functions cannot appear in the graph, only "
        "the interpreter's C functions (_PyEval_EvalFrameDefault...); run it with Python 3.12+ for Python frames"
    )
