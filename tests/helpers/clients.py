"""The exports' real clients, driven from tests: speedscope (its npm package: the JSON schema, and the
app served on 127.0.0.1 in headless Chromium), `go tool pprof` (Debian's golang-go), and Chrome
DevTools' own trace engine (the Performance panel's parser, bundled in Chromium) for Chrome traces.
`make interop-deps` installs them (npm into .interop/, golang-go with apt); a test that finds one
missing fails and says so: CI runs them all."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from flamegraph.export.names import import_name

SPEEDSCOPE_VERSION = "1.25.0"
SPEEDSCOPE = REPO / ".interop" / "node_modules" / "speedscope"
HINT = "run `make interop-deps`"


def speedscope_release() -> Path:
    package = SPEEDSCOPE / "package.json"
    if not package.exists():
        pytest.fail(f"speedscope {SPEEDSCOPE_VERSION} is not installed in .interop/: {HINT}")
    version = json.loads(package.read_text())["version"]
    assert version == SPEEDSCOPE_VERSION, f"speedscope {version} in .interop/, expected {SPEEDSCOPE_VERSION}: {HINT}"
    return SPEEDSCOPE / "dist" / "release"


def speedscope_schema() -> dict[str, Any]:
    return json.loads((speedscope_release() / "file-format-schema.json").read_text())


# -- go tool pprof ---------------------------------------------------------------------------------
def go() -> str:
    path = shutil.which("go")
    if path is None:
        pytest.fail(f"`go tool pprof` needs Debian's golang-go: {HINT}")
    return path


def pprof(*args: str) -> str:
    done = subprocess.run([go(), "tool", "pprof", *args], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode("utf-8")


def pprof_traces(path: Path, sample_index: str = "samples") -> Counter[tuple[str, ...]]:
    """Root-first stacks and their values as `go tool pprof -traces` prints them (names unescaped;
    time values in µs).

    Its layout (report.printTraces): a separator line per sample, label lines '%10s:  %s', then one
    line per frame '%10s   %s', the value in the first line's left column; leaf first."""
    text = pprof("-traces", "-unit=us", f"-sample_index={sample_index}", str(path))  # times as whole µs
    stacks: Counter[tuple[str, ...]] = Counter()
    frames: list[str] = []
    value = 0

    def flush() -> None:
        if frames:
            stacks[tuple(import_name(f) for f in reversed(frames))] += value
        frames.clear()

    for line in text.split("\n"):
        if line.startswith("-----------+"):
            flush()
        elif len(line) > 13 and line[10] == ":" and line[11:13] == "  " and not frames:
            continue  # a label
        elif len(line) >= 13 and line[10:13] == "   ":
            if line[:10].strip():
                value = int(line[:10].strip().removesuffix("us"))
            frames.append(line[13:])
    return stacks


# -- Chromium ------------------------------------------------------------------------------------------
@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium through selenium, as tests/test_browser.py starts it."""
    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.fail("the client tests need Debian's chromium and chromium-driver: run `make system-deps`")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    profile_dir = tempfile.mkdtemp(prefix="chromium-profile-")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,1000",
                     f"--user-data-dir={profile_dir}"):  # fmt: skip
        options.add_argument(argument)
    options.binary_location = binary
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    driver.set_script_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile_dir, ignore_errors=True)
        shutil.rmtree(profile_dir, ignore_errors=True)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """`root` over HTTP on 127.0.0.1 (a free port); yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class Speedscope:
    """The speedscope app (from its npm package) on 127.0.0.1; loads files by #profileURL=."""

    def __init__(self, driver: Any, base: str, files: Path) -> None:
        self.driver, self.base, self.files = driver, base, files
        self.count = 0

    def load(self, data: bytes) -> None:
        self.count += 1
        name = f"profile-{self.count}.json"
        (self.files / name).write_bytes(data)
        self.driver.get("about:blank")
        self.driver.get(f"{self.base}/app/index.html#profileURL={self.base}/files/{name}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.driver.execute_script("return document.body ? document.body.innerText : ''")
            if "Export" in text:
                return
            assert "Something went wrong" not in text and "Failed to" not in text, text[:500]
            time.sleep(0.05)
        raise AssertionError(f"speedscope did not load {name}: {text[:500]!r}")

    def title(self) -> str:
        return str(self.driver.title)

    def toolbar(self) -> str:
        return str(self.driver.execute_script("return document.body.innerText.split('\\n').slice(0, 8).join('\\n')"))

    def exported(self) -> dict[str, Any]:
        """What speedscope itself makes of the loaded file: its own Export (captured, not downloaded)."""
        from selenium.webdriver.common.by import By

        self.driver.execute_script(
            "window.__blobs = []; const make = URL.createObjectURL;"
            "URL.createObjectURL = function (b) { window.__blobs.push(b); return make.call(URL, b); };"
        )
        self.driver.find_elements(By.XPATH, "//*[text()='Export']")[-1].click()
        text = self.driver.execute_async_script(
            "const done = arguments[0]; (async () => {"
            "  for (let i = 0; i < 100 && !window.__blobs.length; i++) await new Promise(r => setTimeout(r, 50));"
            "  done(window.__blobs.length ? await window.__blobs[0].text() : null); })();"
        )
        assert text, "speedscope exported nothing"
        return dict(json.loads(text))

    def profile_menu(self) -> list[tuple[str, str]]:
        """The profile (thread) menu as the app builds it: (name, total weight as displayed), in order."""
        rows = self.driver.execute_script(
            "const table = [...document.querySelectorAll('table')]"
            "  .find(t => t.tHead && t.tHead.textContent.includes('Total Weight'));"
            "return table ? [...table.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)) : [];"
        )
        return [(row[1], row[2]) for row in rows]


@contextmanager
def speedscope_app() -> Iterator[Speedscope]:
    release = speedscope_release()
    with tempfile.TemporaryDirectory(prefix="speedscope-") as root:
        shutil.copytree(release, Path(root) / "app")
        (Path(root) / "files").mkdir()
        with serve(Path(root)) as base, chromium() as driver:
            yield Speedscope(driver, base, Path(root) / "files")


def speedscope_stacks(exported: dict[str, Any]) -> dict[str, Counter[tuple[str, ...]]]:
    """Per profile name, root-first stacks and weights from speedscope's evented export."""
    frames = [import_name(frame["name"]) for frame in exported["shared"]["frames"]]
    result: dict[str, Counter[tuple[str, ...]]] = {}
    for profile in exported["profiles"]:
        assert profile["type"] == "evented", profile["type"]
        stacks: Counter[tuple[str, ...]] = Counter()
        open_frames: list[int] = []
        last = profile["startValue"]
        for event in profile["events"]:
            if event["at"] > last and open_frames:
                stacks[tuple(frames[i] for i in open_frames)] += event["at"] - last
            last = event["at"]
            if event["type"] == "O":
                open_frames.append(event["frame"])
            else:
                assert open_frames.pop() == event["frame"], "speedscope closed a frame out of order"
        result[import_name(profile["name"])] = stacks
    return result


# -- Chrome DevTools' trace engine ----------------------------------------------------------------------
DEVTOOLS = "devtools://devtools/bundled/devtools_app.html"
PARSE_TRACE = """
const done = arguments[arguments.length - 1];
(async () => {
  const T = await import('devtools://devtools/bundled/models/trace/trace.js');
  const model = T.TraceModel.Model.createWithAllHandlers();
  await model.parse(arguments[0], {isFreshRecording: false});
  const parsed = model.parsedTrace ? model.parsedTrace(0) : model.traceParsedData(0);
  const data = parsed.data || parsed;
  const threads = [];
  for (const [pid, process] of data.Renderer.processes) {
    for (const [tid, thread] of process.threads) {
      const nodes = [];
      const walk = (node, depth) => {
        const e = node.entry;
        nodes.push([e.name, e.ts, e.dur || 0, depth, e.cat]);
        for (const child of node.children) walk(child, depth + 1);
      };
      if (thread.tree) for (const root of thread.tree.roots) walk(root, 0);
      threads.push({pid, tid, name: thread.name, entries: thread.entries.length, nodes});
    }
  }
  return {threads, processes: [...data.Meta.processNames].map(([pid, e]) => [pid, e.args.name])};
})().then(done, error => done({error: String(error) + '\\n' + error.stack}));
"""


class DevTools:
    """Chromium's bundled DevTools frontend; `parse` runs its trace engine on a Trace Event file."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        driver.get(DEVTOOLS)

    def parse(self, document: dict[str, Any]) -> dict[str, Any]:
        result = self.driver.execute_async_script(PARSE_TRACE, document["traceEvents"])
        assert "error" not in result, result.get("error")
        return dict(result)


def devtools_stacks(parsed: dict[str, Any], instants: dict[tuple[int, int], list[int]]) -> Counter[tuple[str, ...]]:
    """Root-first stacks that DevTools' call tree holds at each given instant (µs) of each thread."""
    stacks: Counter[tuple[str, ...]] = Counter()
    for thread in parsed["threads"]:
        times = sorted(instants.get((thread["pid"], thread["tid"]), []))
        nodes = sorted(thread["nodes"], key=lambda n: (n[1], n[3]))
        active: list[list[Any]] = []
        i = 0
        for t in times:
            while i < len(nodes) and nodes[i][1] <= t:
                node = nodes[i]
                i += 1
                del active[node[3] :]  # the tree's depth says where it nests
                active.append(node)
            alive = [n for n in active if n[1] <= t < n[1] + n[2]]
            stacks[tuple(import_name(n[0]) for n in alive)] += 1
    return stacks
