"""What one streamed chunk's `perf script` costs, and which part of it is fixed (paid again for every chunk).

    python bench/chunk_script_cost.py [--chunks DIR | --epochs 2] [--rounds 3] [--aliases]

Without --chunks it records the MLP as `record` streams it (dwarf,65528 -F 499, perf's own size switch at
a sixth of the default --max-spool: 42 MB chunks) into a scratch directory. Each round scripts every
chunk once per variant, in a new order each round, and takes each run's CPU (user+sys, from wait4):

    today          the streamed folder's command (`perf script --no-inline --max-stack 4096 -F <fields>`)
    --kallsyms     the same reading a copy of /proc/kallsyms taken once (perf reads /proc/kallsyms three
                   times per run: the kernel formats 120k lines each time)
    --no-demangle  the same without perf's demangling; the names demangled after, only those printed,
                   by `c++filt -p -i` (binutils' libiberty: perf 6.1 demangles with cplus_demangle, no options)
    both           --kallsyms and --no-demangle
    streamed folder  what `record`'s folder runs now (flamegraph.record.chunk_names): --no-demangle, c++filt,
                   a chunk showing an alias-ambiguous name scripted again; its CPU with ours and c++filt's
                   (the files' alias groups, read once per recording, are printed apart: "one-off")

and checks each variant's text against today's, byte for byte (the --no-demangle ones after c++filt).
--aliases counts, in each DSO the chunks map, the addresses where perf's choice among aliases (same
start, symbols__fixup_duplicate) would differ between demangled and mangled names: why --no-demangle
plus demangling after is not the same text in general. Say the load average (printed) when quoting.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collectors.mnist import prepare_mnist  # noqa: E402
from collectors.recipe import MlpRun  # noqa: E402
from flamegraph.io.perf import find_perf, script_command  # noqa: E402
from flamegraph.record.chunk_names import ChunkNames  # noqa: E402
from flamegraph.record.spec import ONCPU_FIELDS  # noqa: E402
from flamegraph.record.spool import CHUNKS_PER_CAP, read_chunk  # noqa: E402

DEFAULT_CAP = 256_000_000
VARIANTS = ("today", "--kallsyms", "--no-demangle", "both", "streamed folder")
FRAME = re.compile(rb"^(\s+[0-9a-f]+ )(_Z\S*)( \(.*\))$")


def record_chunks(directory: Path, epochs: int) -> list[Path]:
    mlp = MlpRun(prepare_mnist(), epochs, python=os.environ.get("WORKLOAD_PYTHON") or sys.executable)
    chunk = DEFAULT_CAP // CHUNKS_PER_CAP
    argv = [
        find_perf(), "record", "-N", "--buildid-all", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", "499",
        "--call-graph", "dwarf,65528", "-m", "16M", f"--switch-output={chunk // 1_000_000}M", "--buildid-mmap",
        "-o", str(directory / "perf.data"), "--", *mlp.command(),
    ]  # fmt: skip
    subprocess.run(argv, env={**os.environ, **mlp.environment()}, check=True, capture_output=True)
    return sorted(directory.glob("perf.data.*"))


def script(chunk: Path, variant: str, kallsyms: Path) -> tuple[float, bytes]:
    if variant == "streamed folder":
        return folder_script(chunk)
    extra = ["-F", ONCPU_FIELDS]
    if variant in ("--kallsyms", "both"):
        extra += ["--kallsyms", str(kallsyms)]
    if variant in ("--no-demangle", "both"):
        extra += ["--no-demangle"]
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(script_command(str(chunk), extra=extra), stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    return usage.ru_utime + usage.ru_stime, text


NAMES = ChunkNames.find()


def folder_script(chunk: Path) -> tuple[float, bytes]:
    """The streamed folder's text of a chunk and the CPU it took (ours, perf script's, c++filt's)."""
    assert NAMES is not None, "needs c++filt"
    before = _cpu()
    text = NAMES.script(str(chunk), ["-F", ONCPU_FIELDS])
    if text is None:
        text = script(chunk, "today", chunk)[1]
    return _cpu() - before, text


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def demangled(text: bytes) -> bytes:
    """`--no-demangle` text with its frames' mangled names demangled by c++filt as perf would print them."""
    lines = text.split(b"\n")
    names = sorted({m.group(2) for line in lines if (m := FRAME.match(line))})
    if not names:
        return text
    out = subprocess.run(["c++filt", "-p", "-i"], input=b"\n".join(names) + b"\n", capture_output=True, check=True)
    table = dict(zip(names, out.stdout.split(b"\n")[: len(names)], strict=True))
    return b"\n".join(
        m.group(1) + table[m.group(2)] + m.group(3) if (m := FRAME.match(line)) else line for line in lines
    )


def alias_choices(path: str) -> tuple[int, int]:
    """(alias groups, groups whose winner's demangled name differs between the two namings) of a DSO's
    function symbols, by perf 6.1's choose_best_symbol (sized, non-weak, global, fewer leading
    underscores, longer name)."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        section = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
        if section is None:
            return 0, 0
        symbols = [
            (s["st_value"], s["st_size"], s["st_info"]["bind"], s.name) for s in section.iter_symbols()
            if s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and s["st_shndx"] != "SHN_UNDEF" and s.name
        ]  # fmt: skip
    names = sorted({s[3] for s in symbols})
    out = subprocess.run(["c++filt", "-p", "-i"], input="\n".join(names) + "\n", capture_output=True, text=True)
    plain = dict(zip(names, out.stdout.split("\n")[: len(names)], strict=True))
    groups: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
    for start, size, bind, name in symbols:
        groups[start].append((size, bind, name))
    differ = 0
    for members in (g for g in groups.values() if len(g) > 1):
        mangled = plain[_winner(members)[2]]
        differ += mangled != _winner([(size, bind, plain[name]) for size, bind, name in members])[2]
    return sum(len(g) > 1 for g in groups.values()), differ


def _winner(members: list[tuple[int, str, str]]) -> tuple[int, str, str]:
    best = members[0]
    for other in members[1:]:
        best = best if _prefers_first(best, other) else other
    return best


def _prefers_first(a: tuple[int, str, str], b: tuple[int, str, str]) -> bool:
    keys = [
        (a[0] > 0, b[0] > 0),
        (a[1] != "STB_WEAK", b[1] != "STB_WEAK"),
        (a[1] == "STB_GLOBAL", b[1] == "STB_GLOBAL"),
        (-(len(a[2]) - len(a[2].lstrip("_"))), -(len(b[2]) - len(b[2].lstrip("_")))),
        (len(a[2]), len(b[2])),
    ]
    for ka, kb in keys:
        if ka != kb:
            return ka > kb
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/chunk_script_cost.py", description=__doc__.splitlines()[0])
    p.add_argument("--chunks", type=Path, help="a directory of perf.data.* chunks (default: record the MLP)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--aliases", action="store_true", help="count the DSOs' alias groups that name differently")
    args = p.parse_args(argv)
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="chunk-cost-") as tmp:
        scratch = Path(tmp)
        chunks = sorted(args.chunks.glob("perf.data.*")) if args.chunks else record_chunks(scratch, args.epochs)
        kallsyms = scratch / "kallsyms"
        shutil.copyfile("/proc/kallsyms", kallsyms)
        samples = sum(read_chunk(c)[0].samples for c in chunks)
        print(f"{len(chunks)} chunks, {samples:,} samples, {sum(c.stat().st_size for c in chunks) / 1e6:.0f} MB")
        cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}  # per round: all chunks
        same: dict[str, bool] = dict.fromkeys(VARIANTS, True)
        reference = {c: script(c, "today", kallsyms)[1] for c in chunks}
        one_off, _ = folder_script(chunks[0])  # the files' alias groups, read once per recording
        print(f"streamed folder: one-off {one_off:.2f} s (its first chunk, alias groups included)")
        for number in range(1, args.rounds + 1):
            totals = dict.fromkeys(VARIANTS, 0.0)
            for chunk in chunks:
                for variant in random.Random(f"{number}{chunk}").sample(VARIANTS, len(VARIANTS)):
                    seconds, text = script(chunk, variant, kallsyms)
                    totals[variant] += seconds
                    text = demangled(text) if variant in ("--no-demangle", "both") else text
                    same[variant] &= text == reference[chunk]
            for variant, total in totals.items():
                cpu[variant].append(total)
            print(f"round {number}: " + ", ".join(f"{v} {t:.2f} s" for v, t in totals.items()), flush=True)
            loads.append(os.getloadavg()[0])
        print(f"\nload average {min(loads):.1f}-{max(loads):.1f} (1 min, {os.cpu_count()} CPUs); CPU = user+sys of "
              f"perf script, all {len(chunks)} chunks, median of {args.rounds} rounds")  # fmt: skip
        print("| variant | CPU, all chunks | per chunk | vs today | text as today's |")
        print("| --- | ---: | ---: | ---: | --- |")
        base = statistics.median(cpu["today"])
        for variant in VARIANTS:
            m = statistics.median(cpu[variant])
            print(f"| {variant} | {m:.2f} s | {m / len(chunks):.2f} s | {100 * (m - base) / base:+.0f} % | "
                  f"{'yes' if same[variant] else 'NO'} |")  # fmt: skip
        if args.aliases:
            dsos = sorted({name.decode() for c in chunks for name in read_chunk(c)[1] if name.startswith(b"/")})
            print("\n| DSO | alias groups | named differently without demangling |\n| --- | ---: | ---: |")
            for dso in dsos:
                if os.path.isfile(dso):
                    groups, differ = alias_choices(dso)
                    print(f"| {os.path.basename(dso)} | {groups:,} | {differ} |")
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
