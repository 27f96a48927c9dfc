"""Run a Python program so that perf can name (and unwind) oneDNN's JIT kernels, and MXNet's profiler records it.

The in-process launcher of both frameworks (--jit, --mxnet): it sits beside frameworks/jit/ and
frameworks/mxnet/ so neither imports the other.

    python -m flamegraph.frameworks.flamegraph_launcher --jit-dir DIR [--no-jitdump] -- train.py --epochs 2
    python /path/to/flamegraph/frameworks/flamegraph_launcher.py --jit-dir DIR -- -m package.module ARGS
    python -m flamegraph.frameworks.flamegraph_launcher --jit-dir DIR -- -c "import mxnet; ..."
    python -m flamegraph.frameworks.flamegraph_launcher [--jit-dir DIR] --mxnet-dir MDIR -- train.py  # + MXNet's
    python -X perf -m flamegraph.frameworks.flamegraph_launcher --python-dir DIR -- train.py  # Python frames (3.12+)

With --mxnet-dir, MXNet's profiler and oneDNN's verbose log are switched on as well and written
to MDIR (`flamegraph.frameworks.mxnet.inprocess`); --jit-dir may then be left out.
With --python-dir (Python 3.12+ run with -X perf or PYTHONPERFSUPPORT=1), the jitdump marker is
mapped in DIR and the bytes of CPython's perf trampoline are saved as DIR/py-<pid>.trampoline
(`flamegraph.frameworks.jit.trampolines` later gives every trampoline of /tmp/perf-<pid>.map unwind info).

Before the program: DNNL_JIT_DUMP=1 (oneDNN then writes each kernel to the working directory)
and, unless --no-jitdump, the jitdump marker DIR/jit-<pid>.dump (perf records its mapping).
At exit (atexit: after the program and MXNet's own shutdown, while the kernels are still mapped,
so the validation kernels created late are included): the dumps are found in memory,
/tmp/perf-<pid>.map is written (a copy in DIR marks it as ours: the recorder removes it after the
run; a map the process wrote itself, python -X perf's, gets the kernels appended and stays), the
dump files move to DIR/dnnl-<pid>/ and DIR/jit-<pid>.kernels lists where each kernel is.
`flamegraph.frameworks.jit.session.complete(DIR)` later adds unwind info.
Standard library only, so that it runs in any Python 3.11 interpreter, installed with us or not.
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
from types import FunctionType

# Only what every run needs is imported before the program; the rest when it is used (the JIT scan's
# modules cost ~0.2 s of start-up, time the program's own first samples would wait for).
if not __package__:  # run as a file by an interpreter that may not have flamegraph installed
    _here = os.path.abspath(__file__)
    _parent = _here[: _here.rindex(f"{os.sep}flamegraph{os.sep}")]  # the package's parent, at any depth
    if sys.flags.safe_path:  # -P, -I: python put no entry of ours first (sys.path[0] is the standard library's)
        sys.path.insert(0, _parent)
    else:
        sys.path[0] = _parent
    from flamegraph.frameworks.jit import jitdump, pychild
    from flamegraph.io import private
else:
    from ..io import private
    from .jit import jitdump, pychild

USAGE = (
    f"usage: {os.path.basename(__file__)} [--jit-dir DIR] [--no-jitdump] [--quiet] [--mxnet-dir DIR] "
    "[--python-dir DIR] -- (SCRIPT | -m MODULE | -c CODE) [ARGS...]"
)


def parse(argv: list[str]) -> tuple[str | None, bool, bool, list[str], str | None, str | None]:
    """(jit dir, jitdump?, quiet?, the program's argv as python would take it, MXNet dir, Python dir)."""
    jit_dir, with_jitdump, quiet, mxnet_dir, python_dir = None, True, False, None, None
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--jit-dir" and i + 1 < len(argv):
            jit_dir = argv[i + 1]
            i += 1
        elif argv[i] == "--python-dir" and i + 1 < len(argv):
            python_dir = argv[i + 1]
            i += 1
        elif argv[i] == "--mxnet-dir" and i + 1 < len(argv):
            mxnet_dir = argv[i + 1]
            i += 1
        elif argv[i] == "--no-jitdump":
            with_jitdump = False
        elif argv[i] == "--quiet":
            quiet = True
        else:
            raise SystemExit(f"{USAGE}\nunknown option {argv[i]!r}")
        i += 1
    program = argv[i + 1 :]
    nothing = jit_dir is None and mxnet_dir is None and python_dir is None
    if nothing or not program or (program[0] in ("-m", "-c") and len(program) < 2):
        raise SystemExit(USAGE)
    absolute = os.path.abspath
    return (
        absolute(jit_dir) if jit_dir else None,
        with_jitdump,
        quiet,
        program,
        absolute(mxnet_dir) if mxnet_dir else None,
        absolute(python_dir) if python_dir else None,
    )


def finish(jit_dir: str, start_cwd: str, quiet: bool) -> None:
    """At exit: locate the kernels, write the perf map and the kernels file, keep the dumps."""
    from flamegraph.frameworks.jit import jitmap, session  # imported by prepare: no import may register at exit

    try:
        pid = os.getpid()
        result = jitmap.scan("self", dump_dirs(start_cwd, os.getcwd()))
        perf_map = jitmap.save_perf_map(result.kernels, pid, jit_dir)  # removed after the run if ours
        kernels = session.keep_dumps(jit_dir, pid, result.kernels, result.missing)
        session.write_kernels(jit_dir, pid, kernels, result.summary(), round(result.seconds * 1000))
    except (OSError, private.NotPrivate) as err:
        print(f"flamegraph: naming JIT kernels failed: {err}", file=sys.stderr)
        return
    if not quiet and (result.kernels or result.missing):
        print(f"flamegraph: {result.summary()} -> {perf_map}", file=sys.stderr, flush=True)


def save_trampoline(directory: str) -> None:
    """DIR/py-<pid>.trampoline: the bytes every perf trampoline of this interpreter is a copy of
    (Python/asm_trampoline.S; `sub rsp, 8; call rcx; add rsp, 8; ret` on x86-64). Nothing if this
    Python has none (before 3.12, or built without perf support)."""
    import ctypes

    try:
        start = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_Py_trampoline_func_start"))
        end = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_Py_trampoline_func_end"))
    except (ValueError, AttributeError):
        return
    if 0 < end - start <= 256:
        private.replace_file(jitdump.trampoline_path(directory, os.getpid()), ctypes.string_at(start, end - start))


def start_python(directory: str, marker: bool = True) -> None:
    """This interpreter's jitdump marker and trampoline bytes in `directory` (ours alone), and the same for
    every child it forks (multiprocessing's fork workers: `pychild.save` at fork): each process's
    trampolines get unwind info after the run (`flamegraph.frameworks.jit.session.complete`). Children
    started afresh (spawn, the resource tracker, subprocess) load `pychild` through the sitecustomize the
    recorder puts first on PYTHONPATH (`flamegraph.frameworks.jit.pysite`)."""
    private.private_dir(directory)
    if marker:
        jitdump.create_marker(directory)
    save_trampoline(directory)
    code = pychild.trampoline_code()
    if code:
        os.register_at_fork(after_in_child=lambda: pychild.save(directory, os.getpid(), code))


def dump_dirs(*candidates: str) -> list[str]:
    """Where to look for oneDNN's dumps: the working directories (at start, at exit) nobody else may
    write to (a program that moved to /tmp leaves its later dumps there, unread and unmoved)."""
    fit = []
    for directory in dict.fromkeys(candidates):
        try:
            private.check_dumps_cwd(directory)
        except private.NotPrivate:
            continue
        fit.append(directory)
    return fit


# The program's globals, kept until the interpreter ends: as with `python PROGRAM`, what they hold
# (models, JIT kernels) is still alive when the exit handlers run.
PROGRAM_GLOBALS: dict[str, object] = {}


def run(program: list[str]) -> None:
    """Run the program as `python PROGRAM...` would: __main__, sys.argv and sys.path[0]."""
    if program[0] == "-m":
        sys.argv = [program[1], *program[2:]]
        first_path(os.getcwd())
        PROGRAM_GLOBALS.update(runpy.run_module(program[1], run_name="__main__", alter_sys=True))
    elif program[0] == "-c":
        sys.argv = ["-c", *program[2:]]
        first_path("")
        PROGRAM_GLOBALS.update({"__name__": "__main__", "__builtins__": __builtins__})
        exec(compile(program[1], "<string>", "exec"), PROGRAM_GLOBALS)
    else:
        sys.argv = program
        first_path(os.path.dirname(os.path.abspath(program[0])))
        PROGRAM_GLOBALS.update(runpy.run_path(os.path.abspath(program[0]), run_name="__main__"))  # as python: absolute


def first_path(entry: str) -> None:
    """sys.path[0] as python sets it for the program: `entry`, or none under -P/-I (our own entry taken off)."""
    if not sys.flags.safe_path:
        sys.path[0] = entry
    elif not __package__:
        sys.path.pop(0)  # the package's parent we inserted


def main(argv: list[str] | None = None) -> None:
    jit_dir, with_jitdump, quiet, program, mxnet_dir, python_dir = parse(sys.argv[1:] if argv is None else argv)
    try:
        prepare(jit_dir, with_jitdump, quiet, mxnet_dir, python_dir)
    except private.NotPrivate as refused:  # before the program: nothing of it has run
        print(f"flamegraph: {refused}", file=sys.stderr)
        raise SystemExit(refused.exit_code) from None
    run(program)


def _our_site(entry: str, python_dir: str) -> bool:
    parent, name = os.path.split(entry)
    cached = os.path.basename(parent) == "python-site" and name.startswith("site-")
    ours = cached or entry == os.path.join(python_dir, "site")
    return ours and os.path.isfile(os.path.join(entry, "sitecustomize.py"))


def prepare(
    jit_dir: str | None, with_jitdump: bool, quiet: bool, mxnet_dir: str | None, python_dir: str | None = None
) -> None:
    """The directories checked to be ours alone, then the dumps and the profiler switched on."""
    if python_dir is not None:
        # The sitecustomize's directory of pysite (unread under -S: its entry goes): CACHE/python-site/site-XXXX,
        # or the run's own DIR/site where the cache could not be ours
        sys.path[:] = [entry for entry in sys.path if not _our_site(os.path.abspath(entry or os.curdir), python_dir)]
        start_python(python_dir, marker=python_dir != jit_dir or not with_jitdump)  # one marker per process
    if jit_dir is not None:
        private.private_dir(jit_dir)
        if os.environ.get("DNNL_JIT_DUMP", "1") == "1":
            private.check_dumps_cwd(os.getcwd())
        os.environ.setdefault("DNNL_JIT_DUMP", "1")
        from flamegraph.frameworks.jit import jitmap, session  # noqa: F401  (now: at exit, concurrent.futures could not load)

        if with_jitdump:
            jitdump.create_marker(jit_dir)
        atexit.register(finish, jit_dir, os.getcwd(), quiet)
    if mxnet_dir is not None:
        from flamegraph.frameworks.mxnet import inprocess

        inprocess.install(mxnet_dir)


def own_frames() -> frozenset[str]:
    """This launcher's Python frames as the fold names them (`<module> (flamegraph_launcher.py)`,
    `main (flamegraph_launcher.py)`, `prepare (...)`...): folding.python leaves them out, with the runpy frames
    `run` calls under them. Derived from the module itself, so that a rename or a move cannot leave them in the
    graphs. Its file name is its own: a program's launcher.py or main.py is never taken for it."""
    file = os.path.basename(__file__)
    functions = [f for f in globals().values() if isinstance(f, FunctionType) and f.__module__ == __name__]
    return frozenset(f"{name} ({file})" for name in ("<module>", *(f.__name__ for f in functions)))


if __name__ == "__main__":
    main()
