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
exits early. Pids wrap in a long run (pid_max is 32768 on these machines and a cold run makes
more processes than that), so a record is known by its position in the file and a parent is
the process of that pid that was alive when the child started. Python's standard library only.
"""
import bisect
import collections
import datetime
import subprocess
import sys


def read(path):
    """[{comm, cpu, wall, pid, ppid, start, t0, t1}] of every record in the accounting file
    (t0/t1: start and end in seconds since the epoch)."""
    out = subprocess.run(["dump-acct", path], capture_output=True, text=True, check=True).stdout
    procs = []
    for line in out.splitlines():
        f = [x.strip() for x in line.split("|")]
        t0 = datetime.datetime.strptime(f[14], "%a %b %d %H:%M:%S %Y").timestamp()
        wall = float(f[4]) / 100.0
        procs.append(dict(comm=f[0], cpu=(float(f[2]) + float(f[3])) / 100.0, wall=wall, pid=int(f[9]),
                          ppid=int(f[10]), start=f[14], t0=t0, t1=t0 + wall))
    return procs


def parents(procs):
    """For each record, the index of its parent's record or None. The start is kept in whole
    seconds, so a parent counts as alive from its start second to one second past its end."""
    by_pid = collections.defaultdict(list)
    for i, d in enumerate(procs):
        by_pid[d["pid"]].append(i)
    for lst in by_pid.values():
        lst.sort(key=lambda i: procs[i]["t0"])
    out = []
    for d in procs:
        cands = by_pid.get(d["ppid"], [])
        k = bisect.bisect_right([procs[i]["t0"] for i in cands], d["t0"]) - 1
        out.append(cands[k] if k >= 0 and procs[cands[k]]["t1"] + 1 >= d["t0"] else None)
    return out


def test_root(procs, parent, i, ctest):
    """The record of the ctest child that record i descends from, or None."""
    for _ in range(200):
        p = parent[i]
        if p is None:
            return None
        if p in ctest:
            return i
        i = p
    return None


def main(argv):
    procs = read(argv[1])
    parent = parents(procs)
    ctest = {i for i, d in enumerate(procs) if d["comm"] == "ctest"}
    total = sum(d["cpu"] for d in procs)
    print(f"{total:.0f} s of CPU in {len(procs)} processes ({len(ctest)} ctest runs)")
    by_comm, count = collections.Counter(), collections.Counter()
    for d in procs:
        by_comm[d["comm"]] += d["cpu"]
        count[d["comm"]] += 1
    print("\nby command (the first 30):")
    for comm, cpu in by_comm.most_common(30):
        print(f"  {comm:16s} {cpu:7.1f} s  {count[comm]:5d} processes")
    per_test = collections.defaultdict(collections.Counter)
    for i, d in enumerate(procs):
        per_test[test_root(procs, parent, i, ctest)][d["comm"]] += d["cpu"]
    rows = sorted(((sum(c.values()), root, c) for root, c in per_test.items()), key=lambda r: -r[0])
    print("\nby test (ctest's child: its command and start; CPU and wall seconds; its 4 largest commands):")
    for cpu, root, c in rows[:40]:
        name = f"{procs[root]['comm']} {procs[root]['start']}" if root is not None else "outside the tests"
        wall = procs[root]["wall"] if root is not None else 0.0
        print(f"  {cpu:7.1f} s CPU {wall:7.1f} s wall  {name}  " + ", ".join(f"{k} {v:.0f}" for k, v in c.most_common(4)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
