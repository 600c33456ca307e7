"""The toolkit's signing key, downloaded on the node and checked against the pinned fingerprint.

A local HTTP server inside the Ubuntu 24.04 node (127.0.0.1, the node's own network namespace) serves
a wrong key, and a right one: a key generated here with gpg, whose fingerprint is given to the role
as container_toolkit_gpg_fingerprint (NVIDIA's real key cannot be downloaded here), plus a flat apt
repository signed with it, which apt must accept through the role's signed-by keyring.
"""
import pytest
import testinfra

from helpers import node, play, recap_changed

NOBLE = node("ubuntu2404")
PORT = 8765
KEYRING = "/etc/apt/keyrings/nvidia-container-toolkit.asc"
LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
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
{ echo "Origin: baremetal.gpu test"; echo "Label: test"; echo "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')";
  echo "SHA256:"; echo " $(sha256sum Packages | cut -d' ' -f1) 0 Packages"; } > Release
gpg --batch --yes --local-user right@example.invalid --clearsign -o InRelease Release
systemctl stop test-http 2>/dev/null || true
systemd-run --unit test-http python3 -m http.server PORT --bind 127.0.0.1 --directory /srv/www
for i in $(seq 50); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:PORT/keys/right.asc")' 2>/dev/null && break; sleep 0.1; done
gpg --with-colons --list-keys right@example.invalid | awk -F: '/^fpr/ {print $10; exit}'
""".replace("PORT", str(PORT))


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
