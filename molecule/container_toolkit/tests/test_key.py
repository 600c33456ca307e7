"""The toolkit's signing key, downloaded on the node and checked against the pinned fingerprint.

A local HTTP server inside the Ubuntu 24.04 node (127.0.0.1, the node's own network namespace) serves
a wrong key, and a right one: a key generated here with gpg, whose fingerprint is given to the role
as container_toolkit_gpg_fingerprint (NVIDIA's real key cannot be downloaded here), plus a flat apt
repository signed with it, which apt must accept through the role's signed-by keyring. Then an air-gapped site's
mirror of that repository under another URL (container_toolkit_repo_mirror_url), its key from a file on the
controller: stand-in packages of the toolkit's real names at the pinned version, installed from the mirror.
"""
import os

import pytest
import testinfra
import yaml

from helpers import PROJECT, node, play, recap_changed
from kill_run import kill_when_held

NOBLE = node("ubuntu2404")
PORT = 8765
KEYRING = "/etc/apt/keyrings/nvidia-container-toolkit.asc"
LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
# The Release file of a flat repository in the current directory (its Packages index), signed with the test key.
SIGN_RELEASE = r"""{ echo "Origin: baremetal.gpu test"; echo "Label: test"; echo "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')";
  echo "SHA256:"; echo " $(sha256sum Packages | cut -d' ' -f1) $(stat -c %s Packages) Packages"; } > Release
gpg --batch --yes --local-user right@example.invalid --clearsign -o InRelease Release"""
SETUP = r"""
set -eu
export GNUPGHOME=/root/test-gnupg
rm -rf "$GNUPGHOME" /srv/www && mkdir -m 0700 "$GNUPGHOME" && mkdir -p /srv/www/keys /srv/www/libnvidia-container/stable/deb/amd64
gpg --batch --passphrase '' --quick-gen-key 'baremetal.gpu test key <right@example.invalid>' ed25519 sign never
gpg --batch --passphrase '' --quick-gen-key 'another key <wrong@example.invalid>' ed25519 sign never
gpg --armor --export right@example.invalid > /srv/www/keys/right.asc
gpg --armor --export wrong@example.invalid > /srv/www/keys/wrong.asc
cd /srv/www/libnvidia-container/stable/deb/amd64
: > Packages
SIGN_RELEASE
systemctl stop test-http 2>/dev/null || true
systemd-run --unit test-http python3 -m http.server PORT --bind 127.0.0.1 --directory /srv/www
for i in $(seq 50); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:PORT/keys/right.asc")' 2>/dev/null && break; sleep 0.1; done
gpg --with-colons --list-keys right@example.invalid | awk -F: '/^fpr/ {print $10; exit}'
""".replace("PORT", str(PORT)).replace("SIGN_RELEASE", SIGN_RELEASE)


@pytest.fixture(scope="module")
def noble():
    host = testinfra.get_host("podman://" + NOBLE)
    fingerprint = host.check_output(SETUP)
    host.run_expect([0], "rm -f %s %s" % (KEYRING, LIST))
    yield host, fingerprint
    host.run("systemctl stop test-http; rm -f %s %s" % (KEYRING, LIST))


def run(fingerprint, url):
    return play(NOBLE, {"container_toolkit_gpg_fingerprint": fingerprint, "container_toolkit_gpg_key_url": url,
                        "container_toolkit_repo_base_url": "http://127.0.0.1:%d/libnvidia-container" % PORT},
                "--tags", "container_toolkit_preflight,container_toolkit_repo", skip_repo=False)


def test_wrong_key_refused_nothing_written(noble):
    host, fingerprint = noble
    rc, out = run(fingerprint, "http://127.0.0.1:%d/keys/wrong.asc" % PORT)
    flat = " ".join(out.split())
    assert rc != 0 and "container_toolkit_gpg_key_url is not the pinned signing key" in flat, out[-3000:]
    assert "expected exactly one primary key with fingerprint %s" % fingerprint in flat
    assert "Preflight | Check the key's fingerprint" in out
    assert recap_changed(out, NOBLE) == 0
    assert not host.file(KEYRING).exists and not host.file(LIST).exists


def test_unreachable_url_is_a_clear_error(noble):
    host, fingerprint = noble
    rc, out = run(fingerprint, "http://127.0.0.1:9/gpgkey")
    flat = " ".join(out.split())
    assert rc != 0 and "container_toolkit_gpg_key_url: could not download the key from http://127.0.0.1:9/gpgkey" in flat, out[-3000:]
    assert recap_changed(out, NOBLE) == 0 and not host.file(KEYRING).exists


def test_right_key_written_and_apt_accepts_it_as_signed_by(noble):
    host, fingerprint = noble
    rc, out = run(fingerprint, "http://127.0.0.1:%d/keys/right.asc" % PORT)
    assert rc == 0, out[-3000:]
    key = host.file(KEYRING)
    assert key.is_file and key.mode == 0o644 and key.content_string.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")
    assert "[signed-by=%s]" % KEYRING in host.file(LIST).content_string
    update = host.run("apt-get update -o Dir::Etc::SourceList=%s -o Dir::Etc::SourceParts=- 2>&1" % LIST)
    assert update.rc == 0, update.stdout
    assert "127.0.0.1:%d" % PORT in update.stdout
    assert "NO_PUBKEY" not in update.stdout and "not signed" not in update.stdout and "W:" not in update.stdout, update.stdout
    # A second run changes nothing.
    rc, out = run(fingerprint, "http://127.0.0.1:%d/keys/right.asc" % PORT)
    assert rc == 0 and recap_changed(out, NOBLE) == 0, out[-3000:]


# An air-gapped site's mirror of NVIDIA's repository (docs/air-gapped.md): the same flat layout under the site's own
# URL, with stand-in packages of the toolkit's real names at the pinned version (NVIDIA's packages cannot be fetched
# here; these hold no files, only the names, versions and dependencies the real ones carry), signed with the test key.
MIRROR = "/srv/www/site-mirror/nvidia/libnvidia-container"
MIRROR_URL = "http://127.0.0.1:%d/site-mirror/nvidia/libnvidia-container" % PORT
# The stand-ins' prerm holds dpkg inside a removal once ARMED exists (it says so with HOLDING).
ARMED = "/run/baremetal-gpu-test/ctk-purge-armed"
HOLDING = "/run/baremetal-gpu-test/ctk-purge-holding"
APT_RECORD = "/var/lib/baremetal-gpu/container_toolkit/apt-transaction.json"
TOOLKIT_NAMES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
                 "libnvidia-container1")
STAND_INS = r"""
set -eu
export GNUPGHOME=/root/test-gnupg
repo=MIRROR/stable/deb/amd64
rm -rf MIRROR /var/tmp/stand-in-debs && mkdir -p "$repo" /var/tmp/stand-in-debs
while read -r name depends; do
  d=/var/tmp/stand-in-debs/$name; mkdir -p "$d/DEBIAN"
  { echo "Package: $name"; echo "Version: VERSION-1"; echo "Architecture: amd64";
    echo "Maintainer: baremetal.gpu tests <tests@example.invalid>";
    [ "$depends" = - ] || echo "Depends: $depends";
    echo "Description: TEST ONLY stand-in of NVIDIA's $name (molecule/container_toolkit, test_key.py)"; } > "$d/DEBIAN/control"
  # TEST ONLY: armed by uninstall_killed_inside_the_purge_then_again, a removal holds dpkg here (once).
  printf '%s\n' '#!/bin/sh' 'if [ "$1" = remove ] && [ -e ARMED ]; then rm -f ARMED; touch HOLDING; sleep 600; fi' \
    'exit 0' > "$d/DEBIAN/prerm"; chmod 0755 "$d/DEBIAN/prerm"
  dpkg-deb --build "$d" "$repo/${name}_VERSION-1_amd64.deb" >/dev/null
done <<'LIST'
libnvidia-container1 -
libnvidia-container-tools libnvidia-container1 (>= VERSION-1)
nvidia-container-toolkit-base -
nvidia-container-toolkit nvidia-container-toolkit-base (= VERSION-1), libnvidia-container-tools (>= VERSION-1)
LIST
cd "$repo"
python3 - <<'PY'
import glob, hashlib, os, subprocess
out = []
for deb in sorted(glob.glob('*.deb')):
    control = subprocess.run(['dpkg-deb', '-f', deb], capture_output=True, text=True, check=True).stdout.strip()
    data = open(deb, 'rb').read()
    out.append('%s\nFilename: ./%s\nSize: %d\nSHA256: %s\n' % (control, deb, len(data), hashlib.sha256(data).hexdigest()))
open('Packages', 'w').write('\n'.join(out))
PY
SIGN_RELEASE
"""
with open(os.path.join(PROJECT, "roles", "container_toolkit", "defaults", "main.yml"), encoding="utf-8") as _fh:
    ROLE_DEFAULTS = yaml.safe_load(_fh)
PUBLIC = ("nvidia.github.io", "developer.download.nvidia.com", "nvcr.io")


def test_a_mirror_and_a_key_file_put_every_source_key_and_download_on_the_mirror(noble, tmp_path):
    """The host layer's NVIDIA repository from a site mirror, its key from a file on the controller: the role writes
    one source and one keyring, both the mirror's; apt downloads the index and the pinned packages from the mirror
    (the mirror's own access log); no public URL is in the run's output or in any apt source on the node; a rerun
    changes nothing. The limit: the packages are stand-ins (NVIDIA's repository cannot be served here)."""
    host, fingerprint = noble
    version = ROLE_DEFAULTS["container_toolkit_version"]
    host.run_expect([0], STAND_INS.replace("SIGN_RELEASE", SIGN_RELEASE).replace("MIRROR", MIRROR)
                    .replace("VERSION", version).replace("ARMED", ARMED).replace("HOLDING", HOLDING))
    key_file = tmp_path / "nvidia-container-toolkit.asc"
    key_file.write_text(host.check_output("cat /srv/www/keys/right.asc") + "\n")
    record = "/var/lib/baremetal-gpu/container_toolkit/installed.json"
    host.run_expect([0], "rm -f %s %s; cp -a %s /var/tmp/record.before 2>/dev/null || rm -f /var/tmp/record.before; "
                         "find /etc/apt -type f | sort > /var/tmp/apt-files.before" % (LIST, KEYRING, record))
    since = host.check_output("date '+%Y-%m-%d %H:%M:%S'")
    extra = {"container_toolkit_gpg_fingerprint": fingerprint, "container_toolkit_gpg_key": str(key_file),
             "container_toolkit_repo_mirror_url": MIRROR_URL, "container_toolkit_version": version}
    tags = ("--tags", "container_toolkit_preflight,container_toolkit_repo,container_toolkit_install")
    try:
        rc, out = play(NOBLE, extra, *tags, "-v", skip_repo=False)
        assert rc == 0, out[-4000:]
        assert "127.0.0.1:%d/site-mirror/" % PORT in out, out[-4000:]       # apt's downloads, in the run's log
        assert not [url for url in PUBLIC if url in out], [line for line in out.splitlines() if any(
            url in line for url in PUBLIC)][:5]
        # The files the run added under /etc/apt: the source and the keyring, nothing else.
        added = host.check_output("find /etc/apt -type f | sort | comm -13 /var/tmp/apt-files.before -").split()
        assert sorted(added) == sorted([LIST, KEYRING]), added
        assert host.file(LIST).content_string.splitlines()[-1] == (
            "deb [signed-by=%s] %s/stable/deb/$(ARCH) /" % (KEYRING, MIRROR_URL))
        assert host.check_output("gpg --show-keys --with-colons %s | awk -F: '/^fpr/ {print $10; exit}'"
                                 % KEYRING) == fingerprint
        # Every apt source on the node names the node's own archive mirror or the site mirror, none NVIDIA's.
        sources = host.check_output("cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null || true")
        assert not [url for url in PUBLIC if url in sources], sources
        # The pinned packages came from the mirror: each installed at the pinned version, each .deb fetched from it.
        for name in TOOLKIT_NAMES:
            assert host.check_output("dpkg-query -W -f '${Version} ${db:Status-Abbrev}' %s" % name).startswith(
                version + "-1 hi"), name          # installed and held
        served = host.check_output("journalctl -u test-http --since '%s' --no-pager -o cat" % since)
        assert "GET /site-mirror/nvidia/libnvidia-container/stable/deb/amd64/InRelease" in served, served[-2000:]
        assert served.count("_%s-1_amd64.deb HTTP" % version) == 4, served[-2000:]
        # A second run changes nothing and downloads nothing.
        rc, out = play(NOBLE, extra, *tags, skip_repo=False)
        assert rc == 0 and recap_changed(out, NOBLE) == 0, out[-3000:]
        served = host.check_output("journalctl -u test-http --since '%s' --no-pager -o cat" % since)
        assert served.count("_%s-1_amd64.deb HTTP" % version) == 4, served[-2000:]
        uninstall_killed_inside_the_purge_then_again(host)
    finally:
        names = " ".join(TOOLKIT_NAMES)
        host.run("rm -f %s; dpkg --configure -a; apt-mark unhold %s; dpkg --purge %s; rm -f %s %s /etc/apt/keyrings/nvidia-container-toolkit.gpg; "
                 "if [ -e /var/tmp/record.before ]; then mv /var/tmp/record.before %s; else rm -f %s; fi; "
                 "apt-get update -qq" % (ARMED, names, names, LIST, KEYRING, record, record))


def uninstall_killed_inside_the_purge_then_again(host):
    """The uninstall's purge of the packages just installed, killed with dpkg held inside it (a stand-in's prerm), as
    a dropped SSH session kills apt and dpkg with the run: dpkg is left interrupted with the role's record of the
    purge. The next uninstall finishes it (dpkg --configure -a) and purges every package; a third changes nothing."""
    host.run_expect([0], "mkdir -p %s && rm -f %s && touch %s" % (os.path.dirname(ARMED), HOLDING, ARMED))
    out = kill_when_held(host, play(NOBLE, {}, background=True, playbook="scenario_uninstall.yml"), HOLDING)
    assert host.run("test -e %s" % HOLDING).rc == 0, "dpkg was never held in the purge:\n" + out[-3000:]
    # What the dropped session does in the node: apt, dpkg and the held script die with it.
    host.run("pkill -9 -x apt-get; pkill -9 -x dpkg; pkill -9 -f '[.]prerm remove'; pkill -9 -x sleep; rm -f %s"
             % HOLDING)
    journal = int(host.check_output("find /var/lib/dpkg/updates -regex '.*/[0-9]+' | wc -l"))
    assert journal > 0 and host.file(APT_RECORD).exists, (journal, out[-3000:])
    rc, out = play(NOBLE, {}, playbook="scenario_uninstall.yml")
    assert rc == 0, out[-4000:]
    assert "Finished the toolkit purge an earlier uninstall started on %s" % NOBLE in " ".join(out.split()), out[-4000:]
    for name in TOOLKIT_NAMES:
        status = host.run("dpkg-query -W -f '${db:Status-Abbrev}' %s" % name)
        assert status.rc != 0 or status.stdout.startswith("pn"), (name, status.stdout)
    assert not host.file(APT_RECORD).exists
    assert host.check_output("find /var/lib/dpkg/updates -regex '.*/[0-9]+' | wc -l") == "0"
    rc, out = play(NOBLE, {}, playbook="scenario_uninstall.yml")
    assert rc == 0 and recap_changed(out, NOBLE) == 0, out[-3000:]
