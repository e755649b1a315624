#!/usr/bin/env python3
"""Where a test run's CPU goes (issue 46): BSD process accounting records every process that
exits, with its user and system time and its parent; this sums them by command name and by
the ctest child each process descends from (one per test).

    apt-get install acct; touch /tmp/pacct; accton /tmp/pacct
    OMP_NUM_THREADS=1 ctest --preset ci -j2 ...; accton off
    python3 scripts/ci/cpu_by_test.py /tmp/pacct

Reads `dump-acct` (Debian's acct) v3 records: comm | version | utime | stime | etime | uid |
gid | mem | io | pid | ppid | flags | exit | tty | start, times in 1/100 s. A process still
running when accounting stops is missing, and so is the CPU of a thread group whose leader
exits early; pids are assumed not to wrap during the run. Python's standard library only.
"""
import collections
import subprocess
import sys


def read(path):
    """{pid: {comm, cpu, wall, ppid, start}} of every record in the accounting file."""
    out = subprocess.run(["dump-acct", path], capture_output=True, text=True, check=True).stdout
    procs = {}
    for line in out.splitlines():
        f = [x.strip() for x in line.split("|")]
        procs[int(f[9])] = dict(comm=f[0], cpu=(float(f[2]) + float(f[3])) / 100.0, wall=float(f[4]) / 100.0,
                                ppid=int(f[10]), start=f[14])
    return procs


def test_root(procs, pid, ctest):
    """The ctest child `pid` descends from, or None (a process outside the tests)."""
    for _ in range(200):
        d = procs.get(pid)
        if d is None:
            return None
        if d["ppid"] in ctest:
            return pid
        pid = d["ppid"]
    return None


def main(argv):
    procs = read(argv[1])
    ctest = {p for p, d in procs.items() if d["comm"] == "ctest"}
    total = sum(d["cpu"] for d in procs.values())
    print(f"{total:.0f} s of CPU in {len(procs)} processes (ctest pids {sorted(ctest)})")
    by_comm, count = collections.Counter(), collections.Counter()
    for d in procs.values():
        by_comm[d["comm"]] += d["cpu"]
        count[d["comm"]] += 1
    print("\nby command (the first 30):")
    for comm, cpu in by_comm.most_common(30):
        print(f"  {comm:16s} {cpu:7.1f} s  {count[comm]:5d} processes")
    per_test = collections.defaultdict(collections.Counter)
    for pid, d in procs.items():
        per_test[test_root(procs, pid, ctest)][d["comm"]] += d["cpu"]
    rows = sorted(((sum(c.values()), root, c) for root, c in per_test.items()), key=lambda r: -r[0])
    print("\nby test (ctest's child: its command and start; CPU and wall seconds; its 4 largest commands):")
    for cpu, root, c in rows[:30]:
        name = f"{procs[root]['comm']} {procs[root]['start']}" if root else "outside the tests"
        wall = procs[root]["wall"] if root else 0.0
        print(f"  {cpu:7.1f} s CPU {wall:7.1f} s wall  {name}  " + ", ".join(f"{k} {v:.0f}" for k, v in c.most_common(4)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
