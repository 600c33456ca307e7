# -*- coding: utf-8 -*-
# Copyright: (c) 2026, baremetal.gpu maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory as the desired state of a node's driver branch.

Pure functions over plain data, used by nvidia_driver's decision (driver_plan.plan) and by the
maintenance plan of every playbook that changes the driver (playbooks/gpu_nodes.yml, upgrade_driver.yml):

- ``desired_branch``: which branch a node should have. A branch the inventory names (nvidia_driver_branch)
  is the desired state; with none named, the branch already installed is kept (the OS default applies to a
  first install only), so a routine run never moves a node that an upgrade moved before. A move to a lower
  branch than the one installed is refused unless nvidia_driver_allow_downgrade is true.
- ``upgrade_target``: the precedence of playbooks/upgrade_driver.yml's ``upgrade_driver_branch`` over the
  inventory. The inventory wins: upgrade_driver_branch may name the branch the inventory pins (or set one
  where the inventory pins none, and then the installed branch is kept by later runs); a different branch
  is a conflict that is refused, naming both variables, because a later site.yml would undo it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

BRANCH = re.compile(r'^[0-9]{3}$')


def _text(value):
    if value is None:
        return ''
    return str(value).strip()


def installed_branches(facts):
    """The driver branches installed on a node (gpu_node_facts' driver subset), as sorted strings."""
    facts = facts or {}
    branches = [_text(b) for b in facts.get('driver_installed_branches') or []]
    if not branches:
        branches = [_text(v).split('.', 1)[0] for v in facts.get('driver_installed_versions') or []]
    return sorted(set(b for b in branches if BRANCH.match(b)), key=int)


def desired_branch(requested, installed, default_branch, allow_downgrade=False):
    """The branch a node should have, where that came from, and what is refused.

    requested: nvidia_driver_branch (None or '' when unset). installed: the branches installed now (list of
    strings, several while a change is half done). default_branch: the OS's default branch.
    Returns {branch, source ('inventory', 'installed' or 'default'), installed, downgrade, errors, message}.
    errors (each naming the variable to change) is not empty for a downgrade without allow_downgrade.
    """
    requested = _text(requested)
    installed = [b for b in (installed or []) if BRANCH.match(_text(b))]
    highest = max(installed, key=int) if installed else ''
    out = {'installed': list(installed), 'downgrade': False, 'errors': []}
    if requested:
        out.update(branch=requested, source='inventory',
                   message='nvidia_driver_branch %s (the inventory)' % requested)
        if highest and BRANCH.match(requested) and int(requested) < int(highest):
            out['downgrade'] = True
            if not allow_downgrade:
                out['errors'].append(
                    'nvidia_driver_branch %s is lower than the installed branch %s: a downgrade needs '
                    'nvidia_driver_allow_downgrade: true (or set nvidia_driver_branch to %s or higher). '
                    'Nothing was changed' % (requested, highest, highest))
            else:
                out['message'] += '; a downgrade from %s, allowed by nvidia_driver_allow_downgrade' % highest
        return out
    if highest:
        out.update(branch=highest, source='installed',
                   message='%s, the branch installed (nvidia_driver_branch is not set: the installed branch is kept)'
                   % highest)
        return out
    out.update(branch=_text(default_branch), source='default',
               message='%s, the default branch of this OS (nvidia_driver_branch is not set and no driver is installed)'
               % _text(default_branch))
    return out


def upgrade_target(upgrade_branch, inventory_branch):
    """The branch playbooks/upgrade_driver.yml moves the nodes to, and what is refused.

    upgrade_branch: upgrade_driver_branch (-e), None or '' when unset. inventory_branch: the host's
    nvidia_driver_branch, None or '' when unset. Precedence: the inventory (nvidia_driver_branch) is the
    desired state and wins; upgrade_driver_branch names the target only where the inventory pins none.
    Returns {branch, source ('inventory', 'upgrade_driver_branch' or ''), errors, message}.
    """
    upgrade_branch = _text(upgrade_branch)
    inventory_branch = _text(inventory_branch)
    out = {'errors': []}
    if inventory_branch and upgrade_branch and inventory_branch != upgrade_branch:
        out.update(branch='', source='')
        out['errors'].append(
            'upgrade_driver_branch %s conflicts with nvidia_driver_branch %s pinned in the inventory. The inventory is '
            'the desired state and wins, so a later site.yml would move the node back: change nvidia_driver_branch to %s '
            'in group_vars (then run upgrade_driver.yml without -e upgrade_driver_branch), or drop '
            '-e upgrade_driver_branch. Nothing was changed' % (upgrade_branch, inventory_branch, upgrade_branch))
        return out
    if inventory_branch:
        out.update(branch=inventory_branch, source='inventory',
                   message='nvidia_driver_branch %s (the inventory, the desired state)' % inventory_branch)
        return out
    if upgrade_branch:
        out.update(branch=upgrade_branch, source='upgrade_driver_branch',
                   message=('upgrade_driver_branch %s (the inventory pins no nvidia_driver_branch, so later runs keep '
                            'the installed branch)' % upgrade_branch))
        return out
    out.update(branch='', source='')
    out['errors'].append('neither upgrade_driver_branch nor nvidia_driver_branch is set: say which driver branch the GPU '
                         'nodes move to, preferably nvidia_driver_branch in group_vars (the desired state), or '
                         '-e upgrade_driver_branch=595. Nothing was changed')
    return out
