# baremetal.gpu: the two commands are `make lab` (main job) and `make test` (everything).
.PHONY: lab test setup images lint sanity units integration molecule build clean

lab:            ## set up, then run preflight, the host layer and verify on a local lab node (LAB_OS, default ubuntu2404)
	bash scripts/lab.sh

test:           ## set up everything from nothing and run every check, with a summary table
	bash scripts/test-all.sh

setup:          ## host packages, venv, collections, helm/kubectl
	bash scripts/setup.sh

images:         ## build (or reuse) the systemd test-node images
	bash scripts/build-images.sh

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

clean:
	rm -rf .cache/results .cache/logs .cache/ansible-test tests/output
