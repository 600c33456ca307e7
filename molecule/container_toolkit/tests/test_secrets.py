"""Registry credentials in the user's containerd config never reach the output, also at -vvv.

The debian12 node (containerd 1.6.20) runs on tests/fixtures/containerd/user/v2-user-credentials.toml: a registry
password with `{{`, `{#`, `%` and quotes. On containerd 1.x the role's drop-in must carry it (containerd replaces
the whole CRI table with the imported one), so every task that reads, plans or writes those files could print it.
"""
from helpers import USER_CONFIG, node, node_path, play, registry_password


def test_registry_password_never_printed_at_vvv_with_diff():
    with open(node_path(node("debian12"), USER_CONFIG), encoding="utf-8") as handle:
        secret = registry_password(handle.read())
    assert "{{" in secret and "{#" in secret and "%" in secret and "'" in secret
    rc, out = play(node("debian12"), {}, "-vvv", "--check", "--diff")
    assert rc == 0, out[-4000:]
    # The tasks that read and plan the files ran (hidden), and the output is -vvv's.
    assert "TASK [baremetal.gpu.container_toolkit : Preflight | Plan containerd's configuration" in out
    assert "the output has been hidden due to the fact that" in out  # no_log (quotes differ between callbacks)
    assert "NSENTER " in out  # the connection logs each command at -vvv
    assert secret not in out
    assert "Reg-s3cr" not in out  # nor a part of it (a template that cut `{{et}}` out would leave this)
