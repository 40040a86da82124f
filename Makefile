# The README's two commands: `make lab` (the chat panel in JupyterLab) and `make test`. Each sets
# itself up from a fresh clone; `make demo` is the same answer in a terminal.
VENV := .venv
BIN := $(VENV)/bin
DEMO_HOME ?= .demo-home

.PHONY: setup lab demo test lint test-widgets test-without-corpus

setup:
	@bash scripts/setup.sh

# JupyterLab on the quickstart notebook with the panel: on your indexed library when your data home
# ($$ZOCRATES_HOME or ~/.zocrates-nb) holds one (used as it is), otherwise on the built-in sample,
# indexed into a data home of its own (<home>/samples/sample). JupyterLab runs with ZOCRATES_HOME
# set to that home (the panel, notebooks, HTTP API and terminals share it), and with --allow-root
# as root. Extra flags: LAB_ARGS="--port 9999".
lab: setup
	HF_HUB_OFFLINE=1 $(BIN)/python -m zocrates_nb.examples --lab $(LAB_ARGS)

demo: setup
	$(BIN)/zocrates-nb --home $(DEMO_HOME) index --sample
	$(BIN)/zocrates-nb --home $(DEMO_HOME) search "how does reciprocal rank fusion combine rankings" --limit 3
	$(BIN)/zocrates-nb --home $(DEMO_HOME) ask --no-hitl "How long must a client wait before it can take over a lock whose holder was lost?"

lint: setup
	$(BIN)/ruff check zocrates_nb tests scripts
	$(BIN)/mypy

# The panel's front end: node's test runner on happy-dom/jsdom (npm ci is quick after the first).
test-widgets:
	cd widgets && npm ci --no-audit --no-fund --loglevel=error && npm test

test: lint test-widgets
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q

# The tests that may touch the test corpus (../shared/corpus), as a clone without it runs them:
# they skip with a message, or run what needs no corpus. Tests that never name the corpus run
# the same either way (`make test` ran them), so they are not run twice.
test-without-corpus: setup
	HF_HUB_OFFLINE=1 ZOCRATES_TEST_CORPUS=/nonexistent $(BIN)/pytest -q -m corpus
