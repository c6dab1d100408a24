# blackwell.inference - two commands on a fresh machine:
#   make demo   run site.yml against the lab host (or INVENTORY=... LIMIT=... for real hosts)
#   make test   every check: lint, sanity, unit, integration
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Python >= 3.12 for ansible-core 2.21: first one found (pyenv ships 3.12/3.13 on this machine kind).
PYTHON ?= $(shell for p in python3.12 python3.13 $(HOME)/.pyenv/versions/3.12*/bin/python3 $(HOME)/.pyenv/versions/3.13*/bin/python3 python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
COLLECTION_LINK := .collections/ansible_collections/blackwell/inference
# Downloads and throwaway venvs live here, keyed by their inputs; CI keeps it between runs.
CACHE_DIR ?= /var/cache/blackwell-inference
export PIP_CACHE_DIR ?= $(CACHE_DIR)/pip
export BLACKWELL_CACHE_DIR := $(CACHE_DIR)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

INVENTORY ?= inventories/lab/hosts.yml
LIMIT ?= all
PLAYBOOK_ARGS ?=

.PHONY: help venv collection demo verify test lint sanity unit integration bench clean

help:
	@echo "make demo   - run site.yml against the lab inventory ($(INVENTORY)), then a verify-only run"
	@echo "make test   - ansible-lint, yamllint, ruff, ansible-test sanity, pytest (unit + integration)"
	@echo "make verify - only the read-only checks (--tags verify)"
	@echo "make bench  - cuda_facts timings against a baseline"

$(BIN)/.installed: requirements.txt
	@mkdir -p $(PIP_CACHE_DIR)
	@[ -n "$(PYTHON)" ] || { echo "no Python >= 3.12 found (set PYTHON=...)"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $@

venv: $(BIN)/.installed

$(COLLECTION_LINK):
	@mkdir -p $(dir $@)
	ln -sfn ../../.. $@

collection: venv $(COLLECTION_LINK)

demo: collection
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml -l '$(LIMIT)' $(PLAYBOOK_ARGS)
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml -l '$(LIMIT)' --tags verify $(PLAYBOOK_ARGS)

verify: collection
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml -l '$(LIMIT)' --tags verify $(PLAYBOOK_ARGS)

lint: collection
	$(BIN)/yamllint --strict .
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/ansible-lint --profile production

sanity: collection
	tests/sanity.sh

unit: collection
	$(BIN)/pytest -q tests/unit

integration: collection
	$(BIN)/pytest -q tests/integration

# pytest last, so CI's closing line is pytest's summary.
test: lint sanity
	$(BIN)/pytest tests/unit tests/integration

# Timings with a baseline in the same run (not a test).
bench: collection
	$(BIN)/python tests/benchmark/bench_cuda_facts.py

clean:
	rm -rf .collections tests/output .pytest_cache .ruff_cache
