# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the NVIDIA driver's parsing and decisions: packages, DKMS, prebuilt modules, kernels, module parameters
(plugins/module_utils/{driver_plan,apt,dkms,kernel_guard,modparams}.py); documented in the .yml files beside."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.baremetal.gpu.plugins.plugin_utils.lazy import LazyModule

aptlib = LazyModule('apt')
dkmslib = LazyModule('dkms')
desired_state = LazyModule('desired_state')
driver_plan = LazyModule('driver_plan')
node_facts = LazyModule('node_facts')
kernel_guard = LazyModule('kernel_guard')
modparams = LazyModule('modparams')
support = LazyModule('support')


def driver_plan_filter(facts, settings, os_data, apt=None, today=None):
    if not isinstance(facts, dict) or not isinstance(settings, dict) or not isinstance(os_data, dict):
        raise AnsibleFilterError('baremetal.gpu.driver_plan: expects the gpu_node facts, the settings and the OS data '
                                 'as dictionaries')
    try:
        return driver_plan.plan(settings, os_data, facts, apt if apt else None, today)
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError('baremetal.gpu.driver_plan: %s' % exc)


def fingerprint_changes(before, now):
    if not isinstance(before, dict) or not isinstance(now, dict):
        raise AnsibleFilterError('baremetal.gpu.fingerprint_changes: expects two fingerprints of '
                                 'baremetal.gpu.gpu_node_facts (dictionaries)')
    return node_facts.fingerprint_changes(before, now)


def driver_modules(results, plan_out, pin=None):
    return driver_plan.check_modules(results, plan_out, pin)


def apt_simulation(text, branch_regex='^$'):
    parsed = aptlib.parse_simulation(text)
    parsed.update(aptlib.resolved_branches(parsed, branch_regex))
    parsed['changes'] = bool(parsed['install'] or parsed['remove'])
    return parsed


def apt_real_branches(text, package, branch):
    return aptlib.real_branches(text, package, branch)


def apt_default_branch(text, package, branch, today=None):
    return support.archive_default_branch(aptlib.real_branches(text, package, branch), today)


def apt_branch_family(install, branch):
    return aptlib.branch_family(install, branch)


def dkms_status(text, module, kernels=None):
    entries = dkmslib.parse_status(text)
    out = dkmslib.summary(entries, module, list(kernels or []))
    out['entries'] = entries
    return out


def dkms_build_error(text):
    return {'make_logs': dkmslib.make_logs(text), 'errors': dkmslib.build_errors(text)}


def modinfo(text):
    fields = dkmslib.parse_modinfo(text)
    license_text = fields.get('license') or ''
    if isinstance(license_text, list):
        license_text = license_text[0]
    return {'fields': fields, 'version': fields.get('version') or '', 'license': license_text,
            'filename': fields.get('filename') or '', 'signer': fields.get('signer') or '',
            'flavour': dkmslib.flavour_of_license(license_text)}


def nvidia_reboot_decision(reasons, state=None, boot_id=''):
    return driver_plan.reboot_decision(reasons, state or None, (boot_id or '').strip())


def nvidia_reboot_record_after(facts):
    reasons = driver_plan.persistent_reasons(facts or {})
    out = driver_plan.reboot_record_after(reasons)
    out['reasons'] = reasons
    return out


def driver_upgrade_target(upgrade_branch, inventory_branch=None):
    return desired_state.upgrade_target(upgrade_branch, inventory_branch)


def driver_desired_branch(facts, requested=None, default_branch='', allow_downgrade=False):
    return desired_state.desired_branch(requested, desired_state.installed_branches(facts or {}), default_branch,
                                        bool(allow_downgrade))


def gpg_primary_fingerprints(colons):
    return aptlib.gpg_primary_fingerprints(colons)


def initramfs_contains(listing, path):
    wanted = path.lstrip('/')
    return any(line.strip().lstrip('./').lstrip('/') == wanted for line in (listing or '').splitlines())


def initramfs_verified(now, recorded=None):
    """The kernels whose initramfs exists and is what the role verified before: same mtime, same blacklist checksum.

    ``now``: kernel -> {exists, mtime, blacklist} (stat of each initramfs and the blacklist's checksum), in the
    plan's kernel order; ``recorded``: kernel -> {mtime, blacklist} from the role's state file.
    """
    recorded = recorded or {}
    out = []
    for kernel, state in (now or {}).items():
        rec = recorded.get(kernel) or {}
        if state.get('exists') and rec.get('mtime') == state.get('mtime') and rec.get('blacklist') == state.get('blacklist'):
            out.append(kernel)
    return out


def initramfs_stale(listings, now, path, blacklist=None):
    """The kernels whose initramfs lacks the blacklist file ``path``, from the results of a listing loop.

    Stale: no initramfs, a listing that failed or did not run (no rc 0), a listing without the file, or an
    initramfs older than the file (``blacklist``: its stat, when it exists).
    """
    blacklist = blacklist or {}
    out = []
    for listing in listings or []:
        kernel = listing.get('item')
        state = (now or {}).get(kernel) or {}
        if (not state.get('exists') or listing.get('rc') != 0
                or not initramfs_contains(listing.get('stdout', ''), path)
                or (blacklist.get('exists') and state.get('mtime') < blacklist.get('mtime'))):
            out.append(kernel)
    return out


def apt_known_packages(policy_text, names=None):
    known = [name for name, row in aptlib.parse_policy(policy_text or '').items() if row['versions']]
    return [n for n in (names if names is not None else sorted(known)) if n in known]


def nvidia_module_params(value):
    params, errors = modparams.check(value)
    return {'params': params, 'line': modparams.options_line(params), 'errors': errors}


def nvidia_params_mismatches(proc_text, requested):
    return modparams.mismatches(requested or {}, proc_text or '')


def kernel_module_guard(results, kernels, next_boot, kmod):
    return kernel_guard.guard(results or [], kernels or [], next_boot or '', kmod or 'nvidia')


def prebuilt_flavour_packages(flavours, branch, server=False, open_modules=False):
    return kernel_guard.flavour_packages(flavours or [], str(branch), bool(server), bool(open_modules))


def headers_flavour_packages(flavours):
    return kernel_guard.headers_flavour_packages(flavours or [])


def dkms_autoinstall_problems(dkms_conf_text, hook_present):
    return kernel_guard.dkms_autoinstall(bool(hook_present), dkms_conf_text)


class FilterModule(object):

    def filters(self):
        return {
            'driver_plan': driver_plan_filter,
            'driver_modules': driver_modules,
            'fingerprint_changes': fingerprint_changes,
            'apt_simulation': apt_simulation,
            'apt_branch_family': apt_branch_family,
            'apt_real_branches': apt_real_branches,
            'apt_default_branch': apt_default_branch,
            'dkms_status': dkms_status,
            'dkms_build_error': dkms_build_error,
            'modinfo': modinfo,
            'nvidia_reboot_decision': nvidia_reboot_decision,
            'nvidia_reboot_record_after': nvidia_reboot_record_after,
            'driver_upgrade_target': driver_upgrade_target,
            'driver_desired_branch': driver_desired_branch,
            'initramfs_contains': initramfs_contains,
            'initramfs_verified': initramfs_verified,
            'initramfs_stale': initramfs_stale,
            'gpg_primary_fingerprints': gpg_primary_fingerprints,
            'apt_known_packages': apt_known_packages,
            'nvidia_module_params': nvidia_module_params,
            'nvidia_params_mismatches': nvidia_params_mismatches,
            'kernel_module_guard': kernel_module_guard,
            'prebuilt_flavour_packages': prebuilt_flavour_packages,
            'headers_flavour_packages': headers_flavour_packages,
            'dkms_autoinstall_problems': dkms_autoinstall_problems,
        }
