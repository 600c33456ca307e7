# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvidia_driver role will do on one node, decided once, before anything changes.

``plan()`` takes the role's settings (its public variables), the OS data of roles/nvidia_driver/vars
(package name templates and the like), the node facts of baremetal.gpu.gpu_node_facts and, once
known, what apt knows about the packages (baremetal.gpu.apt_sources_info). It returns the branch and
its place in NVIDIA's support table, the kernel module flavour (open or proprietary) and the module
build (DKMS or Canonical's prebuilt modules) with the reason for each, the packages to install, hold
and remove, and every refusal (each names the variable to change). The preflight role calls the same
function, so the readiness report says what the driver role will decide.

Pure functions; unit tests in tests/unit/plugins/module_utils/test_driver_plan.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.baremetal.gpu.plugins.module_utils import apt as aptlib
from ansible_collections.baremetal.gpu.plugins.module_utils import dkms as dkmslib
from ansible_collections.baremetal.gpu.plugins.module_utils import desired_state
from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_reasons import package_branch
from ansible_collections.baremetal.gpu.plugins.module_utils.maintenance_reasons import persistent_reasons as node_reasons
from ansible_collections.baremetal.gpu.plugins.module_utils import support

FLAVOURS = ('open', 'proprietary')
FLAVORS = ('desktop', 'server', 'headless')
BUILDS = ('dkms', 'prebuilt')
KERNEL_MODULE_CHOICES = ('auto', 'open', 'proprietary')
MODULE_BUILD_CHOICES = ('auto', 'dkms', 'prebuilt')
# Reboot reasons that a reboot is expected to clear; seen again after a reboot, they will not clear.
PERSISTENT_REASONS = ('nouveau is loaded', 'an NVIDIA GPU is present but no nvidia module is loaded',
                      'the loaded nvidia module is not the installed driver')


def _fmt(template, **values):
    return template.format(**values)


def _fill(templates, kernels, values):
    out = []
    for template in templates or []:
        if '{kernel}' in template:
            out.extend(_fmt(template, kernel=k, **values) for k in kernels)
        else:
            out.append(_fmt(template, **values))
    return out


def _by_flavour(table, flavour):
    table = table or {}
    return table.get(flavour) or table.get('any') or {}


def _names(os_data, flavour, build, flavor, branch, kernels):
    """(packages, kernel packages, leftovers, module packages) of one combination, templates filled in.

    module packages: those that carry the kernel module of this flavour and build (os_data module_packages);
    leftovers: what they pull in and leave behind when removed (os_data leftovers).
    """
    values = {'branch': branch, 'open': '-open' if flavour == 'open' else '',
              'server': '-server' if flavor == 'server' else ''}
    main = _fill((_by_flavour(os_data.get('packages'), flavour).get(build) or {}).get(flavor), kernels, values)
    per_kernel = _fill((os_data.get('kernel_packages') or {}).get(build), kernels, values)
    leftovers = _fill(((os_data.get('leftovers') or {}).get(flavour) or {}).get(build), kernels, values)
    module = _fill(_by_flavour(os_data.get('module_packages'), flavour).get(build), kernels, values)
    return main, per_kernel, leftovers, module


def target_kernels(facts):
    """The kernels modules must exist for: every installed kernel, and the running one unless it is
    the container host's (test nodes, image builds)."""
    kernels = set(facts.get('installed_kernels') or [])
    if not facts.get('container') and facts.get('kernel_running'):
        kernels.add(facts['kernel_running'])
    return sorted(kernels)


def _known(apt, name):
    info = ((apt or {}).get('packages') or {}).get(name)
    return bool(info and (info.get('candidate') or info.get('installed')))


def _installed(apt, name):
    info = ((apt or {}).get('packages') or {}).get(name)
    return (info or {}).get('installed')


def branch_section(settings, os_data, today=None):
    branch = str(settings.get('branch') or os_data['default_branch'])
    status = support.driver_branch_status(branch, today)
    out = {'branch': branch, 'branch_defaulted': not settings.get('branch'), 'branch_status': status,
           'branch_warning': '', 'errors': []}
    if not status['supported']:
        advice = os_data.get('eol_advice') or ''
        where = (' (the default branch of this OS; nvidia_driver_branch is not set)' if out['branch_defaulted']
                 else ' (nvidia_driver_branch)')
        label = 'END OF LIFE' if status['status'] == 'eol' else 'NOT SUPPORTED BY NVIDIA'
        out['branch_warning'] = ('%s: %s%s. %s' % (label, status['message'], where, advice)).strip()
        if not settings.get('allow_eol_branch', True):
            out['errors'].append('nvidia_driver_allow_eol_branch is false and %s%s. %s Nothing was changed.' % (
                status['message'], ' (the default branch of this OS)' if out['branch_defaulted'] else '',
                advice))
    return out


def archive_default(settings, os_data, apt, today=None):
    """The OS default branch chosen from the archive's own data (support.archive_default_branch), where the OS data
    says how (default_branch_archive: the metapackage template whose transitional versions tell a retired branch) and
    apt_sources_info read the dependencies (its branch_depends); None otherwise. The metapackage is named for the
    OS data's default_branch (the first guess the run asked apt about), the flavor and an explicit kernel module.
    Only for the OS's own archive (nvidia_driver_source distro): NVIDIA's CUDA repository has branches of its own."""
    spec = os_data.get('default_branch_archive') or {}
    text = (apt or {}).get('branch_depends') or ''
    if not spec.get('package') or not text or (settings.get('source') or 'distro') != 'distro':
        return None
    guess = str(os_data['default_branch'])
    package = _fmt(spec['package'], branch=guess, server='-server' if settings.get('flavor') == 'server' else '',
                   open='-open' if settings.get('kernel_module') == 'open' else '')
    return support.archive_default_branch(aptlib.real_branches(text, package, guess), today)


def plan(settings, os_data, facts, apt=None, today=None):
    """The plan for one node. See the module docstring; every key is documented in the filter's RETURN.

    settings: branch, version, flavor, kernel_module, module_build, source, secure_boot, allow_eol_branch.
    os_data: the role's vars/<os>.yml dictionary (__nvidia_driver_os).
    facts: ansible_facts['gpu_node'] (gpus, secure_boot, installed_kernels, kernel_running, container).
    apt: baremetal.gpu.apt_sources_info's result (packages: {name: {installed, candidate, versions}}), or None
         while it is not known yet.
    """
    source = settings.get('source') or 'distro'
    cuda_packages = (os_data.get('cuda_repo') or {}).get('packages')
    if source == 'cuda_repo' and cuda_packages:
        os_data = dict(os_data, packages=cuda_packages, kernel_packages={}, leftovers={},
                       module_packages=(os_data.get('cuda_repo') or {}).get('module_packages') or {})
    # An OS whose archive names its packages by branch: the default is what that archive really ships.
    os_data_guess = os_data['default_branch']
    from_archive = archive_default(settings, os_data, apt, today)
    if from_archive and from_archive['branch']:
        os_data = dict(os_data, default_branch=from_archive['branch'])
    # The inventory is the desired state: with no branch named, the installed branch is kept (desired_state).
    version_branch = str(settings.get('version') or '').split('.', 1)[0]
    wanted = desired_state.desired_branch(settings.get('branch') or version_branch or None,
                                          desired_state.installed_branches(facts), os_data['default_branch'],
                                          bool(settings.get('allow_downgrade', False)))
    out = branch_section(dict(settings, branch=None if wanted['source'] == 'default' else wanted['branch']),
                         os_data, today)
    # ask: the prefix of the packages whose dependencies apt_sources_info reads for the archive's choice (its
    # depends_prefix), only while the branch would be the OS's own archive's default; '' otherwise.
    ask = ((os_data.get('default_branch_archive') or {}).get('prefix') or ''
           if wanted['source'] == 'default' and source == 'distro' else '')
    out.update(branch_source=wanted['source'], branch_reason=wanted['message'], downgrade=wanted['downgrade'],
               default_branch=dict(from_archive or {}, guess=str(os_data_guess), ask=ask))
    if wanted['source'] == 'default' and from_archive and from_archive['branch']:
        out['branch_reason'] = '%s (nvidia_driver_branch is not set and no driver is installed)' % from_archive['reason']
    out['errors'].extend(wanted['errors'])
    errors = out['errors']
    branch = out['branch']
    flavor = settings.get('flavor') or 'desktop'
    if source not in (os_data.get('sources') or ['distro']):
        errors.append('nvidia_driver_source "%s" is not supported on %s: use %s' % (
            source, os_data.get('name', 'this OS'), ' or '.join('"%s"' % s for s in os_data.get('sources') or [])))
    kernels = target_kernels(facts)
    out['kernels'] = kernels
    out['flavor'] = flavor
    out['source'] = source

    # ---- kernel module flavour (the rule lives in support.kernel_module_flavour) ----
    requested = settings.get('kernel_module') or 'auto'
    if not re.match(r'^[0-9]{3}$', branch):
        errors.append('nvidia_driver_branch must be a three-digit driver branch such as "580"; got "%s"' % branch)
        km = {'flavour': None, 'reason': '', 'error': None, 'gpus': []}
    else:
        km = support.kernel_module_flavour(requested, branch, facts.get('gpus') or [])
    if km['error']:
        errors.append(km['error'])
    flavour = km['flavour']
    available = [f for f in FLAVOURS if (os_data.get('packages') or {}).get(f) or (os_data.get('packages') or {}).get('any')]
    if flavour and flavour not in available:
        errors.append('nvidia_driver_kernel_module resolves to %s, which %s does not package (%s only)'
                      % (flavour, os_data.get('name', 'this OS'), ', '.join(available)))
    out['kernel_module'] = {'requested': requested, 'flavour': flavour, 'reason': km['reason'] or km['error'] or '',
                            'gpus': km.get('gpus') or []}

    # ---- module build ----
    builds = list(os_data.get('module_builds') or ['dkms'])
    wanted = settings.get('module_build') or 'auto'
    prebuilt_possible = 'prebuilt' in builds and source == 'distro'
    prebuilt_names = {}
    if flavour and prebuilt_possible:
        for kernel in kernels:
            _main, per_kernel, _left, _module = _names(os_data, flavour, 'prebuilt', flavor, branch, [kernel])
            if per_kernel:
                prebuilt_names[kernel] = per_kernel[0]
    out['prebuilt_candidates'] = [prebuilt_names[k] for k in kernels if k in prebuilt_names]
    build, reason, missing = None, '', []
    if wanted == 'prebuilt' and 'prebuilt' not in builds:
        errors.append('nvidia_driver_module_build is prebuilt, but prebuilt NVIDIA modules exist only in Ubuntu\'s '
                      'archive (linux-modules-nvidia-*); %s builds the module with DKMS. Set '
                      'nvidia_driver_module_build to auto or dkms' % os_data.get('name', 'this OS'))
    elif wanted == 'prebuilt' and source != 'distro':
        errors.append('nvidia_driver_module_build is prebuilt, but Canonical\'s prebuilt modules match the user space '
                      'of Ubuntu\'s archive only, not that of nvidia_driver_source %s. Set nvidia_driver_module_build '
                      'to auto or dkms, or nvidia_driver_source to distro' % source)
    elif wanted == 'dkms':
        build, reason = 'dkms', 'DKMS, as asked (nvidia_driver_module_build=dkms)'
    elif not prebuilt_possible:
        build = 'dkms'
        if 'prebuilt' not in builds:
            why = 'prebuilt modules are Ubuntu\'s only (%s)' % os_data.get('name', 'this OS')
        else:
            why = 'nvidia_driver_source is %s' % source
        reason = 'auto: DKMS, because %s' % why
    elif not kernels:
        build = 'dkms' if wanted == 'auto' else None
        reason = 'no installed kernel to install modules for'
    elif apt is None or not flavour:
        reason = 'undecided until apt says which prebuilt module packages exist'
    else:
        # A package the index lists but whose file the archive does not serve (apt_sources_info's fetch) is as
        # good as absent: the install would fail after the simulation said yes.
        unfetchable = (apt or {}).get('fetch_errors') or {}
        missing = [{'kernel': k, 'package': prebuilt_names.get(k, ''),
                    'fetch_error': unfetchable.get(prebuilt_names.get(k, ''), '')} for k in kernels
                   if not _known(apt, prebuilt_names.get(k, '')) or prebuilt_names.get(k, '') in unfetchable]
        have = ', '.join(prebuilt_names[k] for k in kernels if k not in [m['kernel'] for m in missing])
        lacking = '; '.join('kernel %s (%s%s)' % (m['kernel'], m['package'], ': listed, but its file cannot be '
                                                  'downloaded: %s' % m['fetch_error'] if m['fetch_error'] else '')
                            for m in missing)
        if wanted == 'prebuilt':
            if missing:
                errors.append('nvidia_driver_module_build is prebuilt, but Ubuntu\'s archive has no prebuilt module '
                              'package for %s. Nothing was changed. Set nvidia_driver_module_build to auto or dkms '
                              '(DKMS builds for that kernel), or remove that kernel' % lacking)
            else:
                build, reason = 'prebuilt', 'prebuilt, as asked (nvidia_driver_module_build=prebuilt): %s' % have
        elif missing:
            build = 'dkms'
            reason = 'auto: DKMS, because Ubuntu\'s archive has no prebuilt module package for %s' % lacking
        else:
            build = 'prebuilt'
            reason = ('auto: prebuilt, because Canonical\'s signed prebuilt modules exist for every installed kernel '
                      '(%s)' % have)
    out['module_build'] = {'requested': wanted, 'build': build, 'reason': reason, 'missing': missing}

    # ---- Secure Boot ----
    secure_boot = facts.get('secure_boot') or 'unknown'
    mode = settings.get('secure_boot') or 'fail'
    out['secure_boot'] = {'state': secure_boot, 'mode': mode, 'sign': mode == 'sign' and build == 'dkms'}
    if secure_boot == 'unknown' and not facts.get('container') and mode == 'fail' and build == 'dkms':
        # Not a container and the state unread: the machine boots by EFI (gpu_node_facts says not_uefi otherwise)
        # and neither the efivars nor mokutil told whether Secure Boot is on.
        errors.append('Secure Boot state unknown on an EFI machine (%s), and the module would be built by DKMS, '
                      'unsigned: with Secure Boot on it would be refused at load. Nothing was changed. Set '
                      'nvidia_driver_secure_boot: sign (a MOK key is created and queued), or '
                      'nvidia_driver_secure_boot: ignore when you know Secure Boot is off or you sign modules '
                      'yourself%s'
                      % (facts.get('secure_boot_detail') or 'gpu_node_facts',
                         ', or use Canonical\'s signed prebuilt modules (nvidia_driver_module_build: prebuilt)'
                         if prebuilt_possible else ''))
    if secure_boot == 'enabled' and mode == 'fail' and build == 'dkms':
        errors.append('Secure Boot is enabled (%s) and the module would be built by DKMS, unsigned: it would be '
                      'refused at load. Nothing was changed. Set nvidia_driver_secure_boot: sign (a MOK key is '
                      'created and queued; confirm the enrollment at the console on the next boot)%s, or disable '
                      'Secure Boot, or set nvidia_driver_secure_boot: ignore if you sign modules yourself'
                      % (facts.get('secure_boot_detail') or 'gpu_node_facts',
                         ', or use Canonical\'s signed prebuilt modules (nvidia_driver_module_build: prebuilt)'
                         if prebuilt_possible else ''))

    # Signing needs mokutil and openssl from the node's sources (the role installs them): refused before any change
    # when no apt view knows a candidate or an installed version. A complete view is the node's own lists when the
    # driver's packages were answered from them (package_source "node"), or, on a first run, the private probe of the
    # entries the role adds (which sees main only when the role adds it) together with apt_sources_info's
    # node_packages (the node's own lists, answered only when they hold an index). Without a complete view nothing is
    # refused.
    sign_tools = [os_data.get('mokutil_package') or 'mokutil', 'openssl'] if mode == 'sign' else []
    views = []
    if apt is not None and (apt.get('package_source') or 'node') == 'node':
        views = [apt]
    elif apt is not None and isinstance(apt.get('node_packages'), dict) and all(
            t in apt['node_packages'] for t in sign_tools):
        views = [apt, {'packages': apt['node_packages']}]
    missing_tools = [t for t in sign_tools if views and not any(_known(v, t) for v in views)]
    if out['secure_boot']['sign'] and missing_tools:
        errors.append('nvidia_driver_secure_boot is sign, but apt cannot install %s on this node (no candidate in its '
                      'sources): the module could not be signed. Nothing was changed. Enable the component that carries '
                      'it, or set nvidia_driver_secure_boot: ignore if you sign modules yourself%s'
                      % (' and '.join(missing_tools),
                         ', or use Canonical\'s signed prebuilt modules (nvidia_driver_module_build: prebuilt)'
                         if prebuilt_possible else ''))

    # ---- packages ----
    out['packages'] = []
    out['kernel_packages'] = []
    out['headers'] = []
    out['hold'] = []
    out['remove'] = []
    out['pins'] = {}
    out['dkms_module'] = ''
    out['kmod'] = ''
    out['dnf_module'] = ''
    if flavour and build:
        main, per_kernel, leftovers, module = _names(os_data, flavour, build, flavor, branch, kernels)
        headers = [_fmt(t, kernel=k) for t in (os_data.get('headers') or []) for k in kernels] if build == 'dkms' else []
        not_held = os_data.get('not_held') or []
        # A switch to another flavour or build removes the packages that carry the other kernel modules (and
        # what they leave behind), in the same apt transaction; apt removes what depended on them. Packages
        # shared by every flavour (libraries, nvidia-utils) are never on this list.
        keep = set(main + per_kernel + leftovers + module)
        others = set()
        for other_flavour in FLAVOURS:
            for other_build in builds:
                for other_flavor in FLAVORS:
                    _m, _k, left, mod = _names(os_data, other_flavour, other_build, other_flavor, branch, kernels)
                    others.update(left + mod)
        removable = sorted(others - keep)
        out['packages'] = main
        out['kernel_packages'] = per_kernel
        out['headers'] = headers
        out['hold'] = [p for p in main + per_kernel if p not in not_held]
        # Installed packages that carry a kernel module of any other branch too (gpu_node_facts lists the
        # installed driver packages): a branch change must not leave the old module beside the new one.
        module_regex = re.compile(os_data.get('module_package_regex') or '^$')
        # driver_packages lists the unheld ones only (status "ii"); driver_stack_packages the held ones too
        # (the role holds the module packages, and a held old-branch module package must go as well).
        installed_drivers = sorted(set([p.split()[0].split(':')[0] for p in facts.get('driver_packages') or []]
                                       + list(facts.get('driver_stack_packages') or [])))
        removable = sorted(set(removable) | set(n for n in installed_drivers if module_regex.search(n) and n not in keep))
        # A branch change leaves nothing of the old branch: every installed package of the driver stack whose
        # name carries another branch (nvidia-utils-580, libnvidia-compute-580, nvidia-firmware-580-...) goes
        # in the same transaction, whether or not a Conflicts of the new branch would have removed it.
        removable = sorted(set(removable) | set(n for n in installed_drivers
                                                if package_branch(n) not in ('', branch) and n not in keep))
        out['remove'] = sorted(set([p for p in removable if _installed(apt, p)] if apt is not None else [])
                               | set(n for n in installed_drivers if n in removable))
        out['remove_candidates'] = removable
        out['dkms_module'] = ((os_data.get('dkms_module') or {}).get(flavour) or '') if build == 'dkms' else ''
        out['kmod'] = (os_data.get('kmod') or {}).get(flavour) or 'nvidia'
        if os_data.get('dnf_module'):
            out['dnf_module'] = _fmt(os_data['dnf_module'][flavour], branch=branch)
        pin = str(settings.get('version') or '')
        versioned = re.compile(os_data.get('versioned') or '^$')
        if pin:
            # apt-get and dnf take a glob: nvidia-dkms-580=580.178.04* selects 580.178.04-0ubuntu0.24.04.1.
            out['pins'] = dict((name, pin + '*') for name in main if versioned.search(name))
    out['install'] = ['%s=%s' % (p, out['pins'][p]) if p in out['pins'] else p
                      for p in out['headers'] + out['packages'] + out['kernel_packages']]
    universe = set(out['prebuilt_candidates'])
    for any_flavour in FLAVOURS:
        for any_build in builds:
            for any_flavor in FLAVORS:
                m, k, left, mod = _names(os_data, any_flavour, any_build, any_flavor, branch, kernels)
                universe.update(m + k + left + mod)
    out['query_packages'] = sorted(universe | set(sign_tools))
    if not kernels:
        errors.append('this node has no installed kernel (no /boot/vmlinuz-* with /lib/modules/<version>)%s: there '
                      'is nothing to build or install the module for. Install a kernel image (linux-image-*) first'
                      % (' and its running kernel belongs to the container host' if facts.get('container') else ''))
    out['ok'] = not errors
    return out


NEW_MODULE_REASON = 'a new driver module was installed'


def persistent_reasons(facts):
    """The reasons for a reboot that the node's state shows, those a reboot should clear (PERSISTENT_REASONS)."""
    return node_reasons(facts)


def reboot_record_after(reasons_after):
    """What to do with the reboot record once the node is back from the reboot of this run.

    reasons_after: the reasons a reboot should clear (PERSISTENT_REASONS), read again after the reboot.
    Returns {'action': 'clear'|'keep', 'message'}: 'clear' when none is left (the reboot did its job, so a
    later change starts from a clean record), 'keep' otherwise (the next run then refuses a reboot loop).
    """
    left = [r for r in reasons_after or [] if _reason_key(r)]
    if not left:
        return {'action': 'clear', 'message': 'the reboot cleared every reason it was done for'}
    return {'action': 'keep', 'message': 'after the reboot the same still holds: %s' % '; '.join(left)}


def _reason_key(reason):
    for prefix in PERSISTENT_REASONS:
        if reason.startswith(prefix):
            return prefix
    return None


def reboot_decision(reasons, state, boot_id):
    """Reboot, or refuse because the last reboot did not clear the same reason.

    reasons: why a reboot is needed now (strings; those that a reboot should clear start with one of
    PERSISTENT_REASONS). state: what the role wrote on the node just before its last reboot
    ({'boot_id', 'reasons', 'time'}), or None. boot_id: the node's current boot id.
    Returns {'action': 'none'|'reboot'|'fail', 'message', 'repeated'}: 'fail' when the node has rebooted
    since the state was written (the boot id differs) and a reason that reboot should have cleared is
    there again.
    """
    reasons = list(reasons or [])
    if not reasons:
        return {'action': 'none', 'message': '', 'repeated': []}
    # A module installed by this run is a new change: the record of an earlier change's reboot proves
    # nothing about it (the loaded module is the old branch's until this reboot), so it is no loop.
    fresh = NEW_MODULE_REASON in reasons
    if state and state.get('boot_id') and state.get('boot_id') != boot_id and not fresh:
        before = state.get('reasons') or []
        keys_before = set(_reason_key(b) for b in before) - set([None])
        repeated = [r for r in reasons if _reason_key(r) in keys_before]
        if repeated:
            return {'action': 'fail', 'repeated': repeated,
                    'message': ('the node was rebooted (%s) because %s, and after that reboot the same still holds: '
                                '%s. Another reboot would not change that, so none is done'
                                % (state.get('time') or 'by an earlier run', '; '.join(before), '; '.join(repeated)))}
    return {'action': 'reboot', 'message': '; '.join(reasons), 'repeated': []}


def check_modules(results, plan_out, pin=None):
    """Check ``modinfo -k <kernel> <module>`` of every kernel against the plan.

    results: one dict per kernel with item (the kernel), rc, stdout, stderr (a registered loop's results).
    Returns {'problems': [...], 'versions': [...], 'modules': {kernel: {version, license, flavour, filename, signer}}}.
    """
    problems, modules = [], {}
    kmod = plan_out.get('kmod') or 'nvidia'
    branch = plan_out.get('branch') or ''
    flavour = (plan_out.get('kernel_module') or {}).get('flavour')
    for result in results or []:
        kernel = result.get('item')
        if result.get('rc') != 0:
            problems.append('kernel %s has no %s module (%s)' % (kernel, kmod, (result.get('stderr') or '').strip()))
            continue
        fields = dkmslib.parse_modinfo(result.get('stdout'))
        license_text = fields.get('license') or ''
        if isinstance(license_text, list):
            license_text = license_text[0]
        info = {'version': fields.get('version') or '', 'license': license_text,
                'flavour': dkmslib.flavour_of_license(license_text), 'filename': fields.get('filename') or '',
                'signer': fields.get('signer') or ''}
        modules[kernel] = info
        if not info['version'].startswith(branch + '.'):
            problems.append('kernel %s: %s is version %s, not branch %s' % (kernel, info['filename'], info['version'], branch))
        elif pin and not info['version'].startswith(str(pin)):
            problems.append('kernel %s: %s is version %s, not the pinned nvidia_driver_version %s'
                            % (kernel, info['filename'], info['version'], pin))
        elif flavour and info['flavour'] != flavour:
            problems.append('kernel %s: %s has license "%s", the %s flavour, not %s'
                            % (kernel, info['filename'], license_text, info['flavour'] or 'unknown', flavour))
    versions = sorted(set(m['version'] for m in modules.values()))
    return {'problems': problems, 'versions': versions, 'modules': modules}
