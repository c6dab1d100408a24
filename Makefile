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
# molecule writes its own ansible.cfg; this makes blackwell.inference resolve there too
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
LAB_DIR ?= $(CACHE_DIR)/lab
export LAB_DIR
export PATH := $(CURDIR)/$(BIN):$(PATH)

INVENTORY ?= inventories/lab/hosts.yml
LIMIT ?= ct200
PLAYBOOK_ARGS ?=

.PHONY: help venv venv-run collection collection-run lab-deps lab lab-destroy lab-reboot lab-tests molecule demo verify test lint sanity unit integration bench bench-site docs dist clean

help:
	@echo "make demo   - run site.yml against the lab inventory ($(INVENTORY)), then a verify-only run"
	@echo "make test   - ansible-lint, yamllint, ruff, ansible-test sanity, pytest (unit + integration)"
	@echo "make verify - only the read-only checks (--tags verify)"
	@echo "make lab LAB_HOSTS=3 - ct200, ct201, ct202 in the before-state, and their inventory"
	@echo "make bench  - cuda_facts timings against a baseline"
	@echo "make bench-site - site.yml no-op and --tags verify on the lab host against a baseline play"
	@echo "make docs   - role READMEs from meta/argument_specs.yml, CHANGELOG.rst from changelogs/"
	@echo "make dist   - the collection tarball to install: dist/blackwell-inference-<galaxy.yml's version>.tar.gz"

# Two toolchains in one .venv: what running the collection needs (requirements-run.txt: ansible-core and the `ansible`
# package for ansible.posix and community.general), for demo, lab and dist; the development tools on top
# (requirements.txt: lint, molecule, pytest, ...), for test.
# --no-compile, then compileall without the `ansible` package's collections (thousands of files, loaded through
# ansible's collection loader, which never reads bytecode): the tools' own packages get their bytecode even where
# PYTHONDONTWRITEBYTECODE is set and nothing is compiled on first use (about 0.3 s of every ansible-playbook run)
define pip_install
	$(BIN)/python -m pip install --quiet --no-compile -r $(1)
	$(BIN)/python -m compileall -q -j 0 -x '/ansible_collections/' $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') >/dev/null
endef

$(BIN)/.installed-run: requirements-run.txt
	@mkdir -p $(PIP_CACHE_DIR)
	@[ -n "$(PYTHON)" ] || { echo "no Python >= 3.12 found (set PYTHON=...)"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(call pip_install,requirements-run.txt)
	@touch $@

$(BIN)/.installed: requirements.txt $(BIN)/.installed-run
	$(call pip_install,requirements.txt)
	@touch $@

venv-run: $(BIN)/.installed-run
venv: $(BIN)/.installed

$(COLLECTION_LINK):
	@mkdir -p $(dir $@)
	ln -sfn ../../.. $@

# the collection as ansible-playbook finds it: the runtime toolchain (demo, lab, dist) or the development one (test)
collection-run: venv-run $(COLLECTION_LINK)
collection: venv $(COLLECTION_LINK)

# Host packages the lab and the checks need (Debian): nspawn, debootstrap, repo tooling, shellcheck for sanity.
LAB_PACKAGES := systemd-container debootstrap zstd dpkg-dev apt-utils gnupg openssh-client iproute2 shellcheck
lab-deps:
	@missing=$$(for p in $(LAB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing $$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

# The ct200 lab host: create + prepare, left running. LAB_HOSTS=3 adds ct201 and ct202 in the same state (booted
# from the before image prepare saved), each its own machine, and writes the fleet's inventory.
LAB_HOSTS ?= 1
LAB_SUITE ?= bookworm
INVENTORY_LAB := inventories/lab/hosts.yml
LAB_HOSTS_MAX := 10
lab: collection-run lab-deps
	@tests/fixtures/lab/labctl.sh status ct200 0 || tests/fixtures/lab/labctl.sh down ct200 0 >/dev/null
	@# the before-state from the test suite's cached image when there is one of these inputs, else made here (prepare)
	@image=$$($(BIN)/python tests/lab/images.py name before); \
	if tests/fixtures/lab/labctl.sh has-image "$$image"; then tests/fixtures/lab/labctl.sh up ct200 0 $(LAB_SUITE) "$$image"; \
	else tests/fixtures/lab/labctl.sh up ct200 0 $(LAB_SUITE) && \
	  MOLECULE_PROJECT_DIRECTORY=$(CURDIR) $(BIN)/ansible-playbook -i $(INVENTORY_LAB) molecule/default/prepare.yml -l ct200; fi
	@echo "ct200 is up: ssh -F $(LAB_DIR)/ssh_config.ct200 ct200   (make lab-destroy to remove it)"
	@if [ $(LAB_HOSTS) -gt 1 ]; then LAB_INDEX=0 $(BIN)/python tests/lab/fleet.py up $(LAB_HOSTS) before && \
	  echo "ct201..: the same before-state; the fleet: ansible-playbook -i $(LAB_DIR)/fleet/hosts.yml site.yml"; fi

lab-destroy: collection-run
	LAB_INDEX=0 $(BIN)/python tests/lab/fleet.py down $(LAB_HOSTS_MAX)
	tests/fixtures/lab/labctl.sh down ct200 0

# A power cycle of ct200 that keeps its disk (systemd shuts down, boots again, the boot units run).
lab-reboot:
	tests/fixtures/lab/labctl.sh reboot ct200 0

molecule: collection lab-deps
	$(BIN)/molecule test

# The main job. With the default (lab) inventory it brings ct200 up first if needed: the lab's cached artifacts are
# built while the runtime toolchain installs.
demo:
	@if [ "$(INVENTORY)" = inventories/lab/hosts.yml ] && ! tests/fixtures/lab/labctl.sh status ct200 0; then \
	  $(MAKE) --no-print-directory lab-deps && \
	  { tests/fixtures/lab/labctl.sh cache $(LAB_SUITE) >/dev/null & cache=$$!; } && \
	  $(MAKE) --no-print-directory collection-run && wait $$cache && $(MAKE) --no-print-directory lab; \
	else $(MAKE) --no-print-directory collection-run; fi
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml -l '$(LIMIT)' $(PLAYBOOK_ARGS)
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml -l '$(LIMIT)' --tags verify $(PLAYBOOK_ARGS)

verify: collection-run
	$(BIN)/ansible-playbook -i $(INVENTORY) site.yml -l '$(LIMIT)' --tags verify $(PLAYBOOK_ARGS)

lint: collection
	$(BIN)/yamllint --strict .
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/ansible-lint --profile production
	$(BIN)/python tools/role_docs.py --check
	$(BIN)/antsibull-changelog lint
	@$(BIN)/antsibull-changelog generate && git diff --quiet -- CHANGELOG.rst || { echo "CHANGELOG.rst was stale (regenerated): commit it"; exit 1; }

# Role READMEs from meta/argument_specs.yml, CHANGELOG.rst from changelogs/.
docs: collection
	$(BIN)/python tools/role_docs.py
	$(BIN)/antsibull-changelog generate

# The tarball an operator installs (ansible-galaxy collection install dist/blackwell-inference-X.Y.Z.tar.gz);
# galaxy.yml's build_ignore keeps out what does not run from an installed collection.
dist: collection-run
	$(BIN)/ansible-galaxy collection build --force --output-path dist .
	@ls dist/blackwell-inference-$$(sed -n 's/^version: *//p' galaxy.yml).tar.gz

sanity: collection
	tests/sanity.sh

unit: collection
	$(BIN)/pytest -q tests/unit

integration: collection
	$(BIN)/pytest -q tests/integration tests/lab

# The testinfra suites from the lab's images (builds a missing image first: prepare, converge).
lab-tests: collection lab-deps
	$(BIN)/pytest -q tests/lab

# Every stage timed (tools/test.sh); pytest last, so CI's closing line is pytest's summary.
test:
	@tools/test.sh

# Timings with a baseline in the same run (not a test).
bench: collection
	$(BIN)/python tests/benchmark/bench_cuda_facts.py

# site.yml on the lab host against a baseline play (brings ct200 up and converges it first if needed).
bench-site: collection-run
	@if ! tests/fixtures/lab/labctl.sh status ct200 0; then $(MAKE) lab; fi
	$(BIN)/ansible-playbook -i inventories/lab/hosts.yml site.yml -l ct200 >/dev/null
	$(BIN)/python tests/benchmark/bench_site.py

clean:
	rm -rf .collections tests/output .pytest_cache .ruff_cache dist
