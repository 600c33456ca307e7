# baremetal.gpu: the two commands are `make lab` (main job) and `make test` (everything).
.PHONY: lab test setup images ee lint sanity units integration molecule build docs docs-lint docs-screenshots galaxy core-range clean

lab:            ## set up, then run preflight, the host layer and verify on a local lab node (LAB_OS, default ubuntu2404)
	bash scripts/lab.sh

test:           ## set up everything from nothing and run every check, with a summary table
	bash scripts/test-all.sh

setup:          ## host packages, venv, collections, helm/kubectl
	bash scripts/setup.sh

images:         ## build (or reuse) the systemd test-node images
	bash scripts/build-images.sh

ee: setup       ## the execution environment (execution-environment.yml) with ansible-builder + podman; EE_BASE_IMAGE=...
	bash scripts/build-ee.sh

lint: setup
	. scripts/env.sh && python3 scripts/role-docs.py --check && yamllint -s . && ansible-lint

sanity: setup
	bash scripts/ansible-test.sh sanity

units: setup
	bash scripts/ansible-test.sh units

integration: setup
	. scripts/env.sh && python3 -m pytest -q tests/integration

molecule: setup images   ## make molecule S=<scenario>
	. scripts/env.sh && molecule test -s $(S)

build: setup
	bash scripts/check-build.sh

docs:           ## the collection's documentation site (antsibull-docs + Sphinx) in .cache/docs/html
	bash scripts/build-docs.sh

docs-lint:      ## antsibull-docs lint-collection-docs --plugin-docs
	bash scripts/check-docs.sh

docs-screenshots: docs   ## headless Chromium screenshots of the site's index and nvidia_smi page
	bash scripts/screenshot-docs.sh

galaxy: setup   ## Galaxy's import check (galaxy-importer) on the built tarball
	bash scripts/check-galaxy.sh

core-range: setup   ## units + import/compile sanity with the lowest ansible-core that meta/runtime.yml claims
	bash scripts/check-core-range.sh

clean:
	rm -rf .cache/results .cache/logs .cache/ansible-test .cache/ansible-test-venv-core-* .cache/galaxy .cache/docs .cache/docs-lint tests/output
