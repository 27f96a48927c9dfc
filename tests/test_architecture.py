"""Imports point one way: cli -> fleet -> pipeline -> stages -> model/io, lazy ones too; folding and render never meet;
flamegraph/ never imports collectors/ or mxnet; collectors/ use the library, never the CLI;
symbol lookup shares the DWARF helpers with the JIT code but never imports it."""

from __future__ import annotations

import ast
import graphlib
import sys
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "flamegraph"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                found.add(".".join([*base, node.module] if node.module else base))
            else:
                found.add(node.module or "")
    return found


def module_file(name: str) -> Path:
    """A module named as imported (`flamegraph.naming.symbols`), so the rules follow it when the layout moves it."""
    path = REPO.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def package_files(name: str) -> list[Path]:
    return sorted(module_file(name).parent.rglob("*.py"))


def test_library_never_imports_collectors_or_mxnet() -> None:
    for path in PACKAGE.rglob("*.py"):
        bad = {name for name in imports_of(path) if name.split(".")[0] in {"collectors", "mxnet"}}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_collapse_and_render_never_import_each_other() -> None:
    for side, other in (("flamegraph.folding", "flamegraph.render"), ("flamegraph.render", "flamegraph.folding")):
        for path in package_files(side):
            bad = {name for name in imports_of(path) if name == other or name.startswith(f"{other}.")}
            assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_only_the_cli_imports_the_cli() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "cli" in path.relative_to(PACKAGE).parts or path.name == "__main__.py":
            continue
        bad = {name for name in imports_of(path) if name.startswith("flamegraph.cli")}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_collectors_never_import_the_cli() -> None:
    for path in (REPO / "collectors").rglob("*.py"):
        bad = {name for name in imports_of(path) if name.startswith("flamegraph.cli")}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_symbols_never_import_jit() -> None:
    jit = "flamegraph.frameworks.jit"
    bad = {name for name in imports_of(module_file("flamegraph.naming.symbols")) if name.startswith(jit)}
    assert not bad, f"symbols.py imports {bad}"


def test_the_fold_time_hook_never_imports_the_post_fold_report() -> None:
    hook = module_file("flamegraph.naming.observer")
    report = {"flamegraph.analysis.report", "flamegraph.folding.with_report"}
    bad = {name for name in imports_of(hook) if name in report}
    assert not bad, f"observer.py imports {bad}"


def test_tests_share_helpers_not_other_test_modules() -> None:
    for path in (REPO / "tests").rglob("*.py"):
        bad = {name for name in imports_of(path) if name.rpartition(".")[2].startswith("test_")}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}: shared code goes to tests/helpers/"


def test_model_and_diagnostics_import_no_stage() -> None:
    for name in ("flamegraph.model", "flamegraph.io.diagnostics"):
        stages = {i for i in imports_of(module_file(name)) if i.startswith("flamegraph.")}
        assert stages <= {"flamegraph.model", "flamegraph.io.diagnostics"}, (name, stages)


def test_library_imports_without_mxnet() -> None:
    import subprocess
    import sys

    code = "import sys; sys.modules['mxnet'] = None; import flamegraph, flamegraph.cli; print('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.stdout.strip() == "ok", result.stderr


def test_the_in_process_mxnet_part_imports_only_the_standard_library() -> None:
    """inprocess.py runs inside the user's program: it and what it imports stay stdlib-only."""
    in_process = {
        "flamegraph.frameworks.mxnet.inprocess",
        "flamegraph.frameworks.mxnet.clock",
        "flamegraph.frameworks.mxnet.gate",
        "flamegraph.frameworks.mxnet.pthreads",
        "flamegraph.frameworks.mxnet.drain",
        "flamegraph.frameworks.mxnet.limit",
        "flamegraph.frameworks.mxnet.segments",
        "flamegraph.io.private",
        "flamegraph.io.diagnostics",
    }
    for module in sorted(in_process):
        path = module_file(module)
        for name in imports_of(path):
            top = name.split(".")[0]
            assert name in in_process or (top in sys.stdlib_module_names and top != "flamegraph"), (module, name)


ROOT_NAMED = {
    *(".ci", ".gitignore", "Makefile", "README.md", "pyproject.toml"),
    *("bench", "collectors", "docs", "flamegraph", "sample_data", "tests"),
}


def test_the_root_holds_only_what_the_layout_names() -> None:
    """A merge once committed a wheel and a perf.data at the root; docs/development.md "Layout" names each entry."""
    import subprocess

    listed = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=REPO, check=True).stdout
    tracked = {line.split("/")[0] for line in listed.splitlines()}
    assert tracked <= ROOT_NAMED, f"not named by the layout: {sorted(tracked - ROOT_NAMED)}"
    layout = (REPO / "docs" / "development.md").read_text().split("## Layout", 1)[1]
    assert all(name in layout for name in ROOT_NAMED), "docs/development.md Layout names every root entry"


def _defines(path: Path, name: str) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == name for n in ast.walk(ast.parse(path.read_text())))


def _calls_signal_signal(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "signal":
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "signal":
                return True
    return False


def test_one_stop_signal_and_one_handler_path() -> None:
    """StopSignal is defined once, and only its module installs our handlers (`stop_on_signals`, for the
    CLI and a fleet recording alike). Other processes have their own: the fold's workers put the default
    back, the profiled program's SIGTERM runs its atexit (MXNet), the verbose log's and the trace's drainers
    ignore them, a Dask worker drops a pending signal."""
    defining = {path for path in PACKAGE.rglob("*.py") if _defines(path, "StopSignal")}
    assert defining == {module_file("flamegraph.io.diagnostics")}, defining
    other_processes = (
        "flamegraph.folding.parallel",
        "flamegraph.frameworks.mxnet.inprocess",
        "flamegraph.frameworks.mxnet.drain",  # the verbose log's and the trace's drainers: they end with their pipes
        "flamegraph.fleet.local_worker",
    )
    allowed = {module_file("flamegraph.io.diagnostics"), *map(module_file, other_processes)}
    installing = {path for path in PACKAGE.rglob("*.py") if _calls_signal_signal(path)}
    assert installing <= allowed, f"signal handlers installed outside diagnostics: {sorted(installing - allowed)}"


def test_one_window_type() -> None:
    """The time window has one shape (`Window`: seconds of perf's clock, either end open) with its one
    parser and formats; no second alias, nanosecond tuple or wrapper of the parser."""
    definitions, shapes, parsers = set(), set(), set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef | ast.Assign) and "Window" in {
                *([node.name] if isinstance(node, ast.ClassDef) else []),
                *(t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)),
            }:
                definitions.add(path)
            if isinstance(node, ast.FunctionDef) and ("parse_window" in node.name or "window_ns" in node.name):
                parsers.add(f"{path.name}:{node.name}")
        if "tuple[float | None, float | None]" in text:
            shapes.add(path)
    assert definitions == {module_file("flamegraph.window")}, definitions
    assert not shapes, f"a window as a bare tuple: {sorted(shapes)}"
    assert parsers <= {"numbers.py:parse_window_option"}, f"a second window parser: {sorted(parsers)}"


def test_one_meaning_per_option_field() -> None:
    """`kernel` meant "annotate _[k]" in FoldOptions and "keep kernel frames" in OffCpuOptions: each
    meaning has its own name in every options class (annotate_kernel, annotate_jit, keep_kernel)."""
    from dataclasses import fields

    from flamegraph.folding.options import FoldOptions
    from flamegraph.folding.perf_sched import OffCpuOptions

    fold_names = set(FoldOptions._fields)  # a NamedTuple (fold's start-up imports no dataclasses)
    offcpu_names = {field.name for field in fields(OffCpuOptions)}
    for options, names in ((FoldOptions, fold_names), (OffCpuOptions, offcpu_names)):
        assert not names & {"kernel", "jit"}, (options.__name__, names & {"kernel", "jit"})
    assert {"annotate_kernel", "annotate_jit"} <= fold_names
    assert {"annotate_kernel", "keep_kernel"} <= offcpu_names


# -- the layout: one folder per stage (docs/architecture.md) ----------------------------------------
STAGES = ("record", "folding", "naming", "analysis", "render", "export", "fleet", "frameworks", "io", "pipeline", "cli")
# File names two folders share because the folder is the meaning: each stage's off-CPU part, each
# stage's options, each framework's record hook, the command next to the stage it runs.
SHARED_NAMES = {
    "__init__.py": "packages",
    "offcpu.py": "record/, folding/, render/, pipeline/ and the offcpu command: each stage's off-CPU part",
    "options.py": "folding/ and render/: each stage's options",
    "hook.py": "frameworks/jit/ and frameworks/mxnet/: each framework's record hook",
    "perf.py": "io/ runs perf script, folding/ folds what it prints",
    "fold.py": "the fold command (cli/) and fold on a fleet (fleet/)",
    "views.py": "analysis/ (focus, callers...) and frameworks/mxnet/ (group by operator)",
    "summary.py": "render/ (the header's texts) and frameworks/mxnet/ (the operator tables)",
    "model.py": "the shared types and fleet/'s request and result",
    "inputs.py": "io/ opens inputs, cli/ says what a wrong one is",
}


def test_at_most_eight_modules_at_the_package_root() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(root) <= 8, f"{len(root)} modules at flamegraph/: {root}; put each in its stage's folder"
    assert all((PACKAGE / stage / "__init__.py").exists() for stage in STAGES)


def test_two_modules_share_a_name_only_where_the_folder_is_the_meaning() -> None:
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    shared = {name: paths for name, paths in names.items() if len(paths) > 1 and name not in SHARED_NAMES}
    assert not shared, f"modules sharing a name: {shared}"
    records = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*record*.py") if p.parent.name != "cli")
    assert not records, f"'record' is the folder record/ and the command cli/record.py: {records}"


def test_the_jit_code_never_imports_the_mxnet_code() -> None:
    """MXNet builds on the JIT's launcher and hook, never the other way (jit/hook.py imported
    mxnet.inprocess while mxnet/recording.py imported jit.recording)."""
    jit = module_file("flamegraph.frameworks.jit").parent
    mxnet = "flamegraph.frameworks.mxnet"
    for path in jit.rglob("*.py"):
        bad = {name for name in imports_of(path) if name == mxnet or name.startswith(mxnet + ".")}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


# -- commands are thin: flags -> a request -> the pipeline -> the result printed ----------------------
MAX_COMMAND_BODY = 45


def command_bodies() -> dict[str, int]:
    """Each command's body in lines: the statements after its docstring (the option declarations are its
    signature), blank and comment-only lines not counted."""
    found = {}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.parse(path.read_text()).body:
            commands = [d for d in getattr(node, "decorator_list", []) if isinstance(d, ast.Call)]
            if not isinstance(node, ast.FunctionDef) or not any(
                isinstance(d.func, ast.Attribute) and d.func.attr == "command" for d in commands
            ):
                continue
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            span = lines[body[0].lineno - 1 : body[-1].end_lineno]
            code = [line for line in span if line.strip() and not line.lstrip().startswith("#")]
            found[f"{path.name}:{node.name}"] = len(code)
    return found


def test_command_bodies_are_thin() -> None:
    bodies = command_bodies()
    assert {"fold.py:fold", "render.py:render", "record.py:record_cli", "offcpu.py:offcpu_cli"} <= set(bodies)
    fat = {name: size for name, size in bodies.items() if size > MAX_COMMAND_BODY}
    assert not fat, f"command bodies over {MAX_COMMAND_BODY} lines (move the work into flamegraph/pipeline/): {fat}"


# The steps only the pipeline composes: record's fold with its report, the writer of a recording's files,
# its exports, the pairing of an off-CPU recording, the MXNet join around a fold. A command, fleet or a
# recipe that calls one of these writes the sequence a second time (`make offcpu` once paired its
# recording and joined MXNet's operators itself). Each step -> the folders that may call it besides pipeline/.
PIPELINE_STEPS: dict[str, tuple[str, ...]] = {
    "fold_with_report": (),
    "fold_memory_recording": (),
    "write_results": (),
    "write_recording_exports": (),
    "fold_offcpu_recording": ("folding",),  # folding/wall_time.py pairs the switches of record --wall
    "joiner": ("frameworks",),  # MxnetHook.joiner: the fold's sample hook
    "report_waits": ("frameworks",),  # MxnetHook.report_waits: the join's facts after an off-CPU fold
    "instrumentation_fact": ("frameworks",),
}


def test_only_the_pipeline_composes_record_fold_report_write_export() -> None:
    pipeline = PACKAGE / "pipeline"
    sources = [*PACKAGE.rglob("*.py"), *(REPO / "collectors").rglob("*.py"), *(REPO / "bench").rglob("*.py")]
    callers = set()
    for path in sources:
        if path.is_relative_to(pipeline):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in PIPELINE_STEPS and not any(
                    path.is_relative_to(PACKAGE / folder) for folder in PIPELINE_STEPS[name]
                ):
                    callers.add(f"{path.relative_to(REPO)}:{name}")
    assert not callers, f"the pipeline's steps composed outside flamegraph/pipeline/: {sorted(callers)}"


# -- stage folders import one way (docs/architecture.md "Rules the tests keep") ----------------------
# Top to bottom; a folder imports only folders on a lower line. The last line is the core the stages
# share, whose folders still import each other (folding reads record's Recording and naming's hooks,
# record/ folds while perf records, io/ sniffs with folding's grammar): one knot that may shrink, never
# grow, and that imports nothing above it. Lazy imports inside functions count: they run too.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli"}),
    frozenset({"fleet"}),  # fleet record runs the pipeline's steps on each host; fold --scheduler hands it a fold
    frozenset({"pipeline"}),
    frozenset({"export", "frameworks"}),
    frozenset({"record", "folding", "naming", "analysis", "render", "io"}),
)


def folder_imports() -> dict[tuple[str, str], list[str]]:
    """(folder, folder it imports) -> the modules that import it, every import in the file counted."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) < 2:
            continue  # the root's shared modules (model, window, color, lazy) are no stage
        for name in imports_of(path):
            target = name.split(".")
            if target[0] == "flamegraph" and len(target) >= 2 and target[1] != parts[0]:
                if (PACKAGE / target[1]).is_dir():
                    edges.setdefault((parts[0], target[1]), []).append(f"{path.relative_to(REPO)} -> {name}")
    return edges


def test_stage_folders_have_no_import_cycle() -> None:
    """pipeline/perf_inputs.py once imported fleet.fold for fold --scheduler while fleet/tasks.py
    imported pipeline.oncpu: a loop, found only by reading lazy imports too."""
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert set(folders) == set().union(*LAYERS) == set(STAGES), "every stage folder is in one layer"
    level = {folder: index for index, layer in enumerate(LAYERS) for folder in layer}
    knot = len(LAYERS) - 1
    edges = folder_imports()
    upward = {
        f"{source} -> {target}": modules
        for (source, target), modules in sorted(edges.items())
        if level[target] <= level[source] and not level[source] == level[target] == knot
    }
    assert not upward, f"imports against the layers (docs/architecture.md): {upward}"
    assert any(level[source] == knot for source, _ in edges), "the layers are read from the real imports"


def module_imports(path: Path) -> set[str]:
    """The package's modules this file imports, lazily or not: `from . import x` names the module x, and
    a package (its __init__) is a module like any other."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            submodules = {
                f"{name}.{alias.name}" for alias in node.names if module_file(f"{name}.{alias.name}").exists()
            }
            found |= submodules if len(submodules) == len(node.names) else {*submodules, name}
    return {name for name in found if name.startswith("flamegraph.")}


def test_no_module_imports_one_that_imports_it_back() -> None:
    """No loop between modules, lazy imports counted: frames.py and grammar.py, spec.py and tracefs.py,
    svg.py and precompiled.py, and export's package and its files.py each imported the other until
    session 6. A loop hides which module owns a name."""
    graph = {
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): module_imports(path)
        for path in PACKAGE.rglob("*.py")
    }
    assert sum(map(len, graph.values())) > 300, "the graph is read from the real imports"
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as loop:
        raise AssertionError(f"modules that import each other: {' -> '.join(loop.args[1])}") from None
