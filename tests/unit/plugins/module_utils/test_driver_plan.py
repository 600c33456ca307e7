# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""driver_plan: the nvidia_driver role's decisions, on the role's real OS data (roles/nvidia_driver/vars)
and node facts shaped like gpu_node_facts' (GPU device IDs from the real nvidia-smi captures:
H100 0x2330, Tesla V100 0x1db6 (pre-Turing), RTX PRO 6000 Blackwell 0x2bb5)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.baremetal.gpu.plugins.module_utils import driver_plan
from ansible_collections.baremetal.gpu.tests.unit.plugins.module_utils.role_os_data import os_data as role_os_data

TODAY = '2026-11-23'
H100 = {'address': '0000:00:06.0', 'device_id': '0x2330', 'name': 'H100 SXM5 80GB'}
V100 = {'address': '0000:3b:00.0', 'device_id': '0x1db6', 'name': 'Tesla V100-PCIE-32GB'}
BLACKWELL = {'address': '0000:01:00.0', 'device_id': '0x2bb5', 'name': 'RTX PRO 6000 Blackwell'}


def os_data(name):
    data = role_os_data(name)
    data['name'] = {'Ubuntu': 'Ubuntu 24.04', 'RedHat': 'Rocky 9'}.get(name, data['name'])
    return data


def settings(**over):
    base = {'branch': None, 'version': None, 'flavor': 'desktop', 'kernel_module': 'auto', 'module_build': 'auto',
            'source': 'distro', 'secure_boot': 'fail', 'allow_eol_branch': True}
    base.update(over)
    return base


def facts(gpus=(), kernels=('6.8.0-149-generic',), secure_boot='unknown', container=True):
    return {'gpus': list(gpus), 'installed_kernels': list(kernels), 'kernel_running': '6.18.44-fc-v669',
            'container': container, 'secure_boot': secure_boot, 'secure_boot_detail': 'test'}


def apt_answer(known=(), installed=()):
    packages = dict((name, {'installed': None, 'candidate': '1', 'versions': ['1']}) for name in known)
    for name in installed:
        packages[name] = {'installed': '1', 'candidate': '1', 'versions': ['1']}
    return {'packages': packages}


# ---- branch and its support ------------------------------------------------------------------------

def test_debian12_default_branch_is_past_its_end_of_life_and_warns():
    plan = driver_plan.plan(settings(), os_data('Debian-12'), facts(kernels=['6.1.0-50-amd64']), today=TODAY)
    assert plan['branch'] == '535' and plan['branch_defaulted'] is True
    assert plan['branch_status']['status'] == 'eol'
    assert plan['branch_warning'].startswith('END OF LIFE: driver branch R535 (Long Term Support Branch) reached')
    assert "NVIDIA's CUDA repository" in plan['branch_warning'] and 'nvidia_driver_source: cuda_repo' in plan['branch_warning']
    assert plan['errors'] == []


# Ubuntu 26.04's real apt-cache depends of every nvidia-driver-* (tests/fixtures/apt, 2026-11-30): 580, 595 and 615
# are real packages, the other numbers transitional; RETIRED is the same with 580 made a transitional package for 595,
# as the archive does to a retired branch.
DEPENDS_2604 = open(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'apt',
                                 'ubuntu2604-depends-nvidia-driver.txt')).read()
RETIRED = re.sub(r'(?m)^nvidia-driver-580$', 'nvidia-driver-580\n  Depends: nvidia-driver-595', DEPENDS_2604)


def test_ubuntu_default_branch_comes_from_the_archive():
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), facts(), dict(apt_answer(), branch_depends=DEPENDS_2604),
                            today='2026-11-30')
    assert plan['branch'] == '580' and plan['branch_source'] == 'default'
    assert plan['default_branch'] == {'guess': '580', 'branch': '580', 'real': ['580', '595', '615'],
                                      'reason': plan['default_branch']['reason'], 'ask': 'nvidia-driver-'}
    assert plan['branch_reason'].startswith('580, the newest NVIDIA Long Term Support Branch that the archive ships '
                                            '(real packages: 580, 595, 615;')
    # An archive that retired 580: the branch it ships, and the packages apt must be asked about are that branch's.
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), facts(), dict(apt_answer(), branch_depends=RETIRED),
                            today='2026-11-30')
    assert plan['branch'] == '595' and plan['default_branch']['guess'] == '580'
    assert 'no Long Term Support Branch is a real package here' in plan['branch_reason']
    assert 'nvidia-headless-no-dkms-595-open' in plan['query_packages']
    assert not [p for p in plan['query_packages'] if '580' in p]


def test_the_archive_default_never_overrides_the_inventory_or_the_installed_branch():
    apt = dict(apt_answer(), branch_depends=RETIRED)
    plan = driver_plan.plan(settings(branch='580'), os_data('Ubuntu'), facts(), apt, today='2026-11-30')
    assert plan['branch'] == '580' and plan['branch_source'] == 'inventory'
    # ... and apt is not asked for the dependencies then.
    assert plan['default_branch']['ask'] == ''
    installed = dict(facts(), driver_installed_branches=['580'])
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), installed, apt, today='2026-11-30')
    assert plan['branch'] == '580' and plan['branch_source'] == 'installed'
    assert plan['default_branch']['ask'] == ''
    # Without the archive's answer (the first decision, or Debian, whose packages carry no branch): the OS data's.
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), facts(), today='2026-11-30')
    assert plan['branch'] == '580' and plan['default_branch'] == {'guess': '580', 'ask': 'nvidia-driver-'}
    plan = driver_plan.plan(settings(), os_data('Debian-12'), facts(kernels=['6.1.0-50-amd64']),
                            dict(apt_answer(), branch_depends=RETIRED), today='2026-11-30')
    assert plan['branch'] == '535' and plan['default_branch'] == {'guess': '535', 'ask': ''}
    # NVIDIA's CUDA repository has branches of its own: Ubuntu's archive does not choose for it.
    plan = driver_plan.plan(settings(source='cuda_repo'), os_data('Ubuntu'), facts(), apt, today='2026-11-30')
    assert plan['branch'] == '580' and plan['default_branch'] == {'guess': '580', 'ask': ''}


def test_eol_branch_refused_when_not_allowed():
    plan = driver_plan.plan(settings(allow_eol_branch=False), os_data('Debian-12'), facts(kernels=['6.1.0-50-amd64']),
                            today=TODAY)
    assert plan['ok'] is False
    assert plan['errors'][0].startswith('nvidia_driver_allow_eol_branch is false and driver branch R535')
    assert 'Nothing was changed' in plan['errors'][0]


def test_debian13_branch_550_is_unlisted():
    plan = driver_plan.plan(settings(), os_data('Debian-13'), facts(kernels=['6.12.107+deb13-amd64']), today=TODAY)
    assert plan['branch'] == '550' and plan['branch_status']['status'] == 'unlisted'
    assert plan['branch_warning'].startswith("NOT SUPPORTED BY NVIDIA: driver branch R550 is not in NVIDIA's support table")
    # auto on 550 (< 560): proprietary; DKMS (Debian has no prebuilt modules).
    assert plan['kernel_module']['flavour'] == 'proprietary'
    assert plan['module_build']['build'] == 'dkms' and plan['module_build']['reason'].startswith('auto: DKMS')
    assert plan['packages'] == ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi', 'firmware-misc-nonfree']
    assert plan['headers'] == ['linux-headers-6.12.107+deb13-amd64']
    assert plan['dkms_module'] == 'nvidia-current' and plan['kmod'] == 'nvidia-current'
    assert 'firmware-misc-nonfree' not in plan['hold']


def test_bad_branch_format():
    plan = driver_plan.plan(settings(branch='58'), os_data('Ubuntu'), facts(), today=TODAY)
    assert any('nvidia_driver_branch must be a three-digit' in e for e in plan['errors'])


# ---- kernel modules --------------------------------------------------------------------------------

def test_open_on_a_pre_turing_gpu_is_refused_naming_the_gpu_and_the_rule():
    plan = driver_plan.plan(settings(kernel_module='open'), os_data('Ubuntu'), facts([V100]), today=TODAY)
    error = ' '.join(plan['errors'])
    assert 'nvidia_driver_kernel_module is open' in error and '0000:3b:00.0' in error and '0x1db6' in error
    assert 'Compatible GPUs' in error


def test_proprietary_on_blackwell_is_refused():
    plan = driver_plan.plan(settings(kernel_module='proprietary'), os_data('Ubuntu'), facts([BLACKWELL]), today=TODAY)
    error = ' '.join(plan['errors'])
    assert 'nvidia_driver_kernel_module is proprietary' in error and '0x2bb5' in error


def test_auto_picks_open_on_hopper_and_proprietary_on_volta():
    assert driver_plan.plan(settings(), os_data('Ubuntu'), facts([H100]), today=TODAY)['kernel_module']['flavour'] == 'open'
    assert driver_plan.plan(settings(), os_data('Ubuntu'), facts([V100]), today=TODAY)['kernel_module']['flavour'] == 'proprietary'


# ---- module build ----------------------------------------------------------------------------------

def test_prebuilt_undecided_until_apt_answers_then_prebuilt_when_every_kernel_has_one():
    data = os_data('Ubuntu')
    first = driver_plan.plan(settings(), data, facts(), today=TODAY)
    assert first['module_build']['build'] is None and first['ok'] is True
    assert first['prebuilt_candidates'] == ['linux-modules-nvidia-580-open-6.8.0-149-generic']
    assert 'linux-modules-nvidia-580-6.8.0-149-generic' in first['query_packages']
    plan = driver_plan.plan(settings(), data, facts(), apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic']),
                            today=TODAY)
    assert plan['module_build']['build'] == 'prebuilt'
    assert plan['module_build']['reason'].startswith("auto: prebuilt, because Canonical's signed prebuilt modules")
    assert plan['packages'][:2] == ['nvidia-headless-no-dkms-580-open', 'nvidia-utils-580']
    assert plan['kernel_packages'] == ['linux-modules-nvidia-580-open-6.8.0-149-generic']
    assert plan['headers'] == [] and plan['dkms_module'] == ''
    assert not [p for p in plan['install'] if p.startswith('nvidia-dkms') or p == 'dkms']


def test_auto_falls_back_to_dkms_when_a_kernel_lacks_a_prebuilt_package_and_says_which():
    kernels = ['6.8.0-149-generic', '6.8.0-999-generic']
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), facts(kernels=kernels),
                            apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic']), today=TODAY)
    assert plan['module_build']['build'] == 'dkms'
    assert 'kernel 6.8.0-999-generic (linux-modules-nvidia-580-open-6.8.0-999-generic)' in plan['module_build']['reason']
    assert plan['headers'] == ['linux-headers-6.8.0-149-generic', 'linux-headers-6.8.0-999-generic']
    assert plan['packages'] == ['nvidia-driver-580-open', 'nvidia-dkms-580-open']


def test_prebuilt_for_a_kernel_without_a_package_is_refused_naming_kernel_and_package():
    plan = driver_plan.plan(settings(module_build='prebuilt'), os_data('Ubuntu'),
                            facts(kernels=['6.8.0-149-generic', '6.8.0-999-generic']),
                            apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic']), today=TODAY)
    assert plan['ok'] is False
    assert 'kernel 6.8.0-999-generic (linux-modules-nvidia-580-open-6.8.0-999-generic)' in plan['errors'][0]
    assert plan['errors'][0].startswith('nvidia_driver_module_build is prebuilt')


# The archive's answer for the module package of noble's newest kernel on 2026-11-25 (listed, file 404):
# tests/fixtures/apt/ubuntu2404-download-404-6.8.0-151.txt, read by apt.fetch_error.
UNFETCHABLE = {'linux-modules-nvidia-580-open-6.8.0-151-generic':
               '404 Not Found (http://archive.ubuntu.com/ubuntu/pool/restricted/l/linux-restricted-signatures/'
               'linux-modules-nvidia-580-open-6.8.0-151-generic_6.8.0-151.151_amd64.deb)'}


def _listed_but_404():
    kernels = ['6.8.0-149-generic', '6.8.0-151-generic']
    apt = apt_answer(['linux-modules-nvidia-580-open-%s' % k for k in kernels])
    apt['fetch_errors'] = dict(UNFETCHABLE)
    return kernels, apt


def test_auto_falls_back_to_dkms_when_a_listed_prebuilt_package_cannot_be_downloaded_and_says_why():
    kernels, apt = _listed_but_404()
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), facts(kernels=kernels), apt, today=TODAY)
    assert plan['module_build']['build'] == 'dkms'
    assert ('kernel 6.8.0-151-generic (linux-modules-nvidia-580-open-6.8.0-151-generic: listed, but its file cannot be '
            'downloaded: 404 Not Found (http://archive.ubuntu.com/') in plan['module_build']['reason']
    assert '6.8.0-149' not in plan['module_build']['reason']
    assert [m['kernel'] for m in plan['module_build']['missing']] == ['6.8.0-151-generic']
    # Without the download's answer the same index would have said prebuilt (the failure seen before item 5).
    del apt['fetch_errors']
    assert driver_plan.plan(settings(), os_data('Ubuntu'), facts(kernels=kernels), apt,
                            today=TODAY)['module_build']['build'] == 'prebuilt'


def test_prebuilt_with_a_listed_package_that_cannot_be_downloaded_is_refused_naming_it_and_the_http_error():
    kernels, apt = _listed_but_404()
    plan = driver_plan.plan(settings(module_build='prebuilt'), os_data('Ubuntu'), facts(kernels=kernels), apt,
                            today=TODAY)
    assert plan['ok'] is False and plan['module_build']['build'] is None
    assert plan['errors'][0].startswith('nvidia_driver_module_build is prebuilt')
    assert 'linux-modules-nvidia-580-open-6.8.0-151-generic: listed, but its file cannot be downloaded: 404 Not Found' \
        in plan['errors'][0]
    assert 'Nothing was changed' in plan['errors'][0]


@pytest.mark.parametrize('name', ['Debian-12', 'Debian-13', 'RedHat'])
def test_prebuilt_outside_ubuntu_is_refused(name):
    plan = driver_plan.plan(settings(module_build='prebuilt', source='cuda_repo' if name == 'RedHat' else 'distro'),
                            os_data(name), facts(kernels=['k1']), today=TODAY)
    assert any(e.startswith("nvidia_driver_module_build is prebuilt, but prebuilt NVIDIA modules exist only in Ubuntu's")
               for e in plan['errors']), plan['errors']


def test_prebuilt_with_the_cuda_repository_is_refused():
    plan = driver_plan.plan(settings(module_build='prebuilt', source='cuda_repo'), os_data('Ubuntu'), facts(),
                            today=TODAY)
    assert any('nvidia_driver_source cuda_repo' in e for e in plan['errors'])


def test_secure_boot_on_passes_with_prebuilt_and_needs_sign_with_dkms():
    apt = apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic'])
    prebuilt = driver_plan.plan(settings(), os_data('Ubuntu'), facts(secure_boot='enabled'), apt, today=TODAY)
    assert prebuilt['ok'] is True and prebuilt['module_build']['build'] == 'prebuilt'
    assert prebuilt['secure_boot']['sign'] is False
    dkms = driver_plan.plan(settings(module_build='dkms'), os_data('Ubuntu'), facts(secure_boot='enabled'), apt,
                            today=TODAY)
    assert dkms['ok'] is False and dkms['errors'][0].startswith('Secure Boot is enabled')
    assert 'nvidia_driver_secure_boot: sign' in dkms['errors'][0]
    signed = driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                              facts(secure_boot='enabled'), apt_answer(['mokutil', 'openssl']), today=TODAY)
    assert signed['ok'] is True and signed['secure_boot']['sign'] is True
    assert {'mokutil', 'openssl'} <= set(signed['query_packages'])


def test_sign_without_the_signing_tools_in_the_sources_is_refused_before_any_change():
    # apt knows openssl (installed) but has no candidate for mokutil: nothing could sign the DKMS build.
    apt = apt_answer(['openssl'], installed=['openssl'])
    plan = driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                            facts(secure_boot='enabled'), apt, today=TODAY)
    assert plan['ok'] is False
    assert plan['errors'] == [
        'nvidia_driver_secure_boot is sign, but apt cannot install mokutil on this node (no candidate in its sources): '
        'the module could not be signed. Nothing was changed. Enable the component that carries it, or set '
        'nvidia_driver_secure_boot: ignore if you sign modules yourself, or use Canonical\'s signed prebuilt modules '
        '(nvidia_driver_module_build: prebuilt)']
    # A private probe of the components still to be added (a first run: molecule/nvidia_driver's check step found
    # this) sees no main component: no answer about the tools, nothing refused.
    probe = dict(apt, package_source='private')
    assert driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                            facts(secure_boot='enabled'), probe, today=TODAY)['ok'] is True
    # ... but apt_sources_info's node_packages (the node's own lists, asked beside the probe) answer for them: no
    # mokutil there (the module lists every name asked, an unknown one with neither version) refuses before any change.
    unknown = {'installed': None, 'candidate': None, 'versions': []}
    node_lists = dict(probe, node_packages={'mokutil': unknown,
                                            'openssl': {'installed': '3.0.13-0ubuntu3.5', 'candidate': '3.0.13-0ubuntu3.5',
                                                        'versions': ['3.0.13-0ubuntu3.5']}})
    refused = driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                               facts(secure_boot='enabled'), node_lists, today=TODAY)
    assert refused['ok'] is False and refused['errors'] == plan['errors']
    # The probe knows mokutil when main is among the entries the role adds (a node whose sources lack main): the
    # role's own source brings it, nothing refused, though the node's own lists do not know it yet.
    main_added = dict(node_lists, packages=dict(node_lists['packages'], mokutil={
        'installed': None, 'candidate': '0.6.0-2build3', 'versions': ['0.6.0-2build3']}))
    assert driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                            facts(secure_boot='enabled'), main_added, today=TODAY)['ok'] is True
    node_lists['node_packages']['mokutil'] = {'installed': None, 'candidate': '0.6.0-2build3', 'versions': ['0.6.0-2build3']}
    assert driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                            facts(secure_boot='enabled'), node_lists, today=TODAY)['ok'] is True
    # Prebuilt modules need no signing tools; without apt's answer (the first plan) nothing is refused yet.
    assert driver_plan.plan(settings(secure_boot='sign'), os_data('Ubuntu'), facts(secure_boot='enabled'),
                            apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic']), today=TODAY)['ok'] is True
    assert driver_plan.plan(settings(module_build='dkms', secure_boot='sign'), os_data('Ubuntu'),
                            facts(secure_boot='enabled'), None, today=TODAY)['ok'] is True


def test_secure_boot_unknown_on_an_efi_machine_is_refused_with_dkms_and_fail():
    apt = apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic'])
    # Not a container, state unknown: gpu_node_facts found /sys/firmware/efi but could read neither the efivars nor
    # mokutil (node_facts.secure_boot); a machine without EFI reads not_uefi instead.
    efi = facts(secure_boot='unknown', container=False)
    efi['secure_boot_detail'] = 'EFI present, SecureBoot variable unreadable'
    efi['kernel_running'] = '6.8.0-149-generic'
    dkms = driver_plan.plan(settings(module_build='dkms'), os_data('Ubuntu'), efi, apt, today=TODAY)
    assert dkms['ok'] is False
    assert dkms['errors'][0].startswith('Secure Boot state unknown on an EFI machine (EFI present, SecureBoot variable '
                                        'unreadable)')
    assert 'nvidia_driver_secure_boot: sign' in dkms['errors'][0] and 'nvidia_driver_module_build: prebuilt' in dkms['errors'][0]
    # sign, ignore, prebuilt modules, a legacy BIOS machine and a container (the state is hidden there) pass.
    tools = apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic', 'mokutil', 'openssl'])
    for mode in ('sign', 'ignore'):
        assert driver_plan.plan(settings(module_build='dkms', secure_boot=mode), os_data('Ubuntu'), efi, tools,
                                today=TODAY)['ok'] is True, mode
    assert driver_plan.plan(settings(), os_data('Ubuntu'), efi, apt, today=TODAY)['ok'] is True
    bios = dict(efi, secure_boot='not_uefi')
    assert driver_plan.plan(settings(module_build='dkms'), os_data('Ubuntu'), bios, apt, today=TODAY)['ok'] is True
    assert driver_plan.plan(settings(module_build='dkms'), os_data('Ubuntu'), facts(), apt, today=TODAY)['ok'] is True


def test_unsupported_source():
    plan = driver_plan.plan(settings(), os_data('RedHat'), facts(kernels=['5.14.0']), today=TODAY)
    assert any(e.startswith('nvidia_driver_source "distro" is not supported on Rocky 9') for e in plan['errors'])


def test_no_kernel_at_all():
    plan = driver_plan.plan(settings(), os_data('Debian-12'), facts(kernels=[]), today=TODAY)
    assert any('no installed kernel' in e and 'container host' in e for e in plan['errors'])


# ---- switching flavour: what to remove -------------------------------------------------------------

def test_switch_prebuilt_proprietary_to_open_removes_the_proprietary_packages_that_are_installed():
    installed = ['nvidia-headless-no-dkms-580', 'nvidia-utils-580', 'linux-modules-nvidia-580-6.8.0-149-generic',
                 'linux-objects-nvidia-580-6.8.0-149-generic', 'linux-signatures-nvidia-6.8.0-149-generic']
    apt = apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic'], installed)
    plan = driver_plan.plan(settings(kernel_module='open', flavor='headless'), os_data('Ubuntu'), facts(), apt,
                            today=TODAY)
    # The packages carrying the other modules; apt removes nvidia-headless-no-dkms-580 itself (its
    # nvidia-kernel-source-580 conflicts with the open one).
    assert plan['remove'] == ['linux-modules-nvidia-580-6.8.0-149-generic', 'linux-objects-nvidia-580-6.8.0-149-generic',
                              'linux-signatures-nvidia-6.8.0-149-generic']
    back = driver_plan.plan(settings(kernel_module='proprietary', flavor='headless'), os_data('Ubuntu'), facts(),
                            apt_answer(['linux-modules-nvidia-580-6.8.0-149-generic'],
                                       ['nvidia-headless-no-dkms-580-open', 'nvidia-utils-580',
                                        'linux-modules-nvidia-580-open-6.8.0-149-generic']), today=TODAY)
    assert back['remove'] == ['linux-modules-nvidia-580-open-6.8.0-149-generic']
    assert back['hold'] == ['nvidia-headless-no-dkms-580', 'nvidia-utils-580', 'linux-modules-nvidia-580-6.8.0-149-generic']


def test_a_converged_dkms_node_removes_nothing_shared():
    # Regression: the libraries nvidia-driver-580 pulls (also named by the prebuilt desktop list) and
    # nvidia-utils-580 are installed on a converged DKMS node; none of them may be removed.
    installed = ['nvidia-driver-580', 'nvidia-dkms-580', 'nvidia-utils-580', 'libnvidia-gl-580', 'libnvidia-extra-580',
                 'libnvidia-decode-580', 'libnvidia-encode-580', 'libnvidia-fbc1-580', 'xserver-xorg-video-nvidia-580',
                 'nvidia-kernel-common-580']
    plan = driver_plan.plan(settings(kernel_module='proprietary'), os_data('Ubuntu'), facts(kernels=['5.15.0-25-generic']),
                            apt_answer([], installed), today=TODAY)
    assert plan['module_build']['build'] == 'dkms' and plan['remove'] == []
    debian = driver_plan.plan(settings(), os_data('Debian-13'), facts(kernels=['6.12.107+deb13-amd64']),
                              apt_answer([], ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi']), today=TODAY)
    assert debian['remove'] == []
    to_open = driver_plan.plan(settings(kernel_module='open'), os_data('Debian-13'), facts(kernels=['6.12.107+deb13-amd64']),
                               apt_answer([], ['nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-smi']), today=TODAY)
    assert to_open['remove'] == ['nvidia-kernel-dkms']


def test_switch_dkms_to_prebuilt_removes_the_dkms_package():
    plan = driver_plan.plan(settings(), os_data('Ubuntu'), facts(),
                            apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic'],
                                       ['nvidia-driver-580-open', 'nvidia-dkms-580-open', 'libnvidia-gl-580']), today=TODAY)
    assert plan['module_build']['build'] == 'prebuilt' and plan['remove'] == ['nvidia-dkms-580-open']


def test_a_branch_change_removes_the_old_branchs_module_package():
    node = facts()
    node['driver_packages'] = ['linux-modules-nvidia-580-open-6.8.0-149-generic 6.8.0-149.149',
                               'nvidia-utils-580 580.178.04-0ubuntu0.24.04.1', 'nvidia-dkms-570 570.1-0']
    plan = driver_plan.plan(settings(branch='595'), os_data('Ubuntu'), node,
                            apt_answer(['linux-modules-nvidia-595-open-6.8.0-149-generic']), today=TODAY)
    assert plan['module_build']['build'] == 'prebuilt'
    assert plan['remove'] == ['linux-modules-nvidia-580-open-6.8.0-149-generic', 'nvidia-dkms-570', 'nvidia-utils-580']
    same = driver_plan.plan(settings(), os_data('Ubuntu'), node,
                            apt_answer(['linux-modules-nvidia-580-open-6.8.0-149-generic']), today=TODAY)
    assert same['remove'] == ['nvidia-dkms-570']


def test_a_branch_change_removes_the_old_branchs_held_module_package():
    # The role holds the module packages; dpkg then says "hi", and driver_packages (status "ii") leaves them
    # out. driver_stack_packages lists them, so the held 580 module package goes too.
    node = facts()
    node['driver_packages'] = ['nvidia-kernel-common-580 580.178.04-0ubuntu0.24.04.1']
    node['driver_stack_packages'] = ['linux-modules-nvidia-580-open-6.8.0-149-generic', 'nvidia-kernel-common-580',
                                     'nvidia-headless-no-dkms-580-open', 'nvidia-utils-580']
    plan = driver_plan.plan(settings(branch='595'), os_data('Ubuntu'), node,
                            apt_answer(['linux-modules-nvidia-595-open-6.8.0-149-generic']), today=TODAY)
    assert plan['remove'] == ['linux-modules-nvidia-580-open-6.8.0-149-generic', 'nvidia-headless-no-dkms-580-open',
                              'nvidia-kernel-common-580', 'nvidia-utils-580']
    assert not [p for p in plan['install'] if '580' in p]


def test_version_pin_is_a_glob_on_the_versioned_packages():
    plan = driver_plan.plan(settings(version='580.178.04', module_build='dkms'), os_data('Ubuntu'), facts(), apt_answer(),
                            today=TODAY)
    assert plan['install'] == ['linux-headers-6.8.0-149-generic', 'nvidia-driver-580-open=580.178.04*',
                               'nvidia-dkms-580-open=580.178.04*']


def test_cuda_repo_on_debian_uses_nvidias_package_names():
    plan = driver_plan.plan(settings(source='cuda_repo', branch='580', kernel_module='open'), os_data('Debian-13'),
                            facts(kernels=['6.12.107+deb13-amd64']), today=TODAY)
    assert plan['packages'] == ['cuda-drivers-580', 'nvidia-kernel-open-dkms']
    assert plan['branch_warning'] == '' and plan['ok'] is True


def test_redhat_streams():
    plan = driver_plan.plan(settings(source='cuda_repo', kernel_module='open'), os_data('RedHat'),
                            facts(kernels=['5.14.0-427.el9.x86_64']), today=TODAY)
    assert plan['dnf_module'] == 'nvidia-driver:580-open'
    assert plan['headers'] == ['kernel-devel-5.14.0-427.el9.x86_64']


# ---- reboot loop -----------------------------------------------------------------------------------

def test_reboot_decision():
    reasons = ['an NVIDIA GPU is present but no nvidia module is loaded']
    assert driver_plan.reboot_decision([], None, 'b')['action'] == 'none'
    assert driver_plan.reboot_decision(reasons, None, 'b')['action'] == 'reboot'
    # Recorded in this very boot (the reboot has not happened yet): reboot.
    assert driver_plan.reboot_decision(reasons, {'boot_id': 'b', 'reasons': reasons}, 'b')['action'] == 'reboot'
    # Rebooted since, and the same reason is back: refuse, naming it.
    again = driver_plan.reboot_decision(reasons, {'boot_id': 'a', 'reasons': reasons, 'time': 'T'}, 'b')
    assert again['action'] == 'fail' and again['repeated'] == reasons
    assert 'after that reboot the same still holds: an NVIDIA GPU is present' in again['message']
    # A version mismatch is one reason whatever the versions: its prefix is compared.
    mismatch = ['the loaded nvidia module is not the installed driver (loaded 580.1, installed 580.2)']
    before = {'boot_id': 'a', 'reasons': ['the loaded nvidia module is not the installed driver (loaded 570, installed 580.2)']}
    assert driver_plan.reboot_decision(mismatch, before, 'b')['action'] == 'fail'
    # A new install is a reason of its own: a reboot for it is fine after an earlier one.
    assert driver_plan.reboot_decision(['a new driver module was installed'], before, 'b')['action'] == 'reboot'


# ---- the module check after the install -------------------------------------------------------------

def test_check_modules():
    plan = {'kmod': 'nvidia', 'branch': '580', 'kernel_module': {'flavour': 'open'}}
    open_info = 'filename: /lib/modules/k/kernel/nvidia-580-open/nvidia.ko\nversion: 580.178.04\nlicense: Dual MIT/GPL\n'
    ok = driver_plan.check_modules([{'item': 'k', 'rc': 0, 'stdout': open_info, 'stderr': ''}], plan)
    assert ok['problems'] == [] and ok['versions'] == ['580.178.04'] and ok['modules']['k']['flavour'] == 'open'
    wrong = driver_plan.check_modules([{'item': 'k', 'rc': 0, 'stdout': open_info.replace('Dual MIT/GPL', 'NVIDIA'),
                                        'stderr': ''}], plan)
    assert wrong['problems'] == ['kernel k: /lib/modules/k/kernel/nvidia-580-open/nvidia.ko has license "NVIDIA", '
                                 'the proprietary flavour, not open']
    missing = driver_plan.check_modules([{'item': 'k2', 'rc': 1, 'stdout': '',
                                          'stderr': 'modinfo: ERROR: Module nvidia not found.'}], plan)
    assert missing['problems'] == ['kernel k2 has no nvidia module (modinfo: ERROR: Module nvidia not found.)']
    pinned = driver_plan.check_modules([{'item': 'k', 'rc': 0, 'stdout': open_info, 'stderr': ''}], plan, '580.105')
    assert 'not the pinned nvidia_driver_version 580.105' in pinned['problems'][0]
    other_branch = driver_plan.check_modules([{'item': 'k', 'rc': 0, 'stdout': open_info.replace('580.178', '570.195'),
                                               'stderr': ''}], plan)
    assert 'not branch 580' in other_branch['problems'][0]


# ---- reboots that converge: two and three driver changes on one node ----------------

def _change(state, boot, loaded, installed):
    """One driver change as nvidia_driver's reboot.yml runs it: the reasons, the decision, the record written
    before the reboot, the reboot (a new boot id), and what happens to the record after it."""
    reasons = [driver_plan.NEW_MODULE_REASON] + driver_plan.persistent_reasons(
        {'gpus': [H100], 'nvidia_loaded_version': loaded, 'driver_installed_versions': [installed], 'container': False})
    decision = driver_plan.reboot_decision(reasons, state, boot)
    if decision['action'] != 'reboot':
        return decision, state, boot
    state = {'boot_id': boot, 'reasons': reasons, 'time': 'T'}
    boot = boot + '+1'
    after = driver_plan.reboot_record_after(driver_plan.persistent_reasons(
        {'gpus': [H100], 'nvidia_loaded_version': installed, 'driver_installed_versions': [installed],
         'container': False}))
    return decision, (None if after['action'] == 'clear' else state), boot


def test_three_consecutive_driver_changes_each_reboot_once():
    state, boot = None, 'boot-0'
    for loaded, installed in (('570.211.01', '580.178.04'), ('580.178.04', '595.45.04'), ('595.45.04', '600.1.2')):
        decision, state, boot = _change(state, boot, loaded, installed)
        assert decision['action'] == 'reboot', decision
        assert state is None


def test_a_stale_record_of_an_earlier_change_is_no_loop():
    # The record of the first change stayed (today's main never cleared it on the upgrade path); the second change
    # installs a new module: that is a new reason to reboot, not the same one again.
    stale = {'boot_id': 'boot-0', 'time': 'T',
             'reasons': [driver_plan.NEW_MODULE_REASON,
                         'the loaded nvidia module is not the installed driver (loaded 570.211.01, installed 580.178.04)']}
    reasons = [driver_plan.NEW_MODULE_REASON,
               'the loaded nvidia module is not the installed driver (loaded 580.178.04, installed 595.45.04)']
    assert driver_plan.reboot_decision(reasons, stale, 'boot-1')['action'] == 'reboot'
    # Without a new module the same reason after a reboot is still a loop.
    assert driver_plan.reboot_decision(reasons[1:], stale, 'boot-1')['action'] == 'fail'


def test_the_record_is_kept_when_the_reboot_did_not_help():
    after = driver_plan.reboot_record_after(['an NVIDIA GPU is present but no nvidia module is loaded'])
    assert after['action'] == 'keep' and 'still holds' in after['message']
    assert driver_plan.reboot_record_after([])['action'] == 'clear'
