# genvdis: every target runs from a fresh clone; the first one builds .venv (make install).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JOBS ?= 2
SPLITS ?= 1000
CONFIGS := $(filter-out configs/theory-%.yaml,$(wildcard configs/*.yaml))
THEORY := $(wildcard configs/theory-*.yaml)
# the examples whose results are committed (results/examples/): other rules for separable sets,
# a third model, ten classes (optdigits: a 585-unknown multinomial ridge fit per split, by
# Newton-CG with a group's splits in one batch: about 47 CPU s with 2 workers), scikit-learn
# estimators and scikit-learn's bundled breast cancer data. The two that load scikit-learn go
# last: once it (and its OpenMP) is loaded, runs get loky's workers, not forked ones (docs/scaling.md)
EXAMPLES := configs/examples/sonar-max-margin.yaml configs/examples/sonar-ridge.yaml \
	configs/examples/ionosphere-three-models.yaml configs/examples/optdigits-10class.yaml \
	configs/examples/gnb-vs-svm.yaml configs/examples/breast-cancer-wisconsin.yaml

# the committed sweep (docs/sweeps.md): every panel under each variant of SWEEP, one at a time;
# not part of `all` (it costs several times the panels); 200 splits per m, see docs/sweeps.md
SWEEP := configs/sweeps/figure1.yaml
SWEEP_SPLITS ?= 200

.PHONY: install test test-fast lint format all panels examples theory plot report sweep study \
	study-sweep bench openml-cc18 clean

STAMP := $(VENV)/.installed

install: $(STAMP)

# the virtual environment, rebuilt when the package's requirements change
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,dask]'
	touch $(STAMP)

# pytest-xdist with two workers, not -n auto: many tests start their own worker pools or
# subprocesses, so more test workers than the 2 cores we measure on only queue (TEST_JOBS=N to
# change it). test-fast leaves out the tests marked slow (over ~2 s each): a quick loop.
TEST_JOBS ?= 2

test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS) -m "not slow"

# ruff, then the import rules (pyproject.toml's import-linter contract, docs/architecture.md)
lint: $(STAMP)
	$(BIN)/ruff check genvdis tests benchmarks
	$(BIN)/ruff format --check genvdis tests benchmarks
	$(BIN)/lint-imports

format:
	$(BIN)/ruff format genvdis tests benchmarks
	$(BIN)/ruff check --fix genvdis tests benchmarks

# Every figure: the 15 panels, the examples, the theory experiments, plots, report.
all: panels examples theory plot report

panels: $(STAMP)
	$(BIN)/genvdis run $(CONFIGS) --splits $(SPLITS) --jobs $(JOBS)

examples: $(STAMP)
	$(BIN)/genvdis run $(EXAMPLES) --out results/examples --splits $(SPLITS) --jobs $(JOBS)

theory: $(STAMP)
	$(BIN)/genvdis theory $(THEORY) --jobs $(JOBS)

plot: $(STAMP)
	$(BIN)/genvdis plot results/ results/examples/ --jobs $(JOBS)

# one process for both folders (one start-up, one pool); every run is analysed before any
# report is written, so the explorer of results/ finds the examples' analysis
report: $(STAMP)
	$(BIN)/genvdis report results/examples/ results/ --jobs $(JOBS)

# then `make report` adds the stability table (results/sensitivity.csv)
sweep: $(STAMP)
	$(BIN)/genvdis sweep $(CONFIGS) --variants $(SWEEP) --splits $(SWEEP_SPLITS) --jobs $(JOBS)

# the study (issue 32): the 15 panels into results/ and every configs/study/ config into
# results/study/, all in one pool of workers (docs/usage.md); not part of `all`
study: $(STAMP)
	$(BIN)/genvdis study --splits $(SPLITS) --jobs $(JOBS)

# the study's sweep (docs/study.md): the 46 study datasets under configs/sweeps/study.yaml's
# variants (separable rule, split rule, coding), 200 splits per m, into results/study/; `make
# study` after it reads it into STUDY.md's robustness table, beside the panels' `make sweep`
study-sweep: $(STAMP)
	$(BIN)/genvdis sweep $(wildcard configs/study/*.yaml) --variants configs/sweeps/study.yaml \
		--splits $(SWEEP_SPLITS) --jobs $(JOBS) --out results/study

# OpenML-CC18's 35 binary tasks, online (docs/datasets.md, "OpenML"): a config per dataset by
# `genvdis init`'s rules, each dataset fetched once into the data folder, then the protocol on
# each; in one `genvdis study` pool. About 28 CPU
# hours at 1000 splits (`genvdis suite ... --cost`); not part of `all`
openml-cc18: $(STAMP)
	$(BIN)/genvdis suite configs/suites/openml-cc18-binary.yaml --out configs/openml-cc18
	$(BIN)/genvdis study configs/openml-cc18/ --out results/openml-cc18 --splits $(SPLITS) \
		--jobs $(JOBS)

# speed: engine vs the per-split scikit-learn loop, then where the engine's time goes, then
# the estimator path's overhead over a bare loop
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py --splits 250
	$(BIN)/python benchmarks/profile_engine.py --splits 250
	$(BIN)/python benchmarks/bench_layouts.py
	$(BIN)/python benchmarks/bench_estimators.py --splits 50

clean:
	rm -rf results/*/.checkpoints build dist *.egg-info .pytest_cache .ruff_cache
