# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kept: every role's tasks/main.yml reads like a table of contents (at most 40 lines), and the
host roles do not restate each other's YAML (at most 5 six-line windows repeated between two host roles).

How windows are counted (docs/DEVELOPING.md, "Roles"): in every .yml file under a host role, the lines that are not
blank, not comments and not '---', stripped of their indentation, with the role's name replaced by ROLE (so that
``__nvidia_driver_input_errors`` and ``__container_toolkit_input_errors`` read the same); a window is 6 consecutive
such lines, and it counts once when two or more host roles hold it. meta/main.yml is left out: scripts/role-docs.py
writes its platforms from the OS matrix (a generated copy, checked by ``role-docs.py --check``). What remains are
the calls of host_common's entry points, a few lines each."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# The roles that run on the nodes: scripts/role-docs.py's HOST_ROLES (read from there) and verify.
WINDOW = 6
MAX_REPEATED = 5
MAX_MAIN_LINES = 40


def host_roles():
    with open(os.path.join(ROOT, 'scripts', 'role-docs.py'), encoding='utf-8') as handle:
        text = handle.read()
    start = text.index('HOST_ROLES = (')
    names = text[start:text.index(')', start)].split('(', 1)[1]
    return sorted(set(name.strip().strip('"') for name in names.replace('\n', ' ').split(',') if name.strip())
                  | {'verify'})


def lines_of(text, role):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith('#') and line != '---':
            out.append(line.replace(role, 'ROLE'))
    return out


def repeated_windows(files_by_role):
    """files_by_role: {role: [text, ...]} -> {window: set of roles}, the windows two or more roles hold."""
    seen = collections.defaultdict(set)
    for role, texts in files_by_role.items():
        for text in texts:
            lines = lines_of(text, role)
            for start in range(len(lines) - WINDOW + 1):
                seen[tuple(lines[start:start + WINDOW])].add(role)
    return dict((window, roles) for window, roles in seen.items() if len(roles) > 1)


def role_files(role):
    texts = []
    for folder, _dirs, files in os.walk(os.path.join(ROOT, 'roles', role)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith('.yml') and os.path.relpath(path, os.path.join(ROOT, 'roles', role)) != os.path.join('meta', 'main.yml'):
                with open(path, encoding='utf-8') as handle:
                    texts.append(handle.read())
    return texts


def test_the_count_finds_a_repeated_window():
    task = '\n'.join('- name: step %d' % n for n in range(7))
    assert len(repeated_windows({'a_role': [task], 'b_role': [task.replace('step', 'step')]})) == 2
    assert repeated_windows({'a_role': ['x: __a_role_v\n' * 6], 'b_role': ['x: __b_role_v\n' * 6]})
    assert repeated_windows({'a_role': [task], 'b_role': ['- name: other\n' * 7]}) == {}


def test_host_roles_restate_at_most_five_windows():
    roles = host_roles()
    assert {'nvidia_driver', 'container_toolkit', 'host_common', 'verify'} <= set(roles), roles
    repeated = repeated_windows(dict((role, role_files(role)) for role in roles))
    report = ['%s: %s' % (sorted(r), ' / '.join(w)) for w, r in repeated.items()]
    assert len(repeated) <= MAX_REPEATED, '%d repeated windows (at most %d):\n%s' % (
        len(repeated), MAX_REPEATED, '\n'.join(report))


def test_every_main_is_a_table_of_contents():
    long = {}
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        path = os.path.join(ROOT, 'roles', role, 'tasks', 'main.yml')
        if os.path.exists(path):
            with open(path, encoding='utf-8') as handle:
                count = len(handle.read().splitlines())
            if count > MAX_MAIN_LINES:
                long[role] = count
    assert long == {}, 'tasks/main.yml longer than %d lines: %s' % (MAX_MAIN_LINES, long)


# The connection to the Kubernetes API is the play's module_defaults for group/baremetal.gpu.k8s
# (playbooks/vars/cluster.yml's __cluster_connection), never an option a role's task passes.
CONNECTION_OPTIONS = ('kubeconfig', 'context', 'kube_context', 'kubeconfig_path')


def tasks_in(tasks):
    """Every task dict under ``tasks``, the tasks of its blocks (block, rescue, always) included."""
    for task in tasks or []:
        if isinstance(task, dict):
            yield task
            for key in ('block', 'rescue', 'always'):
                yield from tasks_in(task.get(key))


def connection_options(tasks, where):
    """'where: module option' for each task under ``tasks`` (blocks included) that passes a connection option."""
    return ['%s: %s %s' % (where, module, option)
            for task in tasks_in(tasks) for module, args in task.items()
            if isinstance(args, dict) and module not in ('vars', 'module_defaults', 'apply')
            for option in CONNECTION_OPTIONS if option in args]


def test_the_connection_check_finds_an_option():
    tasks = [{'name': 'x', 'block': [{'kubernetes.core.k8s_info': {'kind': 'Node', 'kubeconfig': '/k'}}]}]
    assert connection_options(tasks, 'f') == ['f: kubernetes.core.k8s_info kubeconfig']
    assert connection_options([{'module_defaults': {'kubeconfig': '/k'}, 'block': []}], 'f') == []


def role_task_files():
    """(where, tasks) of every task file of every role: where is <role>/tasks/<file>."""
    import yaml   # ansible-core's own requirement; imported here so that the other tests need nothing
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        folder = os.path.join(ROOT, 'roles', role, 'tasks')
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name), encoding='utf-8') as handle:
                yield '%s/tasks/%s' % (role, name), yaml.safe_load(handle)


def test_no_role_task_passes_connection_options():
    found = [f for where, tasks in role_task_files() for f in connection_options(tasks, where)]
    assert found == [], 'connection options in role tasks (use the play\'s module_defaults):\n' + '\n'.join(found)


# ... and every play of the playbooks that includes a role talking to the API sets that module_defaults: a play that
# forgot it would reach the Kubernetes client's default kubeconfig (~/.kube/config) without a word.
API_ROLES = ('node_maintenance', 'cluster_addons', 'runtime_class', 'kube_prometheus', 'device_plugin', 'dcgm_exporter',
             'gpu_health', 'upgrade')
API_ENTRY_POINTS = {'verify': ('cluster',)}
CONNECTION_GROUP = 'group/baremetal.gpu.k8s'


def api_includes(tasks):
    """The (role, tasks_from) of each include or import of a role that talks to the API under ``tasks``."""
    found = []
    for task in tasks_in(tasks):
        if 'role' in task:      # a play's roles: entry
            task = {'ansible.builtin.include_role': {'name': task['role']}}
        for action in ('ansible.builtin.include_role', 'ansible.builtin.import_role'):
            args = task.get(action)
            if isinstance(args, dict):
                role = str(args.get('name', '')).replace('baremetal.gpu.', '')
                entry = str(args.get('tasks_from', 'main'))
                templated = '{{' in role
                if (templated or role in API_ROLES or entry in API_ENTRY_POINTS.get(role, ())) and \
                        not (role == 'cluster_addons' and entry == 'api_host'):
                    found.append((role, entry))
    return found


def plays_without_connection(playbook):
    missing = []
    for play in playbook or []:
        if not isinstance(play, dict) or 'hosts' not in play:
            continue
        includes = []
        for key in ('pre_tasks', 'roles', 'tasks', 'post_tasks'):
            includes += api_includes(play.get(key))
        if includes and CONNECTION_GROUP not in (play.get('module_defaults') or {}):
            missing.append('%s (%s)' % (play.get('name'), ', '.join('%s:%s' % item for item in includes)))
    return missing


def test_the_play_check_finds_a_play_without_the_connection():
    play = {'name': 'p', 'hosts': 'all', 'tasks': [{'block': [{'ansible.builtin.include_role': {
        'name': 'baremetal.gpu.node_maintenance', 'tasks_from': 'lock'}}]}]}
    assert plays_without_connection([play]) == ['p (node_maintenance:lock)']
    assert plays_without_connection([dict(play, module_defaults={CONNECTION_GROUP: '{{ c }}'})]) == []
    assert plays_without_connection([{'name': 'v', 'hosts': 'all', 'roles': [{'role': 'baremetal.gpu.verify'}]}]) == []


def test_every_play_that_talks_to_the_api_sets_the_connection():
    import yaml   # ansible-core's own requirement
    missing = []
    for name in sorted(os.listdir(os.path.join(ROOT, 'playbooks'))):
        if name.endswith('.yml'):
            with open(os.path.join(ROOT, 'playbooks', name), encoding='utf-8') as handle:
                missing += ['playbooks/%s: %s' % (name, play) for play in plays_without_connection(yaml.safe_load(handle))]
    assert missing == [], 'plays that talk to the API without module_defaults for %s:\n%s' % (
        CONNECTION_GROUP, '\n'.join(missing))


# A secret never reaches a command line: every user of a node can read a process's arguments (/proc/<pid>/cmdline),
# and a shell that is handed a secret through its environment puts it on the command lines it builds. A command
# task passes a secret on its standard input (stdin) or in a file written 0600.
SECRET_NAME = re.compile(r'[a-z0-9_]*(?:kubeconfig|token|password|passwd|secret|credential|private_key|api_key)[a-z0-9_]*')
COMMAND_MODULES = ('ansible.builtin.command', 'ansible.builtin.shell', 'ansible.builtin.raw', 'command', 'shell', 'raw')


def secrets_on_command_lines(tasks, where):
    """'where: task name: variable' for each command or shell task whose command line (argv, cmd, the free form)
    names a secret-bearing variable inside a Jinja expression, or a shell task that gets one through environment."""
    found = []
    for task in tasks_in(tasks):
        for module in COMMAND_MODULES:
            if module not in task:
                continue
            args = task[module]
            parts = [args] if isinstance(args, str) else [args.get('cmd'), args.get('_raw_params')] + list(args.get('argv') or [])
            if module.endswith(('shell', 'raw')):
                parts += list((task.get('environment') or {}).values()) if isinstance(task.get('environment'), dict) else []
            for part in parts:
                for expression in re.findall(r'\{\{(.*?)\}\}', str(part or ''), re.S):
                    found += ['%s: %s: %s' % (where, task.get('name'), name) for name in SECRET_NAME.findall(expression)
                              if not name.endswith(('_dir', '_path', '_file'))]
    return found


def test_the_secret_check_finds_a_password_on_a_command_line():
    tasks = [{'name': 'x', 'block': [{'name': 'pw', 'ansible.builtin.shell': {'cmd': 'tool --pw="$PW"'},
                                      'environment': {'PW': '{{ nvidia_driver_mok_password }}'}}]},
             {'name': 'argv', 'ansible.builtin.command': {'argv': ['tool', '{{ some_api_token }}']}},
             {'name': 'fine', 'ansible.builtin.command': {'argv': ['tool'], 'stdin': '{{ nvidia_driver_mok_password }}'}}]
    assert [f.split(': ', 1)[1] for f in secrets_on_command_lines(tasks, 'f')] == [
        'pw: nvidia_driver_mok_password', 'argv: some_api_token']


def test_no_role_task_puts_a_secret_on_a_command_line():
    found = [f for where, tasks in role_task_files() for f in secrets_on_command_lines(tasks, where)]
    assert found == [], 'secrets on command lines (pass them on stdin):\n' + '\n'.join(found)


def role_tags(role):
    """Every tag a task (or block) of the role's task files carries, but always and never."""
    import yaml   # ansible-core's own requirement
    tags = set()
    folder = os.path.join(ROOT, 'roles', role, 'tasks')
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding='utf-8') as handle:
            for task in tasks_in(yaml.safe_load(handle)):
                value = task.get('tags') or []
                tags.update([value] if isinstance(value, str) else value)
    return tags - {'always', 'never'}


def unreachable_role_tags(playbook_tasks, where):
    """'where: role: tag' for each tag of a role that a playbook includes (include_role of its main entry point,
    with tags of its own) but whose include does not carry that tag: ``--tags <tag>`` would run nothing of it."""
    found = []
    for task in tasks_in(playbook_tasks):
        include = task.get('ansible.builtin.include_role')
        tags = task.get('tags') or []
        if not isinstance(include, dict) or include.get('tasks_from') or 'always' in tags:
            continue
        role = include['name'].split('.')[-1]
        if not os.path.isdir(os.path.join(ROOT, 'roles', role, 'tasks')):
            continue
        found += ['%s: %s: %s' % (where, role, tag) for tag in sorted(role_tags(role) - set(tags))]
    return found


def playbook_task_lists(path):
    """(where, tasks) for every task list a playbook runs: its plays' pre_tasks, tasks and post_tasks, those of the
    playbooks it imports, and the change a rollout is imported with (node_maintenance_rollout_change, a tasks file
    beside playbooks/rollout.yml); ('where', {'role': name}) for each role a play applies with ``roles:``."""
    import yaml   # ansible-core's own requirement
    with open(path, encoding='utf-8') as handle:
        plays = yaml.safe_load(handle) or []
    where = os.path.relpath(path, ROOT)
    for play in plays:
        imported = play.get('ansible.builtin.import_playbook')
        if imported:
            yield from playbook_task_lists(os.path.join(os.path.dirname(path), imported))
            change = (play.get('vars') or {}).get('node_maintenance_rollout_change')
            if change:
                change_path = os.path.join(os.path.dirname(path), change)
                with open(change_path, encoding='utf-8') as handle:
                    yield os.path.relpath(change_path, ROOT), yaml.safe_load(handle)
            continue
        for key in ('pre_tasks', 'tasks', 'post_tasks'):
            yield where, play.get(key)
        for entry in play.get('roles') or []:
            yield where, {'role': entry['role'] if isinstance(entry, dict) else entry}


def applied_roles(path):
    """The roles a playbook applies with every tag of theirs reachable: through ``roles:`` or import_role of their
    main entry point (their tasks keep their own tags)."""
    found = set()
    for _where, tasks in playbook_task_lists(path):
        if isinstance(tasks, dict):
            found.add(tasks['role'].split('.')[-1])
            continue
        for task in tasks_in(tasks):
            imported = task.get('ansible.builtin.import_role')
            if isinstance(imported, dict) and not imported.get('tasks_from'):
                found.add(imported['name'].split('.')[-1])
    return found


def test_every_role_tag_is_reachable_through_the_playbooks():
    """An include_role of a role's main entry point hides the role's own tags unless it carries them all: each such
    include must (``--tags <tag>`` would run nothing of the role otherwise; import_role and ``roles:`` keep them)."""
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, 'playbooks'))):
        if name.endswith('.yml'):
            for where, tasks in playbook_task_lists(os.path.join(ROOT, 'playbooks', name)):
                if not isinstance(tasks, dict):
                    found += unreachable_role_tags(tasks, where)
    assert found == [], 'role tags that --tags cannot reach through the playbooks:\n' + '\n'.join(sorted(set(found)))


def test_site_applies_the_host_layer_with_every_tag_of_its_roles():
    """site.yml reaches the host layer's roles (through gpu_nodes.yml's rollout and its change, tasks/host_layer.yml)
    so that each of their tags selects their tasks: the slices of the README (--tags nvidia_driver_kernels, ...)."""
    applied = applied_roles(os.path.join(ROOT, 'playbooks', 'site.yml'))
    missing = {'nvidia_driver', 'container_toolkit', 'rke2_nvidia_runtime'} - applied
    assert not missing, 'not applied by site.yml with their tags: %s' % sorted(missing)


# A node lost in its change (a reboot it never came back from, a network gone) must reach its rescue: without
# ignore_unreachable on the change block, Ansible drops an unreachable host from the play, skips its rescue (it is
# never labelled failed) and, when it was the whole batch, ends the playbook before the lock is released.
def change_blocks_that_drop_a_lost_node(tasks, where):
    """The blocks with a rescue (a node's change, rescued by the engine) under ``tasks`` without ignore_unreachable."""
    found = []
    for task in tasks or []:
        if not isinstance(task, dict) or 'block' not in task:
            continue
        if task.get('rescue') and task.get('ignore_unreachable') is not True:
            found.append('%s: %s' % (where, task.get('name')))
        found += change_blocks_that_drop_a_lost_node(task['block'], where)
    return found


def test_the_lost_node_check_finds_a_change_block_without_ignore_unreachable():
    block = {'name': 'change', 'block': [{'ansible.builtin.ping': None}], 'rescue': [{'ansible.builtin.ping': None}]}
    assert change_blocks_that_drop_a_lost_node([block], 'p') == ['p: change']
    assert change_blocks_that_drop_a_lost_node([dict(block, ignore_unreachable=True)], 'p') == []
    assert change_blocks_that_drop_a_lost_node([{'block': [block]}], 'p') == ['p: change']


def test_every_change_block_of_a_batched_play_keeps_a_lost_node_in_the_play():
    import yaml   # ansible-core's own requirement
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, 'playbooks'))):
        if name.endswith('.yml'):
            with open(os.path.join(ROOT, 'playbooks', name), encoding='utf-8') as handle:
                for play in yaml.safe_load(handle) or []:
                    if 'serial' in play:
                        for key in ('pre_tasks', 'tasks', 'post_tasks'):
                            found += change_blocks_that_drop_a_lost_node(play.get(key), 'playbooks/' + name)
    for where, tasks in role_task_files():
        found += change_blocks_that_drop_a_lost_node(tasks, 'roles/' + where)
    assert found == [], 'change blocks with a rescue but no ignore_unreachable:\n' + '\n'.join(found)


# The private names (`__<role>_...`) one role uses of another, today: each is a parameter or fact of the other role's
# that is not yet named as its interface. The list may only shrink: a new cross-role use fails the test below, and so
# does an entry no role uses any more (take it off the list).
CROSS_ROLE_PRIVATE_NAMES = {
    ('container_toolkit', '__host_common_restart_show'),
    ('dcgm_exporter', '__cluster_addons_prerequisites'),
    ('dcgm_exporter', '__cluster_addons_render'),
    ('dcgm_exporter', '__cluster_addons_runtime_class'),
    ('device_plugin', '__cluster_addons_prerequisites'),
    ('device_plugin', '__cluster_addons_render'),
    ('host_common', '__nvidia_driver_os'),
    ('node_maintenance', '__nvidia_driver_apt_info'),
    ('node_maintenance', '__rke2_nvidia_runtime_restart_reasons'),
    ('runtime_class', '__cluster_addons_render'),
    ('runtime_class', '__cluster_addons_runtime_class'),
}


def cross_role_private_names():
    """(role, name) for each private name of another role (``__<other role>_...``) in a role's files (not its README)."""
    roles = sorted(os.listdir(os.path.join(ROOT, 'roles')))
    pattern = re.compile(r'\b__(%s)_[a-z0-9_]+' % '|'.join(sorted(roles, key=len, reverse=True)))
    found = set()
    for role in roles:
        for folder, _dirs, files in os.walk(os.path.join(ROOT, 'roles', role)):
            for name in files:
                if name.endswith('.md'):
                    continue
                with open(os.path.join(folder, name), encoding='utf-8', errors='replace') as handle:
                    found.update((role, m.group(0)) for m in pattern.finditer(handle.read()) if m.group(1) != role)
    return found


def test_no_new_use_of_another_roles_private_names():
    found = cross_role_private_names()
    new = sorted(found - CROSS_ROLE_PRIVATE_NAMES)
    gone = sorted(CROSS_ROLE_PRIVATE_NAMES - found)
    assert not new, ('a role uses private names of another role (name them as that role\'s interface, without the '
                     'leading __, and document them in its argument_specs):\n%s' % '\n'.join('%s: %s' % n for n in new))
    assert not gone, 'no longer used, take them off CROSS_ROLE_PRIVATE_NAMES:\n%s' % '\n'.join('%s: %s' % n for n in gone)
