# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MEASUREMENT ONLY: sum a task_profile log (task_profile.py) by task name and by playbook.

    python3 benchmarks/task_profile/summarize.py LOG [TOP]

With TASK_PROFILE_COUNT_ACTION=<module> set for the run, it also counts that module's runs per host (nvidia-smi once per node in a site.yml run).
"""
import collections
import json
import sys


def main(path, top):
    runs = collections.defaultdict(list)
    ran = collections.Counter()
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            run, playbook, when, name = json.loads(line)
            if name.startswith('@ran '):
                # TASK_PROFILE_COUNT_ACTION: one run of the counted module; not a task start
                host, task = name[5:].split(' ', 1)
                ran[(host, task)] += 1
                continue
            runs[run].append((when, playbook, name))
    tasks, counts = collections.Counter(), collections.Counter()
    playbooks, playbook_runs = collections.Counter(), collections.Counter()
    for events in runs.values():
        events.sort()
        playbook_runs[events[0][1]] += 1
        for (when, playbook, name), (later, dummy_playbook, dummy_name) in zip(events, events[1:]):
            if name == '@start':
                continue
            tasks[name] += later - when
            counts[name] += 1
            playbooks[playbook] += later - when
    print('%d runs, %.0f s in tasks (from each run\'s first task to its end; start-up not counted)'
          % (len(runs), sum(tasks.values())))
    print('\n   runs  seconds  playbook')
    for playbook, seconds in playbooks.most_common(15):
        print('%7d %8.0f  %s' % (playbook_runs[playbook], seconds, playbook))
    print('\nseconds  starts  task')
    for name, seconds in tasks.most_common(top):
        print('%7.1f %7d  %s' % (seconds, counts[name], name))
    if ran:
        print('\nruns of the counted module (TASK_PROFILE_COUNT_ACTION), per host and task')
        for (host, task), number in sorted(ran.items()):
            print('%7d  %s  %s' % (number, host, task))
        per_host = collections.Counter()
        for (host, dummy_task), number in ran.items():
            per_host[host] += number
        print('per host: ' + ', '.join('%s %d' % item for item in sorted(per_host.items())))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
