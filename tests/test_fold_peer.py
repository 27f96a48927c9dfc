"""The reference folder's own test corpus: 13 real inputs, 92 expected outputs, byte for byte.

Folded through the production path (opener, block fast path) with one process and with two, and
through the block path fed in odd block sizes (carries across block ends)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from helpers.fold_paths import fold_file
from helpers.shared import shared_dir

from flamegraph import Diagnostics, FoldOptions, PerfCollapser
from flamegraph.folding.perf_blocks import fold_blocks
from flamegraph.folding.rust import demangle_legacy
from flamegraph.io.folded import iter_folded_lines

pytestmark = pytest.mark.shared
PEER = shared_dir() / "peer-tests" / "flamegraph-pl"
OPTIONS = {
    "": {},
    "pid": {"pid": True},
    "tid": {"tid": True},
    "kernel": {"annotate_kernel": True},
    "jit": {"annotate_jit": True},
    "all": {"annotate_kernel": True, "annotate_jit": True},
    "addrs": {"addrs": True},
}


def _read(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for expected in sorted((PEER / "results").glob("*-collapsed*.txt*")):
        stem = expected.name.split("-collapsed")[0]
        option = expected.name.split("-collapsed")[1].split(".")[0].lstrip("-")
        source = PEER / f"{stem}.txt"
        if not source.exists():
            source = PEER / f"{stem}.txt.gz"
        cases.append((str(source), option, str(expected)))
    return cases


CASES = _cases()
IDS = [f"{Path(s).stem}-{o or 'default'}" for s, o, _ in CASES]


HOW = ["blocks", "jobs1", "jobs2"]


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each peer input as plain text (the .gz ones unpacked: --jobs splits text files)."""
    where = tmp_path_factory.mktemp("peer")
    paths = {}
    for source, _, _ in CASES:
        paths[source] = where / Path(source).name.removesuffix(".gz")
        paths[source].write_bytes(_read(Path(source)))
    return paths


def fold_bytes(data: bytes, options: FoldOptions, how: str = "blocks", path: Path | None = None) -> bytes:
    """Whole-record blocks with odd block sizes (carries), or the production path on `path`."""
    if how != "blocks":
        assert path is not None and path.read_bytes() == data
        return fold_file(path, options, int(how[-1]))
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    blocks = [data[i : i + 65521] for i in range(0, len(data), 65521)]
    fold_blocks(collapser, blocks, "input")
    return b"".join(iter_folded_lines(collapser.profile()))


def test_the_whole_corpus_is_here() -> None:
    assert len(CASES) == 92, f"expected 92 peer files in {PEER}, found {len(CASES)}"


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(("source", "option", "expected"), CASES, ids=IDS)
def test_compat_mode_matches_the_reference_byte_for_byte(
    source: str, option: str, expected: str, how: str, texts: dict[str, Path]
) -> None:
    actual = fold_bytes(_read(Path(source)), FoldOptions(compat=True, **OPTIONS[option]), how, texts[source])
    assert actual == _read(Path(expected))


def readable_rust(folded: bytes) -> bytes:
    """The reference's output with our one renaming applied: legacy Rust names made readable
    (`emulator::main::hc2aaa9b4591a10c7` -> `emulator::main`), stacks that become equal merged."""
    counts: dict[bytes, int] = {}
    for line in folded.splitlines():
        stack, _, count = line.rpartition(b" ")
        key = b";".join(demangle_legacy(frame) for frame in stack.split(b";"))
        counts[key] = counts.get(key, 0) + int(count)
    return b"".join(b"%s %d\n" % (stack, counts[stack]) for stack in sorted(counts))


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(("source", "option", "expected"), CASES, ids=IDS)
def test_default_mode_differs_only_by_the_record_the_reference_loses(
    source: str, option: str, expected: str, how: str, texts: dict[str, Path]
) -> None:
    """Our default keeps the last record of a file without a final blank line and shows Rust's
    half-demangled names readable; nothing else differs."""
    data = _read(Path(source))
    actual = fold_bytes(data, FoldOptions(**OPTIONS[option]), how, texts[source])
    reference = readable_rust(_read(Path(expected)))
    if data.endswith(b"\n\n"):
        assert actual == reference
        return
    # The reference drops the unterminated last record: terminating it by hand makes it count.
    assert actual == readable_rust(fold_bytes(data + b"\n", FoldOptions(compat=True, **OPTIONS[option])))
    ref_lines, our_lines = set(reference.splitlines()), set(actual.splitlines())
    assert len(our_lines - ref_lines) == 1 and len(ref_lines - our_lines) <= 1
