"""Separate hosts on one machine: network namespaces joined by a veth pair.

Each host is a network namespace with its own loopback, one interface `mnet0` with a real
address (10.77.0.1 and 10.77.0.2: the namespaces have no other interface, so these
addresses collide with nothing outside them and concurrent runs do not see each other), its
own host name and its own /etc/hosts (a UTS and a mount namespace per command, the host's
hosts file bind-mounted over /etc/hosts there). Like a stock Debian machine, a host's own
name resolves to 127.0.1.1 there, and the other host's name to its address.

Commands enter a host with nsenter rather than `ip netns exec`, which remounts / and so
fails in a chroot such as scripts/debian13.sh's root.

    with TwoHosts() as hosts:
        p = hosts.popen(0, ["accelerate", "launch", ...])
        hosts.run(1, [...], timeout=60)
        hosts.address[0], hosts.name[0], hosts.counters(0)

Every command runs inside its host's namespace, in its own session, and is killed at exit.
The namespaces (and their hosts files) are removed on every exit path: the context
manager, atexit, SIGTERM/SIGINT/SIGHUP; namespaces left behind by a killed run of this
harness (its prefix, a dead owner pid) are removed by the next one.

Needs root and `ip` (iproute2), `nsenter`, `unshare`, `mount` (util-linux) and `hostname`.
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

PREFIX = "accel-mn"           # namespaces: accel-mn-<owner pid>-<host index>
INTERFACE = "mnet0"           # the veth end inside every host
SUBNET = "10.77.0"            # host i has SUBNET.(i+1)/24
_live = []                    # harnesses to clean up from atexit / signals


def unavailable_reason():
    """Why the harness cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces); CI runs as root"
    for tool in ("ip", "nsenter", "unshare", "mount", "hostname"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    name = f"{PREFIX}-{os.getpid()}-probe"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return "cannot create a network namespace: " + (r.stderr.strip() or f"exit {r.returncode}")
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def _remove_namespace(ns):
    # Processes still inside keep a namespace alive: they are ours (only our commands enter).
    for pid in _ip("netns", "pids", ns, check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _ip("netns", "del", ns, check=False)
    shutil.rmtree(_files_dir(ns), ignore_errors=True)


def _files_dir(ns):
    return os.path.join(tempfile.gettempdir(), ns)


def _in(ns):
    """Runs a command in namespace ns's network (nsenter: no remount of /, unlike `ip -n`)."""
    return ["nsenter", f"--net=/run/netns/{ns}"]


# In scripts/debian13.sh's root every mount is already private to the command (and / is not
# a mount point there, so it cannot be made private again); elsewhere a new mount namespace
# is made private so that the bind mount over /etc/hosts stays inside it.
_PROPAGATION = "unchanged" if os.environ.get("ACCEL_IN_DEBIAN13") == "1" else "private"


def sweep_stale():
    """Removes this harness's namespaces whose owner process is gone."""
    for line in _ip("netns", "list", check=False).splitlines():
        m = re.match(rf"^({re.escape(PREFIX)}-(\d+)-\S+)", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            _remove_namespace(m.group(1))


def _on_signal(signo, _frame):
    for h in list(_live):
        h.close()
    signal.signal(signo, signal.SIG_DFL)
    os.kill(os.getpid(), signo)


class TwoHosts:
    def __init__(self):
        self.count = 2
        tag = f"{PREFIX}-{os.getpid()}-{len(_live)}{int(time.time() * 1000) % 100000}"
        self.ns = [f"{tag}-{i}" for i in range(self.count)]
        # Host names: short, unique per run, valid in a Slurm node list ("mn123-[0-1]").
        self.name_prefix = f"mn{os.getpid()}x{len(_live)}-"
        self.name = [f"{self.name_prefix}{i}" for i in range(self.count)]
        self.address = [f"{SUBNET}.{i + 1}" for i in range(self.count)]
        self.interface = INTERFACE
        self._procs = []
        self._closed = True

    # ---- set-up and removal -------------------------------------------------------------
    def __enter__(self):
        sweep_stale()
        _live.append(self)
        self._closed = False
        if len(_live) == 1:
            atexit.register(lambda: [h.close() for h in list(_live)])
            for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(s, _on_signal)
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _create(self):
        for ns in self.ns:
            _ip("netns", "add", ns)
            self._ip_in(ns, "link", "set", "lo", "up")
        # A veth pair: one end in each host, the same name on both sides.
        _ip("link", "add", INTERFACE, "netns", self.ns[0], "type", "veth", "peer", "name", INTERFACE,
            "netns", self.ns[1])
        for i, ns in enumerate(self.ns):
            self._ip_in(ns, "addr", "add", f"{self.address[i]}/24", "dev", INTERFACE)
            self._ip_in(ns, "link", "set", INTERFACE, "up")
            os.makedirs(_files_dir(ns), exist_ok=True)
            lines = ["127.0.0.1 localhost", f"127.0.1.1 {self.name[i]}"]
            lines += [f"{self.address[j]} {self.name[j]}" for j in range(self.count) if j != i]
            with open(self.hosts_file(i), "w") as f:
                f.write("\n".join(lines) + "\n")

    @staticmethod
    def _ip_in(ns, *args):
        r = subprocess.run(_in(ns) + ["ip"] + list(args), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)} in {ns}: {r.stderr.strip()}")
        return r.stdout

    def hosts_file(self, i):
        return os.path.join(_files_dir(self.ns[i]), "hosts")

    def close(self):
        if self._closed:
            return
        self._closed = True
        for p in self._procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        for ns in self.ns:
            _remove_namespace(ns)
        if self in _live:
            _live.remove(self)

    # ---- commands -----------------------------------------------------------------------
    def command(self, i, argv):
        """argv wrapped to run on host i (its network, its host name, its /etc/hosts)."""
        return _in(self.ns[i]) + ["unshare", "--uts", "--mount", f"--propagation={_PROPAGATION}", "--", "sh", "-c",
                                  'mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"',
                                  self.hosts_file(i), self.name[i]] + list(argv)

    def popen(self, i, argv, **kwargs):
        """Starts argv on host i in its own session; killed (the whole session) at close."""
        kwargs.setdefault("start_new_session", True)
        p = subprocess.Popen(self.command(i, argv), **kwargs)
        self._procs.append(p)
        return p

    def run(self, i, argv, timeout, **kwargs):
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        p = self.popen(i, argv, stdout=subprocess.PIPE if kwargs.pop("capture_output") else None,
                       stderr=subprocess.PIPE, **kwargs)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            raise AssertionError(f"host {i}: {' '.join(argv)} did not end within {timeout} s\n{err}")
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def counters(self, i):
        """(rx_bytes, tx_bytes) of host i's interface: traffic that really crossed hosts."""
        text = self._ip_in(self.ns[i], "-s", "link", "show", INTERFACE)
        lines = text.splitlines()
        rx = tx = None
        for k, line in enumerate(lines):
            if line.strip().startswith("RX:"):
                rx = int(lines[k + 1].split()[0])
            if line.strip().startswith("TX:"):
                tx = int(lines[k + 1].split()[0])
        return rx, tx

    def exec_in(self, i, argv, check=True):
        """A quick command in host i's namespace (tc, ip), output returned."""
        r = subprocess.run(_in(self.ns[i]) + list(argv), capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"host {i}: {' '.join(argv)}: {r.stderr.strip()}")
        return r
