# jetson_llm.vllm: every target sets itself up from nothing on a fresh Debian 12 machine (as root).
#   make demo   - the main job on the built-in local demo fleet
#   make test   - everything CI runs (lint, sanity, unit, integration)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

TOP        := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
PYTHON     ?= python3
VENV       := $(TOP)/.venv
BIN        := $(VENV)/bin
STAMPS     := $(TOP)/.build/stamps
COLL_LINK  := $(TOP)/.build/collections
ANSIBLE_ENV := ANSIBLE_COLLECTIONS_PATH=$(COLL_LINK) ANSIBLE_FORCE_COLOR=0 PATH=$(BIN):$$PATH
# chromium: tests/integration/test_fleet.py opens the fleet report in headless Chromium.
APT_PACKAGES := python3-venv git make tar zstd ca-certificates shellcheck chromium

.PHONY: help deps venv collection demo test lint galaxy sanity units compat compat-venvs integration integration-shared integration-lifecycle integration-lifecycle-verdicts integration-roles-lifecycle integration-timed integration-lanes-check testbed nspawn docker bench changelog clean ee scale

help:
	@echo "make demo         run the main job on the built-in demo fleet"
	@echo "make test         the whole suite (lint, sanity, units, integration)"
	@echo "make lint | galaxy | sanity | units | integration | bench"
	@echo "make integration-shared | integration-lifecycle | integration-lifecycle-verdicts | integration-roles-lifecycle | integration-timed"
	@echo "make scale        the cohort rollout on a SIMULATED fleet of HOSTS (100) nspawn hosts, faults planted (KEEP=1 keeps it up)"

# --- set-up ---------------------------------------------------------------------------------
$(STAMPS)/apt:
	@mkdir -p $(STAMPS)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then echo "missing packages:$$missing (no apt-get)" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@touch $@

deps: $(STAMPS)/apt

$(STAMPS)/venv: tests/requirements.txt | $(STAMPS)/apt
	@mkdir -p $(STAMPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r tests/requirements.txt
	@touch $@

venv: $(STAMPS)/venv

# ansible-test bootstraps pip into its virtualenvs from a host these machines cannot reach;
# tests/utils/get_pip_offline.py does the same job with ensurepip and the normal package index.
$(STAMPS)/ansible-test: tests/utils/get_pip_offline.py | $(STAMPS)/venv
	$(BIN)/python tests/utils/get_pip_offline.py --install-cache
	@touch $@

collection: venv
	@tests/utils/collection.sh link >/dev/null

# --- the main job ---------------------------------------------------------------------------
# The demo fleet: systemd-nspawn hosts with Jetson identities, each serving a real vLLM (CPU build).
# REPORT_DIR=... puts the fleet report elsewhere; KEEP=1 leaves the fleet up.
REPORT_DIR ?= $(TOP)/reports
KEEP ?= 0
demo: collection testbed nspawn
	cd $(TOP) && $(ANSIBLE_ENV) REPORT_DIR=$(REPORT_DIR) KEEP=$(KEEP) tests/nspawn/demo.sh

# A scale run of the cohort rollout on a SIMULATED Jetson fleet (tests/nspawn/scale.py; not part of `make test`):
# HOSTS systemd-nspawn hosts serving the batch simulator, planted faults; writes reports/scale/summary.json and
# reports/scale/fleet-report.json. KEEP=1 leaves the fleet up.
scale: collection nspawn
	cd $(TOP) && $(ANSIBLE_ENV) KEEP=$(KEEP) $(BIN)/python tests/nspawn/scale.py --hosts $(or $(HOSTS),100) --out $(TOP)/reports/scale

# --- tests ----------------------------------------------------------------------------------
lint: collection
	cd $(TOP) && $(ANSIBLE_ENV) $(BIN)/ansible-lint --profile production
	cd $(TOP) && $(BIN)/python tests/utils/role_readme.py --check

# galaxy-importer (Galaxy's and Automation Hub's upload check) on the built tarball, in its own cached venv.
GALAXY_IMPORTER_VENV ?= $(TESTBED)/galaxy-importer-0.4.44
galaxy: venv
	GALAXY_IMPORTER_VENV=$(GALAXY_IMPORTER_VENV) tests/utils/galaxy_importer.sh

sanity: venv $(STAMPS)/ansible-test
	PATH=$(BIN):$$PATH tests/utils/ansible_test.sh sanity --venv --python 3.11 --color no

units: venv $(STAMPS)/ansible-test
	PATH=$(BIN):$$PATH tests/utils/ansible_test.sh units --venv --python 3.11 --color no

# Real vLLM (CPU build) and tiny generated models, cached outside the clone (docs/testbed.md).
TESTBED ?= $(or $(JETSON_LLM_TESTBED),/var/cache/jetson_llm_vllm)
testbed:
	JETSON_LLM_TESTBED=$(TESTBED) tests/testbed/install.sh
	JETSON_LLM_TESTBED=$(TESTBED) $(TESTBED)/venv/bin/python tests/testbed/make_models.py

# Real systemd hosts for the role tests: a Debian 12 root for systemd-nspawn, cached outside the
# clone (tests/nspawn/build_root.sh; about 1 minute the first time).
NSPAWN_CACHE ?= $(or $(JETSON_LLM_NSPAWN_CACHE),/var/cache/jetson_llm_nspawn)
nspawn:
	JETSON_LLM_NSPAWN_CACHE=$(NSPAWN_CACHE) tests/nspawn/build_root.sh

# A real Docker Engine (bookworm's docker.io, dockerd started in the background), trixie's Compose v2
# and the local test-bed image imported from the nspawn root, for the compose role test
# (tests/docker/setup.sh; caches under /var/cache/jetson_llm_docker).
docker: nspawn
	JETSON_LLM_NSPAWN_CACHE=$(NSPAWN_CACHE) tests/docker/setup.sh

# The oldest and newest ansible-core's venvs (tests/utils/compat.sh): some role scenarios run with their ansible-playbook.
compat-venvs: venv
	tests/utils/compat.sh venvs

integration: collection testbed nspawn docker compat-venvs
	cd $(TOP) && $(ANSIBLE_ENV) $(BIN)/pytest -p no:cacheprovider -v --durations=0 tests/integration

# make test runs the integration suite in four parts (tests/utils/run_suites.sh); every file is in exactly one
# (`make integration-lanes-check` fails otherwise).
# - shared: files that time nothing on real vLLM (modules through the ansible CLI, fake servers, booted hosts,
#   playbook checks), run beside the static suites;
# - lifecycle: files that start real vLLM, Docker and systemd hosts, whose assertions rest on no measured speed
#   (a start-up, a refusal, a sure reject, a report), run beside the static suites too (roles-lifecycle: the role
#   scenarios of that kind, after sanity and units in their lane);
# - timed: files whose outcomes rest on measured speed (the role runs' verdicts on real vLLM, the benchmark's
#   exactness, the simulators' timings), run alone after the first phase (nothing beside them: a concurrency-8
#   measurement on real vLLM is too noisy beside another real vLLM to show a regression).
# SETUP= (as make test passes it, after making the set-up once) runs a part without its set-up prerequisites.
INTEGRATION_SHARED := $(addprefix tests/integration/,test_hostile_inputs.py test_speculative_modules.py \
	test_jetson_facts.py test_external_commands.py test_playbook_patterns.py test_awx_survey.py \
	test_vllm_health_exposure.py test_role_tasks.py test_benchmark_module_defaults.py \
	test_vllm_service_info.py test_sim_fleet_infra.py)
INTEGRATION_LIFECYCLE := $(addprefix tests/integration/,test_awx_credential.py test_fleet.py \
	test_vllm_startup_real.py test_target_pythons.py)
# The lifecycle files whose outcome rests on a clear verdict on real vLLM (a random draft rejected, a one-layer draft
# kept): make test runs them after the lifecycle part, once the static suites and the shared part have ended (beside
# the role scenarios, niced; tests/utils/run_suites.sh).
INTEGRATION_LIFECYCLE_VERDICTS := $(addprefix tests/integration/,test_docker_unit.py test_compose.py)
# The role scenarios that assert no close measurement (refusals, sure rejects, interruptions; their own two hosts):
# a lifecycle file of its own, run after sanity and units in their lane (make test's phase 1).
INTEGRATION_ROLES_LIFECYCLE := tests/integration/test_roles_lifecycle.py
INTEGRATION_TIMED := $(addprefix tests/integration/,test_roles.py test_benchmark_exactness.py test_cohorts.py test_awx_workflow.py \
	test_sequential_real.py test_vllm_benchmark_real.py)
SETUP ?= collection testbed nspawn docker compat-venvs
integration-lanes-check:
	@listed=$$(printf '%s\n' $(INTEGRATION_SHARED) $(INTEGRATION_LIFECYCLE) $(INTEGRATION_LIFECYCLE_VERDICTS) \
	  $(INTEGRATION_ROLES_LIFECYCLE) \
	  $(INTEGRATION_TIMED) | sort); \
	found=$$(ls $(TOP)/tests/integration/test_*.py | sed 's|^$(TOP)/||' | sort); \
	if [ "$$listed" != "$$found" ]; then \
	  echo "Makefile: every integration file must be in exactly one of INTEGRATION_SHARED, INTEGRATION_LIFECYCLE," \
	       "INTEGRATION_LIFECYCLE_VERDICTS, INTEGRATION_ROLES_LIFECYCLE, INTEGRATION_TIMED; listed vs found:" >&2; \
	  diff <(echo "$$listed") <(echo "$$found") >&2; exit 1; fi
integration-shared: collection nspawn compat-venvs integration-lanes-check
	cd $(TOP) && $(ANSIBLE_ENV) $(BIN)/pytest -p no:cacheprovider -v --durations=0 $(INTEGRATION_SHARED)

integration-lifecycle: $(SETUP)
	cd $(TOP) && $(ANSIBLE_ENV) JETSON_TEST_LANE=lifecycle $(BIN)/pytest -p no:cacheprovider -v --durations=0 \
		$(INTEGRATION_LIFECYCLE)

integration-lifecycle-verdicts: $(SETUP)
	cd $(TOP) && $(ANSIBLE_ENV) JETSON_TEST_LANE=lifecycle-verdicts $(BIN)/pytest -p no:cacheprovider -v --durations=0 \
		$(INTEGRATION_LIFECYCLE_VERDICTS)

integration-roles-lifecycle: $(SETUP)
	cd $(TOP) && $(ANSIBLE_ENV) JETSON_TEST_LANE=roles-lifecycle $(BIN)/pytest -p no:cacheprovider -v --durations=0 \
		$(INTEGRATION_ROLES_LIFECYCLE)

integration-timed: $(SETUP)
	cd $(TOP) && $(ANSIBLE_ENV) JETSON_TEST_LANE=timed $(BIN)/pytest -p no:cacheprovider -v --durations=0 \
		$(INTEGRATION_TIMED)

compat: venv
	tests/utils/compat.sh

bench: collection testbed
	cd $(TOP) && $(ANSIBLE_ENV) $(BIN)/python tests/benchmarks/client_ceiling.py
	cd $(TOP) && $(ANSIBLE_ENV) $(BIN)/python tests/benchmarks/compare_vllm_bench.py

# AWX / AAP execution environment: the build context (docs/fleet.md); `ansible-builder build` makes the image.
# Its own small venv: ansible-core (to build the collection) and ansible-builder, nothing of the test toolchain.
EE_VENV := $(TOP)/.build/ee-venv
EE_REQUIREMENTS := $(shell grep -E '^(ansible-core|ansible-builder)==' $(TOP)/tests/requirements.txt)
$(STAMPS)/ee-venv: tests/requirements.txt
	@mkdir -p $(STAMPS)
	@command -v $(PYTHON) >/dev/null && $(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; }
	test -x $(EE_VENV)/bin/python || $(PYTHON) -m venv $(EE_VENV)
	$(EE_VENV)/bin/pip install -q $(EE_REQUIREMENTS)
	@touch $@

ee: $(STAMPS)/ee-venv
	rm -rf $(TOP)/.build/ee && mkdir -p $(TOP)/.build/ee
	cd $(TOP) && $(EE_VENV)/bin/ansible-galaxy collection build --force --output-path .build/ee/dist .
	cp $(TOP)/.build/ee/dist/jetson_llm-vllm-*.tar.gz $(TOP)/.build/ee/jetson_llm-vllm.tar.gz
	cd $(TOP) && $(EE_VENV)/bin/ansible-builder create -f execution-environment.yml --context .build/ee/context

changelog: venv
	cd $(TOP) && $(BIN)/antsibull-changelog lint

# Every suite, each one's wall time printed as it ends and all of them at the end: the static suites two
# at a time, integration alone after them (tests/utils/run_suites.sh).
test:
	MAKE="$(MAKE)" tests/utils/run_suites.sh

clean:
	rm -rf $(TOP)/.build $(TOP)/tests/output
