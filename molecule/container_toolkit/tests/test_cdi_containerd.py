"""CDI on the containerd 1.7 and 2.2 nodes: the real containerd configured to read the spec directory,
and the running containerd's own record of that configuration."""
import os

import testinfra.utils.ansible_runner

from running import logged_cri_config

RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + h for h in RUNNER.get_hosts("cdi_on") if h in RUNNER.get_hosts("runtime_containerd")]
SPEC = "/var/run/cdi/nvidia.yaml"


def test_containerd_reads_the_spec_directory(host):
    dump = host.check_output("containerd config dump")
    assert "enable_cdi = true" in dump
    assert SPEC.rsplit("/", 1)[0] in dump  # cdi_spec_dirs has /var/run/cdi
    # The running containerd logged its CRI configuration at start: CDI on, with the spec directory.
    config = logged_cri_config(host)
    assert ("EnableCDI:true" in config and "CDISpecDirs:[/etc/cdi /var/run/cdi]" in config) or \
        ('"enableCDI":true' in config.replace('\\"', '"') and
         '"cdiSpecDirs":["/etc/cdi","/var/run/cdi"]' in config.replace('\\"', '"')), config[-3000:]
