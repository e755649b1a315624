"""A real Slurm cluster on the two namespace hosts of netns_hosts.py: Debian's munged,
slurmctld and two slurmd (NodeName = each host's name, NodeAddr = its veth address).

    with netns_hosts.TwoHosts() as hosts, SlurmCluster(hosts, directory) as cluster:
        hosts.run(0, ["srun", "--nodes=2", "--ntasks-per-node=1", "hostname"], env=cluster.env(os.environ), timeout=30)

Everything lives in `directory` (a fresh temporary directory of the caller's): the munge
key, munged's socket, pid, seed and log files (--key-file, --socket, ...), slurm.conf
(SLURM_CONF for the clients, -f for the daemons), slurmctld's state and every log and
spool directory. No configuration under /etc is used and nothing under /etc, /var or /run
is written, so the test needs the packages (scripts/bootstrap.sh) but no set-up of the
machine, and leaves nothing behind. The daemons run as root in the foreground (-D / -F) inside the hosts:

- munged and slurmctld on host 0 (slurmctld at 10.77.0.1);
- slurmd on each host, in that host's network, UTS and mount namespaces: its host name is
  its NodeName, so srun's tasks see the host name, the /etc/hosts and the addresses of
  the host they run on (slurmstepd and the tasks are slurmd's children);
- munged's socket is a file in `directory`: the slurmd on host 1 reaches it there too
  (a Unix socket bound to a path is not confined to a network namespace). One munged
  stands for the one munged per node of a real cluster, which share the key.

Being children of the hosts' commands, the daemons and everything they start are killed
with the namespaces on every exit path of netns_hosts (context manager, atexit, signals);
stop() first asks for an orderly shutdown (scontrol shutdown, then munged's SIGTERM).

Slurm settings that keep it to this machine and to seconds: no cgroups (proctrack/pgid,
task/none; on 24.11 also CgroupPlugin=disabled), no accounting, the built-in scheduler, and
MinJobAge=5: `sbatch --wait` then polls every 2 s instead of after 2, 10 and 42 s (22.05
multiplies its interval by 4 while it is under MinJobAge/2), and a finished job stays known
for at least 5 s, longer than one poll (0, which keeps every job, is refused by 24.11:
"MinJobAge must be at least 2").
"""
import os
import re
import shutil
import signal
import subprocess
import time

PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "scontrol", "sinfo")
_SEARCH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin"])


def program(name):
    """The full path of one of PROGRAMS (the daemons are in /usr/sbin, which a PATH may lack)."""
    return shutil.which(name, path=_SEARCH) or name


def missing_programs():
    """Those of PROGRAMS (Debian's munge, slurmctld, slurmd, slurm-client) that are not here."""
    return [p for p in PROGRAMS if shutil.which(p, path=_SEARCH) is None]


def version():
    """slurmd's version as (major, minor): (22, 5) on Debian 12, (24, 11) on Debian 13."""
    out = subprocess.run([program("slurmd"), "-V"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    if not m:
        raise AssertionError(f"slurmd -V printed no version: {out!r}")
    return int(m.group(1)), int(m.group(2))


class SlurmCluster:
    def __init__(self, hosts, directory):
        self.hosts = hosts
        self.dir = directory
        self.conf = os.path.join(directory, "slurm.conf")
        self.socket = os.path.join(directory, "munge", "munge.socket")
        self._procs = {}
        self.setup_seconds = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def env(self, base):
        """`base` without any SLURM_* of an outer job, with SLURM_CONF of this cluster."""
        env = {k: v for k, v in base.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = self.conf
        return env

    # ---- set-up ---------------------------------------------------------------------------
    def _write_files(self):
        # munged wants every directory on the socket's path searchable by everyone, and the
        # key readable by its owner only.
        os.chmod(self.dir, 0o711)
        os.makedirs(os.path.dirname(self.socket), mode=0o711)
        key = os.path.join(self.dir, "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as f:
            f.write(os.urandom(1024))
        self.key = key
        h, d = self.hosts, self.dir
        for name in h.name:  # Slurm 24.11's slurmd does not make its spool directory
            os.makedirs(os.path.join(d, f"spool-{name}"))
        if version() >= (23, 11):
            # 24.11's slurmd sets up a cgroup plugin even with proctrack/pgid and task/none,
            # and fails where no cgroup file system is mounted (scripts/debian13.sh's root);
            # 22.05 knows no "disabled" and needs no cgroup.conf (Debian ships these two; 23.11 as
            # the first with "disabled" is an assumption). Read from SLURM_CONF's directory.
            with open(os.path.join(d, "cgroup.conf"), "w") as f:
                f.write("CgroupPlugin=disabled\n")
        nodes = "\n".join(f"NodeName={h.name[i]} NodeAddr={h.address[i]} CPUs=2 State=UNKNOWN"
                          for i in range(h.count))
        with open(self.conf, "w") as f:
            f.write(f"""# Written by test/multinode/slurm_cluster.py for one test run.
ClusterName=accel
SlurmctldHost={h.name[0]}({h.address[0]})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=5
# The nodes share this machine's CPUs: each claims 2 whatever the machine has (config_overrides:
# a node with fewer is not drained), enough for 2 tasks per node.
SlurmdParameters=config_overrides
{nodes}
PartitionName=hosts Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")

    def _daemon(self, host, name, argv):
        out = open(os.path.join(self.dir, f"{name}.out"), "w")
        p = self.hosts.popen(host, argv, stdout=out, stderr=subprocess.STDOUT, env=self.env(os.environ))
        out.close()
        self._procs[name] = p
        return p

    def start(self, timeout=60):
        """Writes the files, starts the daemons, waits until every node is idle."""
        t0 = time.monotonic()
        self._write_files()
        d = self.dir
        self._daemon(0, "munged", [program("munged"), "--foreground", f"--key-file={self.key}",
                                   f"--socket={self.socket}", f"--pid-file={d}/munge/munged.pid",
                                   f"--seed-file={d}/munge/munged.seed", f"--log-file={d}/munge/munged.log"])
        self._wait(lambda: os.path.exists(self.socket), timeout, "munged never made its socket")
        # -i: ignore the (absent) saved state.
        self._daemon(0, "slurmctld", [program("slurmctld"), "-D", "-i", "-f", self.conf])
        for i in range(self.hosts.count):
            self._daemon(i, f"slurmd-{i}", [program("slurmd"), "-D", "-f", self.conf])
        want = "\n".join(f"{self.hosts.name[i]} idle" for i in range(self.hosts.count))
        last = [""]

        def ready():
            r = self.hosts.run(0, [program("sinfo"), "--noheader", "--Node", "--format=%N %T"], timeout=20,
                               env=self.env(os.environ))
            last[0] = r.stdout + r.stderr
            return r.returncode == 0 and r.stdout.strip() == want

        self._wait(ready, timeout, "the nodes never became idle", lambda: "sinfo: " + last[0])
        self.setup_seconds = time.monotonic() - t0
        return self.setup_seconds

    def _wait(self, condition, timeout, what, detail=lambda: ""):
        deadline = time.monotonic() + timeout
        while not condition():
            dead = [n for n, p in self._procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else f"not within {timeout} s"
                raise AssertionError(f"Slurm set-up: {what} ({why}); {detail()}\n{self.logs()}")
            time.sleep(0.1)

    # ---- removal --------------------------------------------------------------------------
    def stop(self):
        """An orderly shutdown of every daemon, SIGKILL for those that do not go in 10 s."""
        slurm = [p for n, p in self._procs.items() if n != "munged" and p.poll() is None]
        if slurm and self._procs["slurmctld"].poll() is None:
            try:
                self.hosts.run(0, [program("scontrol"), "shutdown"], timeout=10, env=self.env(os.environ))
            except AssertionError:
                pass
        munged = self._procs.get("munged")
        if munged is not None and munged.poll() is None:
            _wait_or_kill(slurm, 10)
            munged.send_signal(signal.SIGTERM)  # nsenter, unshare and sh exec: this is munged
        _wait_or_kill(list(self._procs.values()), 10)

    def logs(self, lines=15):
        """The tail of every daemon's log, for failure messages."""
        text = ""
        for name in sorted(os.listdir(self.dir)) + ["munge/munged.log"]:
            path = os.path.join(self.dir, name)
            if (name.endswith(".log") or name.endswith(".out")) and os.path.isfile(path):
                with open(path, errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
                text += f"--- {name}\n" + "\n".join(tail) + "\n"
        return text


def _wait_or_kill(procs, timeout):
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
