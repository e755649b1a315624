"""The multinode section of bench/run.py: two hosts made of network namespaces joined by a
veth pair (test/multinode/netns_hosts.py), one process on each, against two processes on
one host (loopback), in the same run. Needs root.

    python3 bench/run.py --only multinode [--quick]

Rows (1 host: both processes on host 0, through Gloo's loopback with ACCELERATE_SHM=0, and
through shared memory as by default):
  all-reduce busbw, 2 hosts / 1 host     allreduce_bandwidth (16 MiB): veth vs loopback (Gloo on
                                         both), and veth vs shared memory
  training step, 2 hosts / 1 host        overhead_train_migrated (the migrated MLP loop), the same pairs
  shaped link (netem 1 ms + 1 Gbit/s; tbf 1 Gbit/s where the kernel has no netem), grad_sync:
    exposed communication per step with overlap (step - compute) and without it (a flat
    all-reduce after backward), and the step with overlap / the step without.
Every configuration runs 2 processes on the same cores, so the Gloo-on-both ratios isolate the network path.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "multinode"))
import netns_hosts  # noqa: E402

GLOBAL_BATCH = 256      # the training row: as bench/run.py's training section
SHAPE_RATE = "1gbit"
SHAPE_DELAY = "1ms"


def _launch(b, hosts, program, on_two_hosts, shm=True):
    """`accelerate launch` of program on 2 processes: 1 per host, or both on host 0 (through
    shared memory, or through Gloo's loopback TCP with shm=False)."""
    launcher = b.exe("launcher/accelerate")
    env = dict(b.env, OMP_NUM_THREADS="1", HF_HOME=os.path.join(b.tmp, "hf"))
    if not shm:
        env["ACCELERATE_SHM"] = "0"
    for name in ("GLOO_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    if not on_two_hosts:
        r = hosts.run(0, [launcher, "launch", "--cpu", "--quiet", "--num_processes", "2"] + program,
                      timeout=900, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(program)} on 1 host failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        return r.stdout
    procs = [hosts.popen(i, [launcher, "launch", "--cpu", "--quiet", "--num_machines", "2", "--machine_rank", str(i),
                             "--main_process_ip", hosts.address[0], "--num_processes", "2"] + program,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    for i, p in enumerate(procs):
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(program)} on host {i} of 2 failed:\n{outs[i][1][-2000:]}")
    return outs[0][0]


def _shape(hosts):
    """Shapes both ends of the link; returns a description of what the kernel allowed."""
    netem = all(hosts.exec_in(i, ["tc", "qdisc", "add", "dev", hosts.interface, "root", "netem", "delay", SHAPE_DELAY,
                                  "rate", SHAPE_RATE], check=False).returncode == 0 for i in range(2))
    if netem:
        return f"netem delay {SHAPE_DELAY} rate {SHAPE_RATE} each way"
    for i in range(2):
        hosts.exec_in(i, ["tc", "qdisc", "del", "dev", hosts.interface, "root"], check=False)
        hosts.exec_in(i, ["tc", "qdisc", "add", "dev", hosts.interface, "root", "tbf", "rate", SHAPE_RATE,
                          "burst", "256kb", "latency", "50ms"])
    return f"tbf rate {SHAPE_RATE} each way (no netem in this kernel: no added delay)"


def _busbw(output, size):
    m = re.search(rf"bench: size_bytes={size} algbw_gbs=([0-9.]+) busbw_gbs=([0-9.]+)", output)
    if not m:
        raise RuntimeError("no all-reduce result for %d bytes:\n%s" % (size, output[-2000:]))
    return float(m.group(2))


def _grad_sync(output):
    def number(pattern):
        m = re.search(pattern, output)
        if not m:
            raise RuntimeError("unexpected grad_sync output:\n" + output[-2000:])
        return float(m.group(1))
    return dict(compute=number(r"compute only \(no_sync\)\s+([0-9.]+) ms"),
                flat=number(r"plain flat all_reduce, same bytes\s+([0-9.]+) ms"),
                step=number(r"step with bucketed sync\s+([0-9.]+) ms"))


def run(b, skip):
    reason = netns_hosts.unavailable_reason()
    if reason:
        raise skip("two hosts of network namespaces are not available: " + reason)
    quick = b.args.quick
    allreduce = b.exe("bench/allreduce_bandwidth")
    train = b.exe("bench/overhead_train_migrated")
    grad_sync = b.exe("bench/grad_sync")
    size = (4 if quick else 16) << 20
    steps = ["--steps", "6" if quick else str(b.args.steps), "--warmup", "2"]
    with netns_hosts.TwoHosts() as hosts:
        # Interleaved rounds (1 host with shared memory, 1 host over Gloo, 2 hosts, ...) so that
        # load changes hit every configuration. 2 hosts over Gloo against 1 host over Gloo is
        # the network path alone; against 1 host with shared memory, what a second host costs.
        configs = {"one-shm": (False, True), "one-gloo": (False, False), "two": (True, True)}
        bw = {k: [] for k in configs}
        step = {k: [] for k in configs}
        for _ in range(1 if quick else b.args.repeats):
            for name, (two, shm) in configs.items():
                out = _launch(b, hosts, [allreduce, "--sizes", str(size), "--iters", "5" if quick else "20"], two, shm)
                bw[name].append(_busbw(out, size))
                out = _launch(b, hosts, [train, "--batch-size", str(GLOBAL_BATCH // 2)] + steps, two, shm)
                step[name].append(float(re.search(r"bench: step_ms=([0-9.]+)", out).group(1)))
        med = lambda v: sorted(v)[len(v) // 2]
        bw = {k: med(v) for k, v in bw.items()}
        step = {k: med(v) for k, v in step.items()}
        mib = size >> 20
        b.add("multinode", "all-reduce busbw, 2 hosts / 1 host, Gloo on both (%d MiB)" % mib,
              bw["two"] / bw["one-gloo"], "2 processes on 1 host, ACCELERATE_SHM=0", "higher (~1)",
              "%.2f vs %.2f GB/s (veth vs loopback)" % (bw["two"], bw["one-gloo"]))
        b.add("multinode", "all-reduce busbw, 2 hosts / 1 host with shared memory (%d MiB)" % mib,
              bw["two"] / bw["one-shm"], "2 processes on 1 host", "higher",
              "%.2f vs %.2f GB/s (Gloo over veth vs shared memory)" % (bw["two"], bw["one-shm"]))
        b.add("multinode", "training step, 2 hosts / 1 host, Gloo on both", step["two"] / step["one-gloo"],
              "2 processes on 1 host, ACCELERATE_SHM=0", "lower (~1)",
              "%.1f vs %.1f ms/step" % (step["two"], step["one-gloo"]))
        b.add("multinode", "training step, 2 hosts / 1 host with shared memory", step["two"] / step["one-shm"],
              "2 processes on 1 host", "lower", "%.1f vs %.1f ms/step" % (step["two"], step["one-shm"]))

        shaped = _shape(hosts)
        # Buckets of about one layer (4 MB), as one would tune DDP for a slow link: the default
        # 25 MB bucket would hold every gradient of this model and start only after backward.
        layers = ["--layers", "2" if quick else "4", "--bucket_mb", "1", "--first_bucket_kb", "1024",
                  "--steps", "3" if quick else "8"]
        g = _grad_sync(_launch(b, hosts, [grad_sync] + layers, True))
        exposed = g["step"] - g["compute"]
        b.add("multinode", "exposed comm with overlap / without (shaped)", exposed / g["flat"],
              "flat all-reduce after backward", "lower",
              "%s; %.0f vs %.0f ms per step exposed" % (shaped, exposed, g["flat"]))
        b.add("multinode", "step with overlap / without (shaped link)", g["step"] / (g["compute"] + g["flat"]),
              "compute + flat all-reduce", "lower",
              "compute %.0f ms, step %.0f ms, without overlap %.0f ms" % (g["compute"], g["step"],
                                                                           g["compute"] + g["flat"]))
