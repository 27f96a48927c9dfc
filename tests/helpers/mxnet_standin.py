"""A stand-in `mxnet` package and a program using it, run through the real in-process hook (the tests of
--mxnet's in-process part and of its segments)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

from flamegraph.frameworks.jit.hook import HOOK

FAKE_MXNET = {
    "__init__.py": """
        import atexit, os
        __version__ = "0.0-standin"
        from . import nd, profiler
        atexit.register(lambda: profiler.log("mxnet shutdown"))
        """,
    "nd.py": """
        def waitall():
            from .profiler import log
            log("waitall")
        """,
    "profiler.py": """
        import json, os, stat
        config = {}
        def log(text):
            with open(os.environ["STANDIN_LOG"], "a") as f:
                f.write(text + "\\n")
        def set_config(**kwargs):
            config.update(kwargs)
            try:
                os.unlink(kwargs["filename"])  # MXNet 1.9.1 removes the name first (EPERM on /proc/self/fd/N)
            except OSError:
                pass
            log("set_config " + " ".join(f"{k}={v}" for k, v in sorted(kwargs.items()) if k != "filename"))
            named = kwargs["filename"]  # by name, the file is gone until the first dump creates it again
            kind = "a pipe" if os.path.exists(named) and stat.S_ISFIFO(os.stat(named).st_mode) else "no pipe"
            log(f"trace to {kind}" + (" by fd" if kwargs["filename"].startswith("/proc/self/fd/") else ""))
            write('{\\n    "traceEvents": [\\n' + json.dumps({"ph": "M", "pid": 0, "name": "process_name"}))
        def write(text):  # MXNet 1.9.1 opens the trace by name at each dump: "w" the first time, "a" after
            with open(config["filename"], "a" if config.get("opened") else "w") as f:
                f.write(text)
            config["opened"] = True
        def event(name, ph, ts):
            return json.dumps({"name": name, "cat": "operator", "ph": ph, "ts": ts, "pid": 0, "tid": 5}, indent=4)
        def continuous(count):  # a dump timer's output: `count` operator spans, each event on its own lines
            first = config.setdefault("spans", 0)
            config["spans"] += count
            write("".join(f",\\n{event('dot', 'B', 100 + 2 * i)},\\n{event('dot', 'E', 101 + 2 * i)}"
                          for i in range(first, first + count)))
        def set_state(state):
            log("state " + state)
        def dump():
            write(",\\n" + event("FullyConnected", "B", 10) + ",\\n" + event("FullyConnected", "E", 20))
            write('\\n    ],\\n    "displayTimeUnit": "ms"\\n}\\n')
            log("dump")
        """,
}
PROGRAM = """
    import ctypes, os, stat, sys, time
    import mxnet
    libc = ctypes.CDLL(None)
    libc.printf(b"dnnl_verbose,1.5,exec,cpu,eltwise,jit:avx512_common,forward_training,data,,alg,64x128,0.01\\n")
    if os.environ.get("STANDIN_LINES"):  # oneDNN's way: printf + fflush(stdout) per line, more than a pipe holds
        assert stat.S_ISFIFO(os.fstat(1).st_mode), "C stdout is no pipe"
        stdout = ctypes.c_void_p.in_dll(libc, "stdout")
        line = b"dnnl_verbose,%d.0,exec,cpu,eltwise,jit:avx512_common,forward_training,data,,alg,64x128,0.01\\n"
        for i in range(int(os.environ["STANDIN_LINES"])):
            libc.printf(line, i)
            libc.fflush(stdout)
    if os.environ.get("STANDIN_SPANS"):  # the profiler's continuous dumps: more than the trace's pipe holds
        for _ in range(4):
            mxnet.profiler.continuous(int(os.environ["STANDIN_SPANS"]) // 4)
    print("the program's own line", flush=True)
    if os.environ.get("STANDIN_CHILD") and os.fork() == 0:  # a worker that outlives the program by seconds
        time.sleep(float(os.environ["STANDIN_CHILD"]))
        os._exit(0)
    if len(sys.argv) > 1:
        print("READY", flush=True)
        time.sleep(30)
    """


def setup(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    package = tmp_path / "site" / "mxnet"
    package.mkdir(parents=True)
    for name, text in FAKE_MXNET.items():
        (package / name).write_text(textwrap.dedent(text))
    program = tmp_path / "train.py"
    program.write_text(textwrap.dedent(PROGRAM))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "STANDIN_LOG": str(tmp_path / "log.txt")}
    directory = tmp_path / "mx"
    return [sys.executable, str(HOOK), "--mxnet-dir", str(directory), "--", str(program)], env, directory


def sidecar(directory: Path) -> dict[str, object]:
    (path,) = directory.glob("mxnet-*.json")
    facts: dict[str, object] = json.loads(path.read_text())
    return facts
