# Every target creates .venv and installs kernelcv into it when needed, so each one works
# by itself on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-slow demo architecture bench bench-large bench-gpu bench-gpu-large bench-torchkm bench-dask bench-spectral bench-select bench-floor bench-multiclass bench-threads bench-tune bench-hypothetical bench-papers bench-rff bench-rff-large lint imports clean

# torch 2.13.0 (the torch-device tests, kernelcv[gpu]) is torch's CPU build, which this
# machine image holds on disk (a plain 'torch' would fetch a CUDA build of several GB);
# those tests skip where it cannot be installed.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,plot,progress,dask]'
	$(PY) -m pip install --quiet 'torch==2.13.0' || echo "torch 2.13.0 not installed: the torch-device tests skip"
	touch $(STAMP)

# The tests run on every core (pytest-xdist), each worker with one BLAS thread: on two
# cores 3 minutes instead of 4.5 serially, and no worker's BLAS pool competes with another.
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

test: $(STAMP)
	$(PY) -m ruff check src tests benchmarks tools examples
	$(TEST_ENV) $(PY) -m pytest -q -n auto

test-slow: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest -q -n auto -m slow

demo: $(STAMP)
	$(PY) -m kernelcv.demo

bench: $(STAMP)
	$(PY) benchmarks/bench_cv.py

# kernelcv select (CLI) vs GridSearchCV / HalvingGridSearchCV (SVC); hours.
bench-select: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_select.py

# What any select command must spend (start-up, loading, final model, one exact CV)
# beside Halving / 5 on the 5,000-row subsamples; minutes.
bench-floor: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_floor.py

# Multiclass kernelcv select (ovo, ovr) vs GridSearchCV / HalvingGridSearchCV (SVC).
bench-multiclass: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_multiclass.py

# Default BLAS threads vs one thread, idle and next to a CPU-bound process (no thread
# variables here: the benchmark sets them per worker).
bench-threads: $(STAMP)
	$(PY) benchmarks/bench_threads.py

bench-tune: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) benchmarks/bench_tune.py

bench-hypothetical: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) benchmarks/bench_hypothetical.py --figures docs/figures

bench-rff: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) benchmarks/bench_rff.py ratsch --folds 5 10 --features 100 --splits 5

# The default rff command on ijcnn1, and ijcnn1 replicated to 5 M rows (generated under
# /tmp): in memory, out of core and on a 2-worker LocalCluster. Tens of minutes.
bench-rff-large: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) benchmarks/bench_rff_large.py default --runs 2
	OMP_NUM_THREADS=1 $(PY) benchmarks/bench_rff_large.py scaling --memory-max 1000000 \
		--png docs/figures/rff_large_scaling.png

# Seconds against n (ijcnn1, 1,000-20,000 rows, 3 seeds): kernelcv select vs Halving,
# GridSearchCV (extrapolated above 2,000 rows) and TorchKM on the CPU (about 40 min;
# TORCHKM_PYTHON: a Python with torch and torchkm, optional). Issue 37.
bench-large: $(STAMP)
	mkdir -p bench-results
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_large.py \
		--sizes 1000 2000 5000 10000 20000 --seeds 0 1 2 --torchkm-max-n 2000 \
		$(if $(TORCHKM_PYTHON),--torchkm-python $(TORCHKM_PYTHON)) \
		--json bench-results/large.json --png docs/figures/large_n_scaling.png

# TorchKM's Table 2 protocol on the CPU beside kernelcv (needs TORCHKM_PYTHON).
# Issue 38 on a GPU machine: TorchKM's Table 2 (n = 20,000, p = 1,000; and 10,000 x 10)
# on cuda beside kernelcv's spectral method on cuda, 50 C at TorchKM's gamma and 15 gamma
# x 50 C. TORCHKM_PYTHON: a Python with torch and torchkm (default: this venv, with
# torchkm importable, e.g. PYTHONPATH=path/to/torchkm).
bench-gpu: $(STAMP)
	$(PY) benchmarks/bench_torchkm.py --device cuda --torchkm-python $(or $(TORCHKM_PYTHON),$(PY)) \
		--sizes 10000,10 20000,1000 --methods eigh cholesky cholesky:mixed --grid-methods auto

bench-gpu-large: $(STAMP)
	$(PY) benchmarks/bench_torchkm.py --device cuda --torchkm-python $(or $(TORCHKM_PYTHON),$(PY)) \
		--sizes 60000,10 --methods cholesky cholesky:mixed --grid-methods none --no-refit

bench-torchkm: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_torchkm.py \
		--torchkm-python $(TORCHKM_PYTHON) --sizes 1000,10 2000,10 2000,1000 5000,10 \
		--methods default spectral rff --grid-methods default:auto rff

# Issue 42: rff by rows on a LocalCluster of 1, 2, 4 workers against memory (about an hour;
# the data files go to /tmp/kernelcv-dask).
bench-dask: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_dask_rows.py \
		--sizes 500000,2000000 --workers 2,1,4

# The spectral engine (one eigh per kernel) vs bif, exact, GridSearchCV and Halving (SVC).
bench-spectral: $(STAMP)
	mkdir -p bench-results
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_spectral.py \
		--sizes 569 1000 2000 4000 --methods spectral bif \
		--json bench-results/spectral.json --png docs/figures/spectral_scaling.png

bench-papers: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m kernelcv bench --quick --out bench-results
	OMP_NUM_THREADS=1 $(PY) -m kernelcv bench --quick --protocol paper --out bench-results-paper

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks tools examples

# docs/architecture.md's layer list (from tools/layers.txt) and figures, from the source.
architecture: $(STAMP)
	$(PY) tools/import_graph.py --write-docs

# The package's internal import graph by top-level package, with each one's layer.
imports: $(STAMP)
	$(PY) tools/import_graph.py --packages

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
