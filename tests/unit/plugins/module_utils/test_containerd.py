# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd.plan on real containerd versions and configs (tests/fixtures/containerd, SOURCE.md there).

The dumps in tests/fixtures/containerd/dumps are what the real containerd 1.6.20, 1.7.24 and 2.2.1
printed (`containerd config dump`) for the main config and drop-in that plan() returns for the same
inputs: they prove the runtime, the user's settings and CDI on each, and these tests prove plan()
still returns those files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import containerd, toml_compat

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'containerd')
DROPIN = '/etc/containerd/conf.d/99-nvidia.toml'
ENTRY = '/etc/containerd/conf.d/*.toml'
BINARY = '/usr/bin/nvidia-container-runtime'
VERSIONS = {'1.6': 'containerd-1.6.20-debian12.version.txt', '1.7': 'containerd-1.7.24-debian13.version.txt',
            '2.2': 'containerd-2.2.1-ubuntu2404.version.txt'}


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


def plan(release, config, cdi=False, default=False, imports=None):
    text = fixture(config) if config else None
    return containerd.plan('/etc/containerd/config.toml', text, imports or [], DROPIN, ENTRY, 'nvidia', BINARY,
                           fixture(VERSIONS[release]), default, cdi)


@pytest.mark.parametrize('release,expected', [('1.6', ('1.6.20', 1, 6)), ('1.7', ('1.7.24', 1, 7)), ('2.2', ('2.2.1', 2, 2))])
def test_containerd_version_of_real_output(release, expected):
    assert containerd.containerd_version(fixture(VERSIONS[release])) == expected


def test_containerd_version_refuses_garbage():
    with pytest.raises(containerd.PlanError):
        containerd.containerd_version('containerd: command not found')


def test_1x_dropin_carries_the_whole_cri_table():
    result = plan('1.6', 'user/v2-user.toml')
    assert result['merge'] == 'plugin' and result['version'] == 2
    dropin = toml_compat.loads(result['dropin_content'])
    cri = dropin['plugins'][containerd.CRI_V2]
    assert cri['sandbox_image'] == 'registry.example.com/pause:3.9'
    assert cri['registry']['mirrors']['docker.io']['endpoint'] == ['https://mirror.example.com']
    nvidia = cri['containerd']['runtimes']['nvidia']
    assert nvidia == {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True, 'BinaryName': BINARY}}
    assert 'enable_cdi' not in cri


def test_main_config_only_gains_the_import():
    user = fixture('user/v2-user.toml')
    result = plan('1.7', 'user/v2-user.toml')
    added = [line for line in result['main_content'].splitlines() if line not in user.splitlines()]
    assert added == ['imports = ["/etc/containerd/conf.d/*.toml"]']
    # A second plan over the result changes nothing.
    again = containerd.plan('/etc/containerd/config.toml', result['main_content'], [], DROPIN, ENTRY, 'nvidia', BINARY,
                            fixture(VERSIONS['1.7']), False, False)
    assert not again['main_changed'] and again['dropin_content'] == result['dropin_content']


def test_17_writes_cdi():
    result = plan('1.7', 'containerd-debian-package.config.toml', cdi=True)
    cri = toml_compat.loads(result['dropin_content'])['plugins'][containerd.CRI_V2]
    assert cri['enable_cdi'] is True and cri['cdi_spec_dirs'] == ['/etc/cdi', '/var/run/cdi']
    assert cri['cni'] == {'bin_dir': '/usr/lib/cni', 'conf_dir': '/etc/cni/net.d'}  # the package's settings kept
    # The imported runtimes map replaces the default one: runc must be in it, or the CRI plugin fails to load.
    assert cri['containerd']['runtimes']['runc'] == {'runtime_type': 'io.containerd.runc.v2'}
    assert result['cdi']['written'] and not result['cdi']['default_on']


def test_16_refuses_cdi_naming_the_variable():
    with pytest.raises(containerd.PlanError, match='container_toolkit_cdi_enabled is true, but containerd 1.6.20 cannot read CDI'):
        plan('1.6', 'user/v2-user.toml', cdi=True)


@pytest.mark.parametrize('config,version,plugin', [('user/v3-user.toml', 3, containerd.CRI_V3),
                                                   ('user/v2-user.toml', 2, containerd.CRI_V2),
                                                   (None, 3, containerd.CRI_V3)])
def test_2x_dropin_has_only_the_runtime_in_the_main_configs_version(config, version, plugin):
    result = plan('2.2', config, cdi=True)
    assert result['merge'] == 'key' and result['version'] == version
    dropin = toml_compat.loads(result['dropin_content'])
    assert dropin['version'] == version
    assert dropin['plugins'] == {plugin: {'containerd': {'runtimes': {'nvidia': {
        'runtime_type': 'io.containerd.runc.v2',
        'options': dict(({'SystemdCgroup': True} if config else {}), BinaryName=BINARY)}}}}}
    assert result['cdi'] == {'supported': True, 'default_on': True, 'requested': True, 'written': False,
                             'spec_dirs': ['/etc/cdi', '/var/run/cdi']}
    if config is None:
        assert result['main_content'] == 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        assert result['main_changed'] and not result['config_exists']


def test_2x_default_runtime():
    dropin = toml_compat.loads(plan('2.2', 'user/v3-user.toml', default=True)['dropin_content'])
    assert dropin['plugins'][containerd.CRI_V3]['containerd']['default_runtime_name'] == 'nvidia'


def test_2x_refuses_cdi_switched_off_by_the_user():
    text = fixture('user/v3-user.toml') + "\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n"
    with pytest.raises(containerd.PlanError, match='sets enable_cdi = false'):
        containerd.plan('/etc/containerd/config.toml', text, [], DROPIN, ENTRY, 'nvidia', BINARY,
                        fixture(VERSIONS['2.2']), False, True)


def test_2x_refuses_an_import_of_a_higher_version():
    imports = [('/etc/containerd/conf.d/10-site.toml', "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n")]
    with pytest.raises(containerd.PlanError, match='higher than the main config'):
        plan('2.2', 'user/v2-user.toml', imports=imports)


def test_1x_imports_replace_the_cri_table_in_order():
    imports = [('/etc/containerd/conf.d/10-site.toml',
                'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "site/pause:1"\n')]
    cri = toml_compat.loads(plan('1.7', 'user/v2-user.toml', imports=imports)['dropin_content'])['plugins'][containerd.CRI_V2]
    assert cri['sandbox_image'] == 'site/pause:1' and 'registry' not in cri


def test_2x_imports_merge_key_by_key():
    imports = [('/etc/containerd/conf.d/10-site.toml',
                "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n  NoNewKeyring = true\n")]
    nvidia = toml_compat.loads(plan('2.2', 'user/v3-user.toml', imports=imports)['dropin_content'])
    options = nvidia['plugins'][containerd.CRI_V3]['containerd']['runtimes']['nvidia']['options']
    assert options == {'SystemdCgroup': True, 'NoNewKeyring': True, 'BinaryName': BINARY}


def test_version_4_is_refused_with_what_to_do():
    with pytest.raises(containerd.PlanError) as err:
        plan('2.2', 'containerd-2.3-man-page.v4.toml')
    assert 'config version 4 (containerd 2.3 and later)' in str(err.value)
    assert 'changes nothing' in str(err.value) and 'container_toolkit_runtime=none' in str(err.value)


def test_version_3_on_containerd_1_is_refused():
    with pytest.raises(containerd.PlanError, match='containerd 1.x cannot read'):
        plan('1.7', 'user/v3-user.toml')


def test_config_version_1_is_refused():
    with pytest.raises(containerd.PlanError, match='config version 1'):
        containerd.plan('/etc/containerd/config.toml', '[plugins.cri]\n  sandbox_image = "x"\n', [], DROPIN, ENTRY,
                        'nvidia', BINARY, fixture(VERSIONS['2.2']))


@pytest.mark.parametrize('dump,runtime,cdi', [
    ('debian12-containerd-debian-package.config', True, (False, [])),
    ('debian13-containerd-debian-package.config', True, (True, ['/etc/cdi', '/var/run/cdi'])),
    ('debian12-v2-user', True, (False, [])),
    ('debian13-v2-user', True, (True, ['/etc/cdi', '/var/run/cdi'])),
    ('ubuntu2404-v2-user', True, (True, ['/etc/cdi', '/var/run/cdi'])),
    ('ubuntu2404-v3-user', True, (True, ['/etc/cdi', '/var/run/cdi'])),
    ('ubuntu2404-none', True, (True, ['/etc/cdi', '/var/run/cdi'])),
])
def test_real_dumps(dump, runtime, cdi):
    text = fixture('dumps/%s.dump.toml' % dump)
    assert containerd.dump_has_runtime(text, 'nvidia', BINARY) is runtime
    assert not containerd.dump_has_runtime(text, 'nvidia', '/usr/local/nvidia/toolkit/nvidia-container-runtime')
    assert containerd.dump_cdi(text) == cdi


@pytest.mark.parametrize('dump', ['debian12-v2-user', 'debian13-v2-user', 'ubuntu2404-v2-user'])
def test_real_dumps_keep_the_users_settings(dump):
    text = fixture('dumps/%s.dump.toml' % dump)
    assert 'oom_score = -999' in text
    assert 'registry.example.com/pause:3.9' in text
    assert 'https://mirror.example.com' in text


@pytest.mark.parametrize('host,release,config', [
    ('debian12', '1.6', 'user/v2-user.toml'), ('debian13', '1.7', 'user/v2-user.toml'),
    ('ubuntu2404', '2.2', 'user/v2-user.toml'), ('ubuntu2404', '2.2', 'user/v3-user.toml'),
])
def test_plan_is_what_the_real_binary_read(host, release, config):
    # The dumps were taken from exactly these plans (SOURCE.md); nvidia and BinaryName are in them.
    result = plan(release, config, cdi=release != '1.6')
    dump = toml_compat.loads(fixture('dumps/%s-%s.dump.toml' % (host, os.path.basename(config)[:-5])))
    plugin = containerd.CRI_V3 if release == '2.2' else containerd.CRI_V2
    runtime = dump['plugins'][plugin]['containerd']['runtimes']['nvidia']
    assert runtime['options']['BinaryName'] == BINARY and runtime['options']['SystemdCgroup'] is True
    assert 'nvidia' in result['dropin_content']


def test_emit_skips_empty_parents_and_quotes_keys():
    out = []
    containerd.emit_table(['plugins', 'io.containerd.grpc.v1.cri'], {'a': {'b': 1}, 'x y': 'z'}, out)
    assert out == ['', '[plugins."io.containerd.grpc.v1.cri"]', '  "x y" = "z"', '', '[plugins."io.containerd.grpc.v1.cri".a]', '  b = 1']


PASSWORD = "Reg-s3cr{{et}}-{#x#}-%-'q'-7f3a"


@pytest.mark.parametrize('release,dropin', [('1.6', True), ('1.7', True), ('2.2', False)])
def test_credentials_are_flagged_where_they_are(release, dropin):
    # containerd 1.x: the drop-in carries the user's CRI table, password included (containerd must keep it);
    # 2.x: only the runtime. The main config is the user's, with the password, in both.
    result = plan(release, 'user/v2-user-credentials.toml')
    assert result['credentials'] == {'dropin': dropin, 'main': True}
    assert (PASSWORD in result['dropin_content']) is dropin
    if dropin:
        cri = toml_compat.loads(result['dropin_content'])['plugins'][containerd.CRI_V2]
        assert cri['registry']['configs']['registry.example.com']['auth'] == {'username': 'puller', 'password': PASSWORD}


@pytest.mark.parametrize('release', ['1.6', '2.2'])
def test_no_credentials_no_flag(release):
    assert plan(release, 'user/v2-user.toml')['credentials'] == {'dropin': False, 'main': False}
    assert plan(release, None)['credentials'] == {'dropin': False, 'main': False}


def test_secret_values_finds_every_credential_key():
    auth = {'username': 'u', 'password': 'p1', 'auth': 'dTpwMQ==', 'identitytoken': 't1'}
    registry = {'configs': {'a': {'auth': auth}}, 'auths': {'b': {'auth': 'YjpwMg=='}}}
    data = {'plugins': {'x': {'registry': registry}}, 'list': [{'token': 't2'}], 'empty': {'password': ''}}
    assert sorted(containerd.secret_values(data)) == sorted(['p1', 'dTpwMQ==', 't1', 'YjpwMg==', 't2'])


RKE2 = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'rke2')


def rke2_fixture(name):
    with open(os.path.join(RKE2, name), encoding='utf-8') as handle:
        return handle.read()


@pytest.mark.parametrize('name,binary,version', [
    # The real RKE2-generated files (tests/fixtures/rke2/SOURCE.md): before and after RKE2 found the runtime.
    ('config.toml.before', '', 2),
    ('config.toml.after', BINARY, 2),
    # containerd 2.3's config version 4 layout (not captured from a node; SOURCE.md says how it was made).
    ('config-v4.toml.after', BINARY, 4),
])
def test_runtime_binary_and_version_of_rke2_generated_configs(name, binary, version):
    """The regular expressions over RKE2's config.toml became these parsed reads."""
    text = rke2_fixture(name)
    assert containerd.runtime_binary(text, 'nvidia') == binary
    assert containerd.runtime_binary(text, 'nvidia-cdi') == ''
    assert containerd.file_version(text) == version


@pytest.mark.parametrize('dump', ['debian12-v2-user', 'ubuntu2404-v3-user', 'ubuntu2404-none'])
def test_dump_problems_of_real_dumps(dump):
    text = fixture('dumps/%s.dump.toml' % dump)
    cdi_on = containerd.dump_cdi(text)[0]
    assert containerd.dump_problems(text, 'nvidia', BINARY, cdi_on) == []
    assert containerd.dump_problems(text, 'nvidia', '/usr/local/bin/other', False) == [
        'runtime nvidia has BinaryName %s, not /usr/local/bin/other' % BINARY]
    assert containerd.dump_problems(text, 'nvidia-legacy', BINARY, False) == ['no runtime nvidia-legacy with a BinaryName']


def test_dump_problems_name_cdi_off():
    # Debian 12's containerd 1.6 has no enable_cdi: CDI wanted is reported.
    text = fixture('dumps/debian12-v2-user.dump.toml')
    assert containerd.dump_problems(text, 'nvidia', BINARY, True) == ['the CRI plugin does not have enable_cdi = true']


def test_not_toml_reads_as_nothing():
    # A file RKE2 is still writing: read again, not a crash.
    half = rke2_fixture('config.toml.after')[:200] + '\n[plugins."io.containerd'
    assert containerd.runtime_binary(half, 'nvidia') == ''
    assert containerd.file_version(half) is None
    assert containerd.file_version('') is None
    assert containerd.file_version('version = "2"') is None


# ---- does the runtime that runs the GPU pods read CDI specs (reads_cdi) ----

@pytest.mark.parametrize('version,config,expect,says', [
    # Real containerd versions and their own default configs (tests/fixtures/containerd, SOURCE.md there).
    ('containerd-1.6.20-debian12.version.txt', 'containerd-1.6.20-debian12.config-default.toml', False,
     'containerd 1.6.20 reads no CDI specs'),
    ('containerd-1.7.24-debian13.version.txt', 'containerd-1.7.24-debian13.config-default.toml', False,
     'enable_cdi = true in its CRI plugin: false'),
    ('containerd-2.2.1-ubuntu2404.version.txt', 'containerd-2.2.1-ubuntu2404.config-default.toml', True,
     'containerd 2.2.1 reads CDI specs'),
])
def test_reads_cdi_on_real_containerd(version, config, expect, says):
    result = containerd.reads_cdi(fixture(version), fixture(config))
    assert result['reads_cdi'] is expect and says in result['reason'], result


def test_reads_cdi_of_containerd_17_with_enable_cdi_set():
    config = fixture('containerd-1.7.24-debian13.config-default.toml').replace('enable_cdi = false', 'enable_cdi = true')
    assert containerd.reads_cdi(fixture('containerd-1.7.24-debian13.version.txt'), config)['reads_cdi'] is True
    # RKE2's generated file of an RKE2 on containerd 1.7 sets no enable_cdi (the real v1.24.9 file has none): off.
    result = containerd.reads_cdi('containerd github.com/k3s-io/containerd v1.7.27-k3s1', rke2_fixture('config.toml.after'))
    assert result['reads_cdi'] is False and 'not set (off by default)' in result['reason'], result


def test_reads_cdi_of_containerd_2_switched_off_and_unknown_versions():
    config = fixture('containerd-2.2.1-ubuntu2404.config-default.toml').replace('enable_cdi = true', 'enable_cdi = false')
    off = containerd.reads_cdi(fixture('containerd-2.2.1-ubuntu2404.version.txt'), config)
    assert off['reads_cdi'] is False and 'sets enable_cdi = false' in off['reason']
    # No version: a config of version 3 or later is containerd 2 (RKE2 on containerd 2.3 writes version 4)...
    assert containerd.reads_cdi('', rke2_fixture('config-v4.toml.after'))['reads_cdi'] is True
    # ... but version 2 files are read by 1.x and 2.x alike: unknown, said so.
    unknown = containerd.reads_cdi('', rke2_fixture('config.toml.after'))
    assert unknown['reads_cdi'] is None and unknown['reason'].startswith('unknown')
