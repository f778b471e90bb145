# samedevice: two commands work on a fresh machine.
#   make serve  -- install on first use, then serve the site on http://127.0.0.1:8000/samedevice/
#   make test   -- install on first use, then run everything CI runs
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.samedevice-installed
# The range pyproject.toml declares is torch>=2.13,<2.16; this build is CPU-only and small.
TORCH ?= torch==2.13.0
JOBS ?= 2
export NO_MKDOCS_2_WARNING := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# One intra-op thread per process: the tests run in JOBS processes on as many cores, and
# OpenMP's spinning threads on an oversubscribed machine made small training loops 10-100x slower
OMP_NUM_THREADS ?= 1
export OMP_NUM_THREADS

.PHONY: install browser test lint check-notebooks verify pytest site serve notebooks clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[docs,test]"
	@touch $(STAMP)

# Headless Chromium for the browser tests (Debian's package; Playwright drives it). Best
# effort: when it cannot be installed (not root, no apt, apt locked or offline) the browser
# tests are skipped with their reason, and the rest of `make test` runs.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
	      || echo "note: could not install chromium (apt-get failed: locked, offline or no such package); the browser tests will be skipped"; \
	  else echo "note: chromium is not installed (installing it needs root and apt-get); the browser tests will be skipped"; fi; }

lint: install
	$(BIN)/ruff check src tests benchmarks snippets examples setup.py

check-notebooks: install
	$(BIN)/samedevice notebook --check

# Verification runs each case page once (its cells are the broken and fixed runs) and keeps
# the executed pages in $(PAGES_RUN); the page test compares those with the stored outputs
# instead of executing every page again. nbmake over cases/ would be a second execution, so
# it is not run here (`pytest --nbmake cases` still works).
PAGES_RUN := .pages-run

verify: install
	rm -rf $(PAGES_RUN)
	$(BIN)/samedevice verify -j $(JOBS) --pages $(PAGES_RUN)

# Alone (`make pytest`), the page test executes each page itself.
pytest: install browser
	$(BIN)/python -m pytest -n $(JOBS) --durations=15 tests

test: lint check-notebooks verify browser
	SAMEDEVICE_PAGES_RUN=$(PAGES_RUN) $(BIN)/python -m pytest -n $(JOBS) --durations=15 tests

site: install
	$(BIN)/mkdocs build --strict

# Served under site_url's path, as on GitHub Pages: http://127.0.0.1:8000/samedevice/. Links the
# package prints point there with SAMEDEVICE_DOCS_URL=http://127.0.0.1:8000/samedevice/.
serve: install
	$(BIN)/mkdocs serve

# Regenerate and re-execute the case pages after changing a case's files.
notebooks: install
	$(BIN)/samedevice notebook

clean:
	rm -rf site .pytest_cache .ruff_cache $(PAGES_RUN)
