#!/usr/bin/env python3
"""Multi-node runs across two hosts made of network namespaces (netns_hosts.py): 10.77.0.1
and 10.77.0.2 joined by a veth pair, each host running its own launcher, 2 processes per host.

LaunchStylesTests: a migrated program (examples/regression) trained by 4 processes with batch
    B must reproduce 1 process with batch 4B (the final test MSE and every model tensor), when
    started by `accelerate launch --num_machines 2` on each host, by `torchrun --nnodes 2`
    (c10d rendezvous), by Slurm's environment (as srun sets it) and by `mpirun` (Open MPI,
    the hosts as slots). Each run shows that the processes met over the veth: the runtime's
    roll call (ACCELERATE_DEBUG_MODE) lists each host's processes at its real address, and
    the interface counters grew.
StrangersTests: with a job token, strangers on host 1 (no token, a wrong token, random bytes,
    a 4 GB length prefix, one byte a second, a flood of connections), a launcher with another
    token and a fake machine 0 are refused and logged; the job then trains to the right result.
FailuresTests: a failure on one host stops every process on both within 10 s and both
    launchers exit with the failing process's code; a launcher killed on one host stops the
    other; a host that never arrives and a wrong --main_process_ip give clear errors.
SlurmTests: a real Slurm (slurm_cluster.py: Debian's munged, slurmctld and one slurmd per
    host, NodeName = the host's name, all started and stopped by the test, their files in a
    temporary directory): the program with 2 tasks, one per host, must reproduce 1 process
    with the global batch when started by `srun --nodes=2 --ntasks-per-node=1`, by
    `sbatch --wait` of a job script that runs srun, and by srun starting `accelerate launch`
    on each node (2 processes per node).

    test_multinode.py --launcher PATH --program PATH --probe PATH --torchrun PATH
                      [--compare PATH] [TestClass ...]

Exit code 77 (ctest: skipped) when network namespaces cannot be made here (not root, ...).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_hosts  # noqa: E402
import slurm_cluster  # noqa: E402

ARGS = None
STRANGER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stranger.py")
GLOBAL_BATCH = 64           # 1 process: 64; 4 processes: 16 each
TRAIN = ["--epochs", "2", "--train-size", "1024", "--test-size", "256"]
METRIC_RTOL, METRIC_ATOL = 2e-4, 2e-6   # as test/e2e (summation order differs with the process count)
PARAM_ATOL, PARAM_RTOL = 1e-5, 1e-4
RUN_TIMEOUT = 120
_reference = {}


def read(path):
    with open(path) as f:
        return f.read()


def final_metrics(text, what):
    """The `final:` line (possibly behind a launcher's prefix): exactly one, from rank 0."""
    lines = [line[line.index("final: ") + 7:] for line in text.splitlines() if "final: " in line]
    if len(lines) != 1:
        raise AssertionError(f"{what}: expected one 'final:' line, got {len(lines)}:\n{text[-3000:]}")
    return {k: float(v) for k, v in (kv.split("=", 1) for kv in lines[0].split())}


def reference_run(tmp):
    """The program on one process with the global batch (no launcher): the result to match."""
    if not _reference:
        out = os.path.join(tmp, "reference")
        r = subprocess.run([ARGS.program, "--batch-size", str(GLOBAL_BATCH), "--out", out] + TRAIN,
                           capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        if r.returncode != 0:
            raise AssertionError(f"the 1-process reference failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        _reference.update(metrics=final_metrics(r.stdout, "1 process"), out=out)
    return _reference


class TwoHostTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="accel-multinode-")
        cls.tmp = cls._tmp.name
        cls.hosts = netns_hosts.TwoHosts().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()
        cls._tmp.cleanup()

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix=self._testMethodName + "-", dir=self.tmp)
        self.env = dict(os.environ, OMP_NUM_THREADS="1", HF_HOME=os.path.join(self.work, "hf"),
                        ACCELERATE_LAUNCH_GRACE_SECONDS="2")
        for name in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT", "ACCELERATE_JOB_TOKEN"):
            self.env.pop(name, None)

    def start(self, host, argv, name, env=None):
        """argv on host `host`; stdout/stderr to files in the work directory."""
        out = open(os.path.join(self.work, f"{name}.out"), "w")
        err = open(os.path.join(self.work, f"{name}.err"), "w")
        p = self.hosts.popen(host, argv, stdout=out, stderr=err, env=env or self.env)
        p.files = (out.name, err.name)
        p.started = time.time()
        out.close()
        err.close()
        return p

    def finish(self, procs, timeout=RUN_TIMEOUT):
        """Waits for every process; returns [(code, stdout, stderr)]."""
        deadline = time.time() + timeout
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    if q.poll() is None:
                        os.killpg(q.pid, signal.SIGKILL)
                self.fail(f"a process did not end within {timeout} s:\n" + self.logs(procs))
        return [(p.returncode, read(p.files[0]), read(p.files[1])) for p in procs]

    @staticmethod
    def logs(procs):
        text = ""
        for p in procs:
            for f in p.files:
                text += f"--- {os.path.basename(f)}\n" + read(f)[-3000:]
        return text


class LaunchStylesTests(TwoHostTest):
    def program(self, host):
        return [ARGS.program, "--batch-size", str(GLOBAL_BATCH // 4), "--out",
                os.path.join(self.work, f"out{host}")] + TRAIN

    def check_result(self, text, what):
        """Same numbers as 1 process with the global batch; the checkpoint rank 0 wrote too."""
        ref = reference_run(self.tmp)
        got = final_metrics(text, what)
        self.assertEqual(got.keys(), ref["metrics"].keys())
        for k, want in ref["metrics"].items():
            self.assertLessEqual(abs(got[k] - want), METRIC_ATOL + METRIC_RTOL * abs(want),
                                 f"{what}: {k}={got[k]} but 1 process gives {want}")
        if ARGS.compare:
            for name in ("regression_model.pt",):
                mine, theirs = os.path.join(self.work, "out0", name), os.path.join(ref["out"], name)
                r = subprocess.run([ARGS.compare, mine, theirs, str(PARAM_ATOL), str(PARAM_RTOL)],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, f"{what}: {name} differs from 1 process:\n{r.stdout}{r.stderr}")
        print(f"  {what}: {got} (1 process: {ref['metrics']})", flush=True)

    def check_met_over_the_link(self, text, before, ranks=("0-1", "2-3")):
        """The roll call put the ranks ranks[0] (by default 0-1) at host 0's address and
        ranks[1] (2-3) at host 1's; bytes crossed."""
        h = self.hosts
        want = f"{ranks[0]} on {h.name[0]} ({h.address[0]}), {ranks[1]} on {h.name[1]} ({h.address[1]})"
        self.assertIn("processes met at", text)
        self.assertIn(want, text)
        after = [h.counters(i) for i in range(2)]
        crossed = [after[i][1] - before[i][1] for i in range(2)]
        # Both hosts sent gradients: at least the model (4.8k parameters, fp32) for each of 32 steps.
        self.assertTrue(all(c > 32 * 4 * 4000 for c in crossed), f"bytes sent over the veth: {crossed}")

    def test_accelerate_launch(self):
        before = [self.hosts.counters(i) for i in range(2)]
        env = dict(self.env, ACCELERATE_DEBUG_MODE="true")
        procs = [self.start(i, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", str(i),
                                "--main_process_ip", self.hosts.address[0], "--num_processes", "4"] + self.program(i),
                            f"host{i}", env)
                 for i in range(2)]
        results = self.finish(procs)
        for i, (code, out, err) in enumerate(results):
            self.assertEqual(code, 0, f"host {i}:\n" + self.logs(procs))
        self.check_result(results[0][1], "accelerate launch, 2 hosts x 2")
        self.check_met_over_the_link(results[0][2], before)
        # Gloo's address came from the route to MASTER_ADDR, not from the host name.
        self.assertIn(f"Gloo on {self.hosts.address[1]} (the local address that routes to MASTER_ADDR="
                      f"{self.hosts.address[0]})", results[1][2])

    def test_network_interface_flag(self):
        env = dict(self.env, ACCELERATE_DEBUG_MODE="true")
        procs = [self.start(i, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", str(i),
                                "--main_process_ip", self.hosts.address[0], "--num_processes", "4",
                                "--network_interface", self.hosts.interface] + self.program(i),
                            f"host{i}", env)
                 for i in range(2)]
        results = self.finish(procs)
        for i, (code, out, err) in enumerate(results):
            self.assertEqual(code, 0, f"host {i}:\n" + self.logs(procs))
            self.assertIn(f"Gloo on {self.hosts.interface} (GLOO_SOCKET_IFNAME={self.hosts.interface})", err)
        self.check_result(results[0][1], "accelerate launch --network_interface")
        bad = self.hosts.run(0, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", "0",
                                 "--main_process_ip", self.hosts.address[0], "--num_processes", "4",
                                 "--network_interface", "eth9", ARGS.program], timeout=30, env=self.env)
        self.assertEqual(bad.returncode, 1, bad.stderr)
        self.assertIn("--network_interface eth9: no such interface on this machine", bad.stderr)
        self.assertIn(f"{self.hosts.interface} {self.hosts.address[0]}", bad.stderr)

    def test_torchrun(self):
        if not os.path.exists("/usr/bin/torchrun"):
            self.skipTest("no /usr/bin/torchrun (python3-torch)")
        before = [self.hosts.counters(i) for i in range(2)]
        env = dict(self.env, ACCELERATE_DEBUG_MODE="true")
        # The endpoint is host 0's name, as on a cluster: torchrun hosts its store on the
        # machine whose name it is.
        procs = [self.start(i, ["/usr/bin/python3", ARGS.torchrun, "--nnodes", "2", "--nproc_per_node", "2",
                                "--rdzv_backend", "c10d", "--rdzv_endpoint", f"{self.hosts.name[0]}:29400",
                                "--rdzv_id", "multinode", "--no_python", "--redirects", "1", "--tee", "1",
                                "--log_dir", os.path.join(self.work, f"torchrun-logs{i}")] + self.program(i),
                            f"host{i}", env)
                 for i in range(2)]
        results = self.finish(procs)
        for i, (code, out, err) in enumerate(results):
            self.assertEqual(code, 0, f"host {i}:\n" + self.logs(procs))
        # torchrun numbers the machines in the order they join: rank 0 may be on either host.
        both = results[0][1] + results[1][1]
        self.check_result(both, "torchrun --nnodes 2")
        self.check_met_over_the_link("".join(r[1] + r[2] for r in results), before)

    def test_slurm_environment(self):
        before = [self.hosts.counters(i) for i in range(2)]
        nodes = f"{self.hosts.name_prefix}[0-1]"
        procs = []
        for rank in range(4):
            host, local = divmod(rank, 2)
            env = dict(self.env, ACCELERATE_DEBUG_MODE="true", SLURM_PROCID=str(rank), SLURM_LOCALID=str(local),
                       SLURM_NODEID=str(host), SLURM_NTASKS="4", SLURM_NPROCS="4", SLURM_NTASKS_PER_NODE="2(x2)",
                       SLURM_STEP_NUM_TASKS="4", SLURM_NNODES="2", SLURM_JOB_NUM_NODES="2",
                       SLURM_JOB_NODELIST=nodes, SLURM_STEP_NODELIST=nodes, SLURM_JOB_ID="4242", SLURM_STEP_ID="0")
            procs.append(self.start(host, self.program(host), f"rank{rank}", env))
        results = self.finish(procs)
        for rank, (code, out, err) in enumerate(results):
            self.assertEqual(code, 0, f"rank {rank}:\n" + self.logs(procs))
        self.check_result(results[0][1], "Slurm environment (srun), 2 hosts x 2")
        self.check_met_over_the_link(results[0][2], before)

    def mpirun_agent(self):
        """mpirun starts its daemon on the other host through an ssh-like agent: here a script
        that enters that host's namespace and runs the command line as ssh's remote shell would,
        with a login's environment (PATH and HOME only, as sshd gives), so that whatever the
        processes need from the launch must come through mpirun (-x), as on two machines."""
        agent = os.path.join(self.work, "host-agent.sh")
        login = ["env", "-i", f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}", "HOME=/root"]
        cases = "\n".join(f'  {self.hosts.address[i]}|{self.hosts.name[i]}) exec '
                          + shlex.join(self.hosts.command(i, login + ["sh", "-c", 'eval "exec $*"', "host-agent"]))
                          + ' "$@" ;;' for i in range(2))
        with open(agent, "w") as f:
            f.write(f'#!/bin/sh\nhost=$1; shift\ncase "$host" in\n{cases}\n'
                    f'  *) echo "host-agent: unknown host $host" >&2; exit 255 ;;\nesac\n')
        os.chmod(agent, 0o755)
        return agent

    def test_mpirun(self):
        if shutil.which("mpirun") is None:
            self.skipTest("no mpirun (Debian's openmpi-bin)")
        before = [self.hosts.counters(i) for i in range(2)]
        net = f"{netns_hosts.SUBNET}.0/24"
        cmd = ["mpirun", "--allow-run-as-root", "-np", "4",
               "--host", f"{self.hosts.address[0]}:2,{self.hosts.address[1]}:2",
               "--mca", "plm_rsh_agent", self.mpirun_agent(), "--mca", "oob_tcp_if_include", net,
               "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", net,
               "-x", f"MASTER_ADDR={self.hosts.address[0]}", "-x", "MASTER_PORT=29500", "-x", "OMP_NUM_THREADS=1",
               "-x", "ACCELERATE_DEBUG_MODE=true", "-x", "PATH", "-x", "LD_LIBRARY_PATH"]
        procs = [self.start(0, cmd + self.program(0), "mpirun")]
        (code, out, err), = self.finish(procs)
        self.assertEqual(code, 0, self.logs(procs))
        self.check_result(out, "mpirun -np 4 over 2 hosts")
        self.check_met_over_the_link(err, before)

    # `accelerate launch --mpirun_hostfile` (issue 50), as the reference's launcher: the
    # installed mpirun starts the 4 processes on the hostfile's 2 hosts, with the launch's
    # settings exported (-x) and MASTER_ADDR the file's first host. Open MPI's own options
    # (its agent, its interfaces, root) come from OMPI_MCA_* variables, as a user's would.
    # A comment, not a docstring: unittest -v then prints the test's name and its "skipped"
    # on one line, where the test command's skip check reads them (Debian 13 has no mpirun).
    def test_launch_mpirun_hostfile(self):
        if shutil.which("mpirun") is None:
            self.skipTest("no mpirun (Debian's openmpi-bin)")
        before = [self.hosts.counters(i) for i in range(2)]
        hostfile = os.path.join(self.work, "hosts")
        with open(hostfile, "w") as f:
            f.write(f"# the two namespace hosts\n{self.hosts.address[0]} slots=2\n{self.hosts.address[1]} slots=2\n")
        net = f"{netns_hosts.SUBNET}.0/24"
        self.env = dict(self.env, OMPI_MCA_plm_rsh_agent=self.mpirun_agent(), OMPI_MCA_oob_tcp_if_include=net,
                        OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include=net, OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        launch = [ARGS.launcher, "launch", "--cpu", "--debug", "--mpirun_hostfile", hostfile, "--num_processes", "4",
                  "--num_machines", "2", "--num_cpu_threads_per_process", "1"]
        procs = [self.start(0, launch + self.program(0), "launch-mpirun")]
        (code, out, err), = self.finish(procs)
        self.assertEqual(code, 0, self.logs(procs))
        self.assertIn(f"starting 4 processes with mpirun (MASTER_ADDR={self.hosts.address[0]} MASTER_PORT=29500, "
                      f"mixed precision no, cpu): mpirun --hostfile {hostfile} --npernode 2 -n 4", err)
        self.check_result(out, "accelerate launch --mpirun_hostfile, 4 processes over 2 hosts")
        self.check_met_over_the_link(err, before)


class SlurmTests(TwoHostTest):
    """Jobs under a real Slurm across the two hosts: slurmctld on host 0 and a slurmd on each
    host (NodeName = the host's name, NodeAddr = its veth address), so srun's tasks run in
    their node's namespaces exactly as they would on two machines, and the environment is
    what Debian's Slurm (22.05 on Debian 12, 24.11 on Debian 13) sets, not a copy of it. Two slurmd can run on
    one machine because each namespace host has its own network (its own address and port
    6818, slurmctld's 6817 on host 0) and its own host name, which is the slurmd's NodeName.
    2 tasks, one per node, each with half the global batch, must reproduce 1 process with
    the global batch (reference_run, check_result: the final test MSE and the checkpoint's
    tensors), and the runtime's roll call must show each task at its host's veth address.

    test_srun gives no --ntasks-per-node (srun then sets no SLURM_NTASKS_PER_NODE: the runtime
    must count this node's tasks from SLURM_STEP_TASKS_PER_NODE, else the roll call shows
    both tasks on one machine at 127.0.0.1); the job script also runs the program once
    without srun, which must run alone and say so (docs/multi-node.md#slurm).

    Needs root and network namespaces (else exit 77, as every multinode test); the Slurm and
    munge packages are installed by scripts/bootstrap.sh and their absence is a failure."""
    check_result = LaunchStylesTests.check_result
    check_met_over_the_link = LaunchStylesTests.check_met_over_the_link
    TASKS = ["--nodes=2", "--ntasks-per-node=1"]

    @classmethod
    def setUpClass(cls):
        missing = slurm_cluster.missing_programs()
        if missing:
            raise AssertionError(f"{', '.join(missing)} not found: Debian's munge, slurmctld, slurmd and "
                                 "slurm-client packages are needed (scripts/bootstrap.sh installs them)")
        super().setUpClass()
        try:
            os.chmod(cls.tmp, 0o711)  # munged: every directory above its socket searchable
            cls.cluster = slurm_cluster.SlurmCluster(cls.hosts, tempfile.mkdtemp(prefix="slurm-", dir=cls.tmp))
            cls.cluster.__enter__()
        except BaseException:
            super().tearDownClass()
            raise
        print(f"  Slurm: munged, slurmctld and 2 slurmd started, both nodes idle after "
              f"{cls.cluster.setup_seconds:.1f} s", flush=True)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.cluster.stop()
        finally:
            super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.env = self.cluster.env(dict(self.env, ACCELERATE_DEBUG_MODE="true"))

    def program(self, tasks=2, out="out0"):
        return [ARGS.program, "--batch-size", str(GLOBAL_BATCH // tasks), "--out",
                os.path.join(self.work, out)] + TRAIN

    def logs(self, procs):
        return super().logs(procs) + self.cluster.logs()

    @staticmethod
    def took(procs):
        return f"{time.time() - procs[0].started:.1f} s"

    def test_srun(self):
        before = [self.hosts.counters(i) for i in range(2)]
        procs = [self.start(0, [slurm_cluster.program("srun"), "--nodes=2", "--ntasks=2", "--kill-on-bad-exit=1"]
                            + self.program(), "srun")]
        (code, out, err), = self.finish(procs)
        self.assertEqual(code, 0, self.logs(procs))
        self.check_result(out, f"srun --nodes=2 --ntasks=2 ({self.took(procs)})")
        self.check_met_over_the_link(err, before, ranks=("0", "1"))

    def test_sbatch_wait(self):
        before = [self.hosts.counters(i) for i in range(2)]
        output = os.path.join(self.work, "job.out")
        script = os.path.join(self.work, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n"
                    f"#SBATCH {' '.join(self.TASKS)}\n"
                    f"#SBATCH --output={output}\n"
                    f"{shlex.join(self.program(out='alone'))} > /dev/null || exit 9\n"
                    f"srun --kill-on-bad-exit=1 {shlex.join(self.program())}\n")
        procs = [self.start(0, [slurm_cluster.program("sbatch"), "--wait", script], "sbatch")]
        (code, out, err), = self.finish(procs)
        job = read(output) if os.path.exists(output) else "(no job output)"
        self.assertEqual(code, 0, self.logs(procs) + "--- job.out\n" + job[-3000:])
        self.assertRegex(out, r"Submitted batch job \d+")
        self.assertIn("accelerate: note: SLURM_NTASKS=2 but this process was not started by srun", job)
        self.check_result(job, f"sbatch --wait, srun in the job script ({self.took(procs)})")
        self.check_met_over_the_link(job, before, ranks=("0", "1"))

    def test_srun_accelerate_launch(self):
        """srun starts one launcher per node (docs/multi-node.md#slurm): its rank is the node's,
        machine 0 is the first node of the job."""
        before = [self.hosts.counters(i) for i in range(2)]
        launch = ('exec "$0" launch --cpu --num_machines "$SLURM_NNODES" --machine_rank "$SLURM_NODEID" '
                  '--main_process_ip "$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)" '
                  '--num_processes 4 "$@"')
        procs = [self.start(0, [slurm_cluster.program("srun")] + self.TASKS + ["--kill-on-bad-exit=1", "sh", "-c",
                                launch, ARGS.launcher] + self.program(tasks=4), "srun-launch")]
        (code, out, err), = self.finish(procs)
        self.assertEqual(code, 0, self.logs(procs))
        self.check_result(out, f"srun of accelerate launch, 2 nodes x 2 ({self.took(procs)})")
        self.check_met_over_the_link(err, before)


class FailuresTests(TwoHostTest):
    """Failures across the link, with a job token: every message after the rendezvous carries
    a MAC, so failures, heartbeats, stops, restarts and verdicts all travel sealed here
    (LaunchStylesTests run without a token)."""

    def setUp(self):
        super().setUp()
        self.env["ACCELERATE_JOB_TOKEN"] = "failures-tests-token-" + os.urandom(8).hex()

    def launch_pair(self, program, extra=(), hosts=(0, 1)):
        return [self.start(i, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", str(i),
                               "--main_process_ip", self.hosts.address[0], "--num_processes", "4"] + list(extra)
                           + program, f"host{i}")
                for i in hosts]

    def pids(self, piddir, count):
        deadline = time.time() + 30
        while time.time() < deadline and len(os.listdir(piddir)) < count:
            time.sleep(0.05)
        return [int(read(os.path.join(piddir, f))) for f in os.listdir(piddir)]

    @staticmethod
    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def still_alive(self, pids, deadline):
        """The pids alive at `deadline` (or none, as soon as all are gone)."""
        while True:
            alive = [p for p in pids if self.alive(p)]
            if not alive or time.time() >= deadline:
                return alive
            time.sleep(0.05)

    def wait_all(self, procs, timeout):
        """Waits for every launcher; returns their codes, stderr and when each ended."""
        deadline = time.time() + timeout
        out = []
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                self.fail(f"a launcher did not end within {timeout} s:\n" + self.logs(procs))
            out.append((p.returncode, read(p.files[1]), time.time()))
        return out

    def test_failure_on_one_host_stops_every_process_on_both(self):
        piddir = os.path.join(self.work, "pids")
        os.makedirs(piddir)
        # Rank 3 (host 1) exits with 7 after 0.5 s; the others sleep, outside any collective:
        # only the launchers' link can stop them.
        procs = self.launch_pair([ARGS.probe, "fail", "3", "7", piddir])
        pids = self.pids(piddir, 4)
        self.assertEqual(len(pids), 4, self.logs(procs))
        failed_at = time.time()
        codes = []
        for p in procs:
            p.wait(timeout=30)
            codes.append((p.returncode, time.time() - failed_at))
        print(f"  stop after the failure: {[round(t, 2) for _, t in codes]} s", flush=True)
        for i, (code, took) in enumerate(codes):
            self.assertEqual(code, 7, f"host {i}:\n" + self.logs(procs))
            self.assertLess(took, 10.0)
        self.assertEqual(self.still_alive(pids, failed_at + 10.0), [])
        err0 = read(procs[0].files[1])
        self.assertIn(f"rank 3 on machine 1 (host {self.hosts.name[1]}) exited with code 7", err0)
        self.assertIn("exiting with code 7", err0)

    def test_lost_machine_stops_the_other(self):
        piddir = os.path.join(self.work, "pids")
        os.makedirs(piddir)
        procs = self.launch_pair([ARGS.probe, "sleep", piddir])
        pids = self.pids(piddir, 4)
        self.assertEqual(len(pids), 4, self.logs(procs))
        os.killpg(procs[1].pid, signal.SIGKILL)  # host 1's launcher (and its processes) vanish
        killed_at = time.time()
        procs[0].wait(timeout=30)
        took = time.time() - killed_at
        err0 = read(procs[0].files[1])
        self.assertEqual(procs[0].returncode, 1, err0)
        self.assertLess(took, 10.0)
        self.assertIn(f"lost contact with machine 1 (host {self.hosts.name[1]})", err0)
        # Host 1's processes go with their launcher (parent-death signal), host 0's are stopped.
        self.assertEqual(self.still_alive(pids, killed_at + 10.0), [])
        print(f"  host 0 stopped {took:.2f} s after host 1's launcher was killed; every process gone after "
              f"{time.time() - killed_at:.2f} s", flush=True)

    def test_silent_machine_is_noticed(self):
        piddir = os.path.join(self.work, "pids")
        os.makedirs(piddir)
        procs = self.launch_pair([ARGS.probe, "sleep", piddir])
        self.assertEqual(len(self.pids(piddir, 4)), 4, self.logs(procs))
        # Host 1's launcher freezes (as a machine that hangs or loses its network): its
        # connection stays open, only the heartbeats stop.
        os.kill(procs[1].pid, signal.SIGSTOP)
        frozen_at = time.time()
        procs[0].wait(timeout=30)
        took = time.time() - frozen_at
        err0 = read(procs[0].files[1])
        os.killpg(procs[1].pid, signal.SIGKILL)
        self.assertEqual(procs[0].returncode, 1, err0)
        self.assertLess(took, 10.0)
        self.assertIn(f"lost contact with machine 1 (host {self.hosts.name[1]}): no heartbeat for 5 s", err0)

    def test_restart_on_every_machine(self):
        # Rank 3 fails in the first attempt only: both machines restart together and succeed.
        script = 'if [ "$RANK" = 3 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exit 7; fi; sleep 1'
        procs = self.launch_pair(["sh", "-c", script], ["--max_restarts", "1"])
        results = self.wait_all(procs, 60)
        for i, (code, err, _) in enumerate(results):
            self.assertEqual(code, 0, f"host {i}:\n" + self.logs(procs))
            self.assertIn("restarting every process (restart 1 of at most 1)", err)
        self.assertIn(f"rank 3 on machine 1 (host {self.hosts.name[1]}) exited with code 7", results[0][1])

    def test_machine_that_never_arrives(self):
        started = time.time()
        procs = self.launch_pair([ARGS.probe, "sleep", self.work], ["--rdzv_timeout", "3"], hosts=(0,))
        (code, err, _), = self.wait_all(procs, 30)
        self.assertEqual(code, 1, err)
        self.assertIn("rendezvous timed out after 3 s (--rdzv_timeout): machine 1 never joined at "
                      f"{self.hosts.address[0]}:29501", err)
        self.assertLess(time.time() - started, 15)
        # The processes' own rendezvous names a missing process the same way (here: rank 1 of
        # 2 is never started; torchrun, Slurm and mpirun jobs meet this one).
        env = dict(self.env, RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                   MASTER_ADDR=self.hosts.address[0], MASTER_PORT="29500", ACCELERATE_RDZV_TIMEOUT="3")
        r = self.hosts.run(0, [ARGS.program] + TRAIN, timeout=60, env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("timed out after 3s waiting for process 1 (never arrived; arrived: 0 on "
                      f"{self.hosts.name[0]} ({self.hosts.address[0]}))", r.stderr)

    def test_wrong_main_process_ip(self):
        # On machine 0: not one of its addresses.
        wrong = f"{netns_hosts.SUBNET}.9"
        r = self.hosts.run(0, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", "0",
                               "--main_process_ip", wrong, "--num_processes", "4", ARGS.probe, "sleep", self.work],
                           timeout=30, env=self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"--main_process_ip {wrong} is not an address of this machine", r.stderr)
        # On another machine: nobody answers there (bounded by --rdzv_timeout), or no route at all.
        r = self.hosts.run(1, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", "1",
                               "--main_process_ip", wrong, "--num_processes", "4", "--rdzv_timeout", "3",
                               ARGS.probe, "sleep", self.work], timeout=30, env=self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"machine 0 never answered at {wrong}:29501 within 3 s", r.stderr)
        r = self.hosts.run(1, [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", "1",
                               "--main_process_ip", "192.0.2.1", "--num_processes", "4",
                               ARGS.probe, "sleep", self.work], timeout=30, env=self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("this machine has no route to --main_process_ip 192.0.2.1", r.stderr)


class StrangersTests(TwoHostTest):
    """A job with a job token (docs/security.md) while strangers on host 1 reach machine 0's
    rendezvous port: each is refused and logged with its address, machine 0's launcher keeps
    its memory, and the job then trains to the 1-process result."""
    program = LaunchStylesTests.program
    check_result = LaunchStylesTests.check_result

    def launcher(self, i, token_file, extra=()):
        return [ARGS.launcher, "launch", "--cpu", "--num_machines", "2", "--machine_rank", str(i),
                "--main_process_ip", self.hosts.address[0], "--num_processes", "4", "--job_token_file",
                token_file] + list(extra)

    def stranger(self, *args, port="29501"):
        name = f"stranger-{args[0]}-{port}-{time.monotonic_ns()}"
        return self.start(1, [sys.executable, STRANGER, "connect", self.hosts.address[0], port] + list(args), name)

    def result(self, p):
        p.wait(timeout=40)
        out = read(p.files[0])
        self.assertEqual(p.returncode, 0, read(p.files[1]))
        return json.loads(out)

    @staticmethod
    def peak_memory_kib(pid):
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])

    def test_strangers_are_refused_and_the_job_trains_on(self):
        token_file = os.path.join(self.work, "job.token")  # machine 0 writes it: it does not exist yet
        main = self.start(0, self.launcher(0, token_file) + self.program(0), "host0")
        deadline = time.time() + 30
        while not os.path.exists(token_file) and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(os.stat(token_file).st_mode & 0o777, 0o600, self.logs([main]))
        token = read(token_file).strip()
        while "to join at" not in read(main.files[1]) and time.time() < deadline:  # machine 0 listens
            time.sleep(0.05)
        memory_before = self.peak_memory_kib(main.pid)
        # The flood first: it evicts the oldest waiting connections, which would include the
        # slow stranger were it already there.
        flood = self.result(self.stranger("flood"))
        strangers = [self.stranger(m, "not-this-jobs-token-0123456789")
                     for m in ("no-token", "wrong-token", "random", "prefix", "newlines", "slow")]
        # The processes' store (machine 0's launcher serves it at 29500 with a token): the
        # start of a TCPStore SET with a 4 GB key held open blocked LibTorch's store for as
        # long as it was held (results/2026-11-26-store-strangers.txt).
        at_store = [self.stranger(m, port="29500") for m in ("store-set", "random", "prefix", "no-token")]
        # A launcher with another token, and one that meets a fake machine 0, fail clearly.
        other = os.path.join(self.work, "other.token")
        with open(os.open(other, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("another-jobs-token-0123456789\n")
        wrong = self.hosts.run(1, self.launcher(1, other) + self.program(1), timeout=30, env=self.env)
        fake = self.start(0, [sys.executable, STRANGER, "fake-main", "29611", token], "fake-main")
        time.sleep(0.3)
        fooled = self.hosts.run(1, self.launcher(1, token_file, ["--main_process_port", "29610"]) + self.program(1),
                                timeout=30, env=self.env)
        results = {r["mode"]: r for r in [flood] + [self.result(p) for p in strangers + [fake]]}
        store_results = {r["mode"]: r for r in [self.result(p) for p in at_store]}
        memory_after = self.peak_memory_kib(main.pid)
        # Only now machine 1 joins: every stranger has been dealt with, the slow one included;
        # a second flood arrives with it (machine 0 may drop machine 1's first connection
        # among the oldest waiting ones: machine 1 then connects again).
        flood2 = self.stranger("flood")
        # While the processes meet: 100 connections held at the store (more than it lets wait)
        # and a half-sent TCPStore request; the processes' connections must still get through.
        store_flood = self.stranger("flood-hold", port="29500")
        store_held = self.stranger("store-set", port="29500")
        member = self.start(1, self.launcher(1, token_file) + self.program(1), "host1")
        codes = [code for code, _, _ in self.finish([main, member])]
        store_flood_result = self.result(store_flood)
        self.assertGreater(store_flood_result["dropped"], 0, "the store never dropped a waiting connection")
        # Asked for a proof and dropped after 10 s, or, among the flood, turned away at once.
        self.assertIsNotNone(self.result(store_held)["closed_after"], "the store kept a stranger's connection")
        flood2.wait(timeout=40)
        self.assertEqual(flood2.returncode, 0, read(flood2.files[1]))
        print("  machine 1 joined during a second flood" +
              (", after connecting again" if "connecting again" in read(member.files[1]) else ""), flush=True)
        self.assertEqual(codes, [0, 0], self.logs([main, member]))
        err0 = read(main.files[1])
        self.check_result(read(main.files[0]), "2 hosts x 2 after the strangers")
        self.check_refusals(err0, results)
        self.check_store_refusals(err0, store_results)
        self.assertEqual(wrong.returncode, 1, wrong.stderr)
        self.assertIn("refused this machine: its job token is not this job's", wrong.stderr)
        self.assertEqual(fooled.returncode, 1, fooled.stderr)
        self.assertIn("did not prove that it holds this job's token", fooled.stderr)
        self.assertTrue(results["fake-main"]["hello_had_proof"])
        self.assertFalse(results["fake-main"]["token_in_hello"])
        self.assertNotIn(token, err0 + read(member.files[1]) + wrong.stderr + fooled.stderr)
        # 24 MiB arrived from the random and prefix strangers, and empty lines from another:
        # none of it is kept. Measured over
        # 8 runs beside a clang-tidy run (results/2026-11-26-strangers-8-runs.txt): memory
        # growth 148-308 KiB (limit 8 MiB; keeping the prefix stranger's bytes alone would add
        # 16 MiB); slow stranger dropped after 10.0-11.0 s (it cannot be under 10 s: the clock
        # starts before it connects; limit 15 s). Measured again on 2026-11-30: growth
        # 2280-2480 KiB, 2276-3172 KiB under the test command's malloc on huge pages
        # (results/2026-11-30-malloc-hugetlb.txt): the launcher grew since, still 2.5x under the limit.
        grew = memory_after - memory_before
        print(f"  machine 0's launcher: peak memory {memory_before} KiB before the strangers, {memory_after} "
              f"KiB after; slow stranger dropped after {results['slow']['closed_after']:.1f} s; flood: "
              f"{results['flood']['closed']} of 50 dropped", flush=True)
        self.assertLess(grew, 8 * 1024, "machine 0's launcher kept what strangers sent")

    def relay(self, port, alter):
        """A man in the middle on host 0 at `port` (and port + 1) in front of machine 0's 29500."""
        p = self.start(0, [sys.executable, STRANGER, "relay", str(port), self.hosts.address[0], "29500", alter],
                       f"relay-{alter}")
        deadline = time.time() + 10
        while "listening" not in read(p.files[0]) and time.time() < deadline:
            time.sleep(0.05)
        return p

    def test_messages_altered_on_the_way_are_refused(self):
        """Someone on the path between the machines (docs/security.md): a hello whose flags were
        changed is refused (its proof covers the whole hello), and after the rendezvous a forged
        message is not obeyed (every message carries a MAC): the job ends, naming the check."""
        token_file = os.path.join(self.work, "job.token")
        main = self.start(0, self.launcher(0, token_file) + self.program(0), "host0")
        deadline = time.time() + 30
        while "to join at" not in read(main.files[1]) and time.time() < deadline:
            time.sleep(0.05)
        # A field changed in place, and fields appended after the proof (parsed last, they
        # would win): both make the proof fail.
        for port, alter, note in ((29620, "hello", "altered the hello"), (29640, "hello-append", "appended to")):
            relay = self.relay(port, alter)
            altered = self.hosts.run(1, self.launcher(1, token_file, ["--main_process_port", str(port)]) +
                                     self.program(1), timeout=30, env=self.env)
            relay.kill()
            self.assertIn(note, read(relay.files[0]))
            self.assertEqual(altered.returncode, 1, altered.stderr)
            self.assertIn("refused this machine: its job token is not this job's (or its hello was altered on the way)",
                          altered.stderr)
            # Refusals carry no proof (one for a nonce a stranger chose would help it guess the token).
            self.assertIn("not proven to come from this job's machine 0", altered.stderr)
        self.assertNotIn("host=evil", read(main.files[1]))
        member = self.start(1, self.launcher(1, token_file) + self.program(1), "host1")
        self.assertEqual([code for code, _, _ in self.finish([main, member])], [0, 0], self.logs([main, member]))
        self.assertRegex(read(main.files[1]), re.escape(f"refused a connection from {self.hosts.address[0]}:") +
                         r"\d+: its job token is not this job's \(or its hello was altered on the way\)")
        self.check_result(read(main.files[0]), "2 hosts x 2 after an altered hello")

        token_file = os.path.join(self.work, "job2.token")
        main = self.start(0, self.launcher(0, token_file) + self.program(0), "host0-forged")
        while "to join at" not in read(main.files[1]) and time.time() < deadline + 60:
            time.sleep(0.05)
        relay = self.relay(29630, "after-start")
        member = self.start(1, self.launcher(1, token_file, ["--main_process_port", "29630"]) + self.program(1),
                            "host1-forged")
        codes = [code for code, _, _ in self.finish([main, member])]
        relay.kill()
        self.assertIn("forged a stop", read(relay.files[0]))
        err1 = read(member.files[1])
        self.assertNotEqual(codes[1], 0, self.logs([main, member]))
        self.assertIn("a message from its launcher failed its check", err1, self.logs([main, member]))
        self.assertNotIn("forged by a relay", err1 + read(member.files[0]) + read(main.files[1]))
        print(f"  altered hello refused; forged stop not obeyed (exit codes {codes})", flush=True)

    def check_store_refusals(self, err0, results):
        """The processes' store asked each stranger for a proof and dropped it, logged with host
        1's address; the job (started after them) trained to the 1-process result."""
        self.assertTrue(results["store-set"]["challenge_ok"], results["store-set"])
        peer = f"the processes' store refused a connection from {self.hosts.address[1]}:"
        for why in ("it proved nothing within 10 s", "not a process of this job (a line over 256 bytes)",
                    "it did not prove the job's store key"):
            self.assertRegex(err0, re.escape(peer) + r"\d+: " + re.escape(why))
        self.assertGreaterEqual(results["store-set"]["closed_after"], 9.5)
        self.assertLess(results["store-set"]["closed_after"], 15.0)
        for mode in ("random", "prefix", "no-token"):
            self.assertIsNotNone(results[mode]["closed_after"], f"store {mode}: kept the connection")
            self.assertLess(results[mode]["closed_after"], 5.0, f"store {mode}")
        self.assertLess(results["prefix"]["sent"], 16 << 20, "the store read 16 MiB without a newline")
        self.assertIn("the processes' store refused", err0)

    def check_refusals(self, err0, results):
        """Machine 0 logged each stranger with host 1's address and told the hello senders why."""
        peer = f"refused a connection from {self.hosts.address[1]}:"
        for why in ("it has no job token and this job has one", "its job token is not this job's",
                    "not a launcher (its first message was not a hello)", "not a launcher (a line over 64 KiB)",
                    "no hello within 10 s", "more than 32 connections at once without a hello"):
            self.assertRegex(err0, re.escape(peer) + r"\d+: " + re.escape(why))
        self.assertIn("refused reason=it has no job token", results["no-token"]["reply"])
        self.assertIn("refused reason=its job token is not this job's", results["wrong-token"]["reply"])
        for mode in ("no-token", "wrong-token", "random", "prefix", "newlines"):
            self.assertIsNotNone(results[mode]["closed_after"], f"{mode}: machine 0 kept the connection")
            self.assertLess(results[mode]["closed_after"], 5.0, mode)
        self.assertLess(results["prefix"]["sent"], 16 << 20, "machine 0 read 16 MiB without a newline")
        self.assertLess(results["newlines"]["sent"], 16 << 20, "machine 0 read 16 MiB of empty lines")
        self.assertGreaterEqual(results["slow"]["closed_after"], 9.5)
        self.assertLess(results["slow"]["closed_after"], 15.0)
        self.assertGreaterEqual(results["flood"]["closed"], 50 - 32)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    for name in ("launcher", "program", "probe", "torchrun"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--compare")
    ARGS, rest = parser.parse_known_args()
    reason = netns_hosts.unavailable_reason()
    if reason:
        print(f"SKIPPED: two hosts made of network namespaces are not available here: {reason}")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
