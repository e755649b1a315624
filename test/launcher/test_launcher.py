#!/usr/bin/env python3
"""Starts real processes through the `accelerate` launcher and checks what they see and
what the launcher does with them. Run by ctest (see CMakeLists.txt):

    test_launcher.py --launcher PATH --probe PATH [TestClass ...]
"""
import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

LAUNCHER = None
PROBE = None


def base_env(tmp):
    env = dict(os.environ)
    # Each test has its own HF_HOME: no default config unless the test writes one.
    env["HF_HOME"] = os.path.join(tmp, "hf")
    for name in ("OMP_NUM_THREADS", "ACCELERATE_CONFIG_FILE", "CUDA_VISIBLE_DEVICES", "XDG_CACHE_HOME",
                 "ACCELERATE_JOB_TOKEN"):
        env.pop(name, None)
    env["ACCELERATE_LAUNCH_GRACE_SECONDS"] = "2"
    return env


def run(args, env, timeout=60, stdin=None):
    """`accelerate launch ARGS`, in the test's HF_HOME parent (its temporary directory)."""
    return subprocess.run([LAUNCHER, "launch"] + args, env=env, capture_output=True, text=True,
                          timeout=timeout, input=stdin, cwd=os.path.dirname(env["HF_HOME"]))


def read_env(path):
    values, args = {}, []
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("arg="):
                args.append(line[4:])
            elif "=" in line:
                k, v = line.split("=", 1)
                values[k] = v
    return values, args


def read_int(path):
    with open(path) as f:
        return int(f.read())


def alive(pid):
    """True if pid is a live (non-zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except FileNotFoundError:
        return False


def free_port_pair():
    """A free port P with P + 1 free too (several machines: the launchers meet at P + 1)."""
    import socket
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two adjacent free ports")


def wait_for_files(paths, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(os.path.exists(p) and os.path.getsize(p) > 0 for p in paths):
            return True
        time.sleep(0.05)
    return False


class LauncherTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="accel-launcher-")
        self.tmp = self._tmp.name
        self.env = base_env(self.tmp)

    def tearDown(self):
        self._tmp.cleanup()

    def launch_env_probe(self, launch_args, program_args=(), env=None, expect_ranks=None):
        out = os.path.join(self.tmp, "out")
        os.makedirs(out, exist_ok=True)
        for f in os.listdir(out):
            os.remove(os.path.join(out, f))
        r = run(launch_args + [PROBE, "env", out] + list(program_args), env or self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        ranks = {}
        for name in sorted(os.listdir(out)):
            values, args = read_env(os.path.join(out, name))
            ranks[int(values["RANK"])] = (values, args)
        if expect_ranks is not None:
            self.assertEqual(sorted(ranks), expect_ranks, r.stderr)
        return ranks, r

    def start_machine_zero(self, launch_args):
        """Machine 0 of a two-machine launch on this host (loopback): machine 1's launcher
        joins it before starting anything. Its ranks write to their own directory."""
        out = os.path.join(self.tmp, "machine0")
        os.makedirs(out, exist_ok=True)
        return subprocess.Popen([LAUNCHER, "launch"] + launch_args + ["--machine_rank", "0", PROBE, "env", out],
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                cwd=self.tmp)

    def write_config(self, text, path=None):
        path = path or os.path.join(self.tmp, "config.yaml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path


class EnvironmentTests(LauncherTest):
    def test_two_cpu_processes_get_the_contract(self):
        ranks, r = self.launch_env_probe(
            ["--cpu", "--num_processes", "2", "--mixed_precision=bf16", "--gradient-accumulation-steps", "4",
             "--gpu_ids", "0,1", "--split_batches"],
            ["--num_processes", "5", "a b", "--", "-q"], expect_ranks=[0, 1])
        cpus = len(os.sched_getaffinity(0))
        ports = set()
        for rank, (v, args) in ranks.items():
            self.assertEqual(v["LOCAL_RANK"], str(rank))
            self.assertEqual(v["WORLD_SIZE"], "2")
            self.assertEqual(v["LOCAL_WORLD_SIZE"], "2")
            self.assertEqual(v["GROUP_RANK"], "0")
            self.assertEqual(v["NODE_RANK"], "0")
            self.assertEqual(v["MASTER_ADDR"], "127.0.0.1")
            ports.add(v["MASTER_PORT"])
            self.assertEqual(v["ACCELERATE_MIXED_PRECISION"], "bf16")
            self.assertEqual(v["ACCELERATE_USE_CPU"], "true")
            self.assertEqual(v["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"], "4")
            self.assertEqual(v["CUDA_VISIBLE_DEVICES"], "0,1")
            self.assertEqual(v["ACCELERATE_SPLIT_BATCHES"], "true")
            self.assertEqual(v["OMP_NUM_THREADS"], str(max(1, cpus // 2)))
            # Everything after the program is passed through untouched.
            self.assertEqual(args, ["--num_processes", "5", "a b", "--", "-q"])
        self.assertEqual(len(ports), 1)
        self.assertIn("OMP_NUM_THREADS", r.stderr)  # the note, as torchrun prints one

    def test_user_omp_num_threads_is_kept(self):
        env = dict(self.env, OMP_NUM_THREADS="7")
        ranks, _ = self.launch_env_probe(["--cpu", "--num_processes", "2"], env=env, expect_ranks=[0, 1])
        self.assertEqual({v["OMP_NUM_THREADS"] for v, _ in ranks.values()}, {"7"})

    def test_single_process_defaults(self):
        ranks, _ = self.launch_env_probe(["--cpu"], expect_ranks=[0])
        v = ranks[0][0]
        self.assertEqual(v["WORLD_SIZE"], "1")
        self.assertEqual(v["ACCELERATE_MIXED_PRECISION"], "no")
        self.assertNotIn("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", v)
        self.assertNotIn("ACCELERATE_SPLIT_BATCHES", v)
        self.assertNotIn("OMP_NUM_THREADS", v)  # one process: nothing to share

    def test_second_machine_gets_global_ranks(self):
        port = free_port_pair()
        common = ["--cpu", "--num_machines", "2", "--num_processes", "4", "--main_process_ip", "127.0.0.1",
                  "--main_process_port", str(port)]
        machine0 = self.start_machine_zero(common)
        ranks, _ = self.launch_env_probe(common + ["--machine_rank", "1"], expect_ranks=[2, 3])
        _, err = machine0.communicate(timeout=30)
        self.assertEqual(machine0.returncode, 0, err)
        for rank, (v, _) in ranks.items():
            self.assertEqual(v["LOCAL_RANK"], str(rank - 2))
            self.assertEqual(v["WORLD_SIZE"], "4")
            self.assertEqual(v["LOCAL_WORLD_SIZE"], "2")
            self.assertEqual(v["GROUP_RANK"], "1")
            self.assertEqual(v["MASTER_ADDR"], "127.0.0.1")
            self.assertEqual(v["MASTER_PORT"], str(port))

    def test_network_interface_and_rendezvous_timeout_reach_every_process(self):
        env = dict(self.env, NCCL_SOCKET_IFNAME="eth7")
        ranks, _ = self.launch_env_probe(["--cpu", "--num_processes", "2"], env=env, expect_ranks=[0, 1])
        for v, _ in ranks.values():  # as the user set them
            self.assertEqual(v["NCCL_SOCKET_IFNAME"], "eth7")
            self.assertNotIn("GLOO_SOCKET_IFNAME", v)
            self.assertNotIn("ACCELERATE_RDZV_TIMEOUT", v)
        ranks, r = self.launch_env_probe(["--cpu", "--num_processes", "2", "--network_interface", "lo",
                                          "--rdzv_timeout", "42"], env=env, expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["GLOO_SOCKET_IFNAME"], "lo")
            self.assertEqual(v["NCCL_SOCKET_IFNAME"], "lo")
            self.assertEqual(v["ACCELERATE_RDZV_TIMEOUT"], "42")
        self.assertIn("--network_interface lo replaces NCCL_SOCKET_IFNAME=eth7", r.stderr)

    def test_elastic_agent_variables_are_not_inherited(self):
        env = dict(self.env, TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")
        ranks, _ = self.launch_env_probe(["--cpu"], env=env, expect_ranks=[0])
        self.assertNotIn("TORCHELASTIC_USE_AGENT_STORE", ranks[0][0])

    def test_rank_prefix_and_per_rank_logs(self):
        logs = os.path.join(self.tmp, "logs")
        _, r = self.launch_env_probe(["--cpu", "--num_processes", "2", "--tee", "3", "--log_dir", logs,
                                      "--rank_prefix"])
        self.assertIn("[rank1]: probe rank 1 of 2", r.stdout)
        self.assertIn("[rank0]: probe stderr rank 0", r.stderr)
        with open(os.path.join(logs, "rank1.stdout.log")) as f:
            self.assertEqual(f.read(), "probe rank 1 of 2\n")
        with open(os.path.join(logs, "rank0.stderr.log")) as f:
            self.assertEqual(f.read(), "probe stderr rank 0\n")
        # A relative log directory, created with its parents.
        _, r = self.launch_env_probe(["--cpu", "--log_dir", "l/o/g"])
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "l", "o", "g", "rank0.stdout.log")))
        for flags in (["--no_rank_prefix"], []):  # captured output: no prefix by default
            _, r = self.launch_env_probe(["--cpu", "--num_processes", "2"] + flags)
            self.assertNotIn("[rank", r.stdout + r.stderr)
            self.assertIn("probe rank 1 of 2\n", r.stdout)

    def test_rank_prefix_by_default_on_a_terminal(self):
        import pty
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        leader, follower = pty.openpty()
        proc = subprocess.Popen([LAUNCHER, "launch", "--cpu", "--num_processes", "2", PROBE, "env", out],
                                env=self.env, stdout=follower, stderr=subprocess.PIPE)
        os.close(follower)
        text = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            text += chunk
        os.close(leader)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn(b"[rank1]: probe rank 1 of 2", text)
        self.assertNotIn(b"[rank", err)  # stderr was a pipe


HF_MULTI_CPU = """\
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_CPU
downcast_bf16: 'no'
enable_cpu_affinity: false
ipex_config:
  ipex: false
machine_rank: 0
main_process_ip: null
main_process_port: null
main_training_function: main
mixed_precision: bf16
mpirun_config: {}
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: true
"""


class ConfigTests(LauncherTest):
    def test_hugging_face_config_is_honoured(self):
        path = self.write_config(HF_MULTI_CPU)
        ranks, r = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["ACCELERATE_MIXED_PRECISION"], "bf16")
            self.assertEqual(v["ACCELERATE_USE_CPU"], "true")
            self.assertEqual(v["WORLD_SIZE"], "2")
        self.assertNotIn("unknown key", r.stderr)

    def test_default_path_under_hf_home(self):
        self.write_config(HF_MULTI_CPU, os.path.join(self.env["HF_HOME"], "accelerate", "default_config.yaml"))
        self.launch_env_probe([], expect_ranks=[0, 1])

    def test_flags_override_the_file(self):
        path = self.write_config(HF_MULTI_CPU)
        ranks, _ = self.launch_env_probe(["--config-file", path, "--num_processes", "3", "--mixed_precision", "fp16"],
                                         expect_ranks=[0, 1, 2])
        self.assertEqual({v["ACCELERATE_MIXED_PRECISION"] for v, _ in ranks.values()}, {"fp16"})

    def test_unknown_key_is_refused_naming_the_nearest(self):
        # As the reference refuses a file with unknown keys: a misspelt key would do nothing.
        for text, expected in ((HF_MULTI_CPU.replace("mixed_precision:", "mixed_precison:"),
                                "unknown key 'mixed_precison' (did you mean 'mixed_precision'?)"),
                               (HF_MULTI_CPU + "my_custom_key: 12\n", "unknown key 'my_custom_key': not a key"),
                               (HF_MULTI_CPU + "fsdp_config:\n  fsdp_sharding_stratgy: FULL_SHARD\n",
                                "unknown key 'fsdp_config.fsdp_sharding_stratgy' (did you mean "
                                "'fsdp_config.fsdp_sharding_strategy'?)"),
                               (HF_MULTI_CPU + "deepspeed_config:\n  zero_stag: 2\n",
                                "unknown key 'deepspeed_config.zero_stag' (did you mean 'deepspeed_config.zero_stage'?)")):
            r = run(["--config_file", self.write_config(text), PROBE, "env", self.tmp], self.env)
            with self.subTest(expected=expected):
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(expected, r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))

    def test_every_reference_key_and_distributed_type_is_handled(self):
        """test/expected/hf-accelerate.txt (the reference's own source, issue 50): each key loads
        (a null value asks for nothing), each distributed type launches or is refused by name."""
        table = reference_table()
        for key in table["key"] + table["older-key"]:
            text = "distributed_type: NO\n" if key == "distributed_type" else f"distributed_type: NO\n{key}: null\n"
            r = run(["--cpu", "--config_file", self.write_config(text), PROBE, "env", self.tmp], self.env)
            with self.subTest(key=key):
                self.assertEqual(r.returncode, 0, r.stderr)
        for kind in table["distributed_type"]:
            text = f"distributed_type: {kind}\nnum_processes: 2\nuse_cpu: true\n"
            r = run(["--config_file", self.write_config(text), PROBE, "env", self.tmp], self.env)
            with self.subTest(distributed_type=kind):
                if r.returncode != 0:
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn(f"key 'distributed_type': {kind}", r.stderr)
                    self.assertNotIn("is not one of", r.stderr)
        self.assertIn("MULTI_XPU", table["distributed_type"])  # the table is read, not empty

    def test_other_devices_are_refused(self):
        for kind in ("MULTI_XPU", "MULTI_NPU", "MULTI_HPU", "MULTI_NEURON"):
            r = run(["--config_file", self.write_config(HF_MULTI_CPU.replace("MULTI_CPU", kind)), PROBE, "env",
                     self.tmp], self.env)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(f"{kind} asks for devices the LibTorch runtime does not support", r.stderr)

    def test_fsdp2_config_maps_onto_the_strategy(self):
        fsdp2 = HF_MULTI_CPU.replace("distributed_type: MULTI_CPU", "distributed_type: FSDP") + (
            "fsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: false\n")
        ranks, r = self.launch_env_probe(["-q", "--config_file", self.write_config(fsdp2)], expect_ranks=[0, 1])
        self.assertEqual({v["FSDP_SHARDING_STRATEGY"] for v, _ in ranks.values()}, {"SHARD_GRAD_OP"}, r.stderr)
        self.assertIn("fsdp_version: FSDP1 and FSDP2", r.stderr)  # named even with -q
        ranks, _ = self.launch_env_probe(["--config_file", self.write_config(fsdp2.replace("false", "true"))],
                                         expect_ranks=[0, 1])
        self.assertEqual(ranks[0][0]["FSDP_SHARDING_STRATEGY"], "FULL_SHARD")
        both = fsdp2 + "  fsdp_sharding_strategy: FULL_SHARD\n"
        r = run(["--config_file", self.write_config(both), PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("contradict each other", r.stderr)

    def test_parallelism_and_mpirun_sections(self):
        ok = HF_MULTI_CPU + "parallelism_config:\n  parallelism_config_tp_size: 1\n  parallelism_config_cp_size: 1\n"
        self.launch_env_probe(["--config_file", self.write_config(ok)], expect_ranks=[0, 1])
        for text, expected in ((ok.replace("tp_size: 1", "tp_size: 2"), "parallelism_config.parallelism_config_tp_size"),
                               (HF_MULTI_CPU.replace("mpirun_config: {}", "mpirun_config:\n  mpirun_hostfile: hosts"),
                                "key 'mpirun_config.mpirun_hostfile': hosts: cannot read it")):
            start = time.time()
            r = run(["--config_file", self.write_config(text), PROBE, "env", self.tmp], self.env)
            with self.subTest(expected=expected):
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(expected, r.stderr)
                self.assertLess(time.time() - start, 30)  # refused before waiting for anyone

    def test_config_update_and_to_fsdp2(self):
        old = ("distributed_type: FSDP\nfp16: true\nnum_processes: 2\nuse_cpu: true\nfsdp_config:\n"
               "  fsdp_sharding_strategy: SHARD_GRAD_OP\n  fsdp_backward_prefetch: BACKWARD_PRE\n"
               "  fsdp_offload_params: false\n")
        path = self.write_config(old)
        r = subprocess.run([LAUNCHER, "config", "update", "--config_file", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            updated = f.read()
        for line in ("compute_environment: LOCAL_MACHINE", "mixed_precision: fp16", "debug: false",
                     "fsdp_backward_prefetch: BACKWARD_PRE"):
            self.assertIn(line, updated)
        self.assertNotIn("fp16: true", updated)
        ranks, _ = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        self.assertEqual(ranks[0][0]["ACCELERATE_MIXED_PRECISION"], "fp16")
        out = os.path.join(self.tmp, "fsdp2.yaml")
        r = subprocess.run([LAUNCHER, "to-fsdp2", "--config_file", path, "--output_file", out], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fsdp_backward_prefetch removed", r.stderr)
        with open(out) as f:
            converted = f.read()
        self.assertIn("fsdp_reshard_after_forward: false", converted)
        self.assertIn("fsdp_version: 2", converted)
        self.assertNotIn("fsdp_sharding_strategy", converted)
        ranks, _ = self.launch_env_probe(["-q", "--config_file", out], expect_ranks=[0, 1])
        self.assertEqual(ranks[0][0]["FSDP_SHARDING_STRATEGY"], "SHARD_GRAD_OP")  # the same strategy as before
        # An existing output is not replaced without --overwrite; a bad file is refused whole.
        r = subprocess.run([LAUNCHER, "to-fsdp2", "--config_file", path, "--output_file", out], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        with open(out) as f:
            self.assertEqual(f.read(), converted)
        bad = self.write_config(old + "mixed_precison: bf16\n", os.path.join(self.tmp, "bad.yaml"))
        r = subprocess.run([LAUNCHER, "config", "update", "--config_file", bad], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stderr)
        with open(bad) as f:
            self.assertEqual(f.read(), old + "mixed_precison: bf16\n")

    def test_list_or_mapping_as_a_key_is_refused_naming_the_file(self):
        # Found by fuzz/config_file_fuzz.cpp (its corpus keeps the input,
        # regression_complex_key.yaml): yaml-cpp's "bad conversion" escaped the reader.
        for extra, where in (("? [a, b]\n: 1\n", ""), ("fsdp_config:\n  ? {x: 1}\n  : 2\n", "section 'fsdp_config'"),
                             ("deepspeed_config:\n  ? [zero_stage]\n  : 3\n", "section 'deepspeed_config'")):
            path = self.write_config(HF_MULTI_CPU + extra)
            r = run(["--config_file", path, PROBE, "env", self.tmp], self.env)
            self.assertEqual(r.returncode, 1, (extra, r.stderr))
            self.assertIn(f"config file {path}: {where + ' has ' if where else ''}a key that is not a name", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))

    def test_invalid_values_fail_naming_the_key(self):
        for key, bad in (("num_processes", "two"), ("mixed_precision", "fp32"), ("use_cpu", "maybe"),
                         ("main_process_port", "70000"), ("distributed_type", "MULTI_QPU")):
            text = "\n".join(f"{key}: {bad}" if line.startswith(key + ":") else line
                             for line in HF_MULTI_CPU.splitlines()) + "\n"
            path = self.write_config(text)
            r = run(["--config_file", path, PROBE, "env", self.tmp], self.env)
            self.assertEqual(r.returncode, 1, (key, r.stderr))
            self.assertIn(f"key '{key}'", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))

    def test_fsdp_config_block_reaches_the_program(self):
        # As the reference's `accelerate config` writes it for FSDP on CPU processes.
        text = HF_MULTI_CPU.replace("distributed_type: MULTI_CPU", "distributed_type: FSDP") + (
            "fsdp_config:\n"
            "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n"
            "  fsdp_backward_prefetch: BACKWARD_PRE\n"
            "  fsdp_min_num_params: 2000\n"
            "  fsdp_offload_params: false\n"
            "  fsdp_sharding_strategy: 2\n"
            "  fsdp_state_dict_type: SHARDED_STATE_DICT\n"
            "  fsdp_use_orig_params: true\n")
        path = self.write_config(text)
        ranks, r = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["ACCELERATE_USE_FSDP"], "true")
            self.assertEqual(v["FSDP_SHARDING_STRATEGY"], "SHARD_GRAD_OP")
            self.assertEqual(v["FSDP_AUTO_WRAP_POLICY"], "SIZE_BASED_WRAP")
            self.assertEqual(v["FSDP_MIN_NUM_PARAMS"], "2000")
            self.assertEqual(v["FSDP_OFFLOAD_PARAMS"], "false")
            self.assertEqual(v["FSDP_STATE_DICT_TYPE"], "SHARDED_STATE_DICT")
            self.assertEqual(v["FSDP_BACKWARD_PREFETCH"], "BACKWARD_PRE")
            self.assertNotIn("FSDP_FORWARD_PREFETCH", v)  # not in the file: the runtime's default
        self.assertNotIn("fsdp_backward_prefetch", r.stderr)  # honoured, so not in the tuning warning
        self.assertNotIn("running plain data parallel", r.stderr)
        # Flags win over the file, key by key.
        ranks, _ = self.launch_env_probe(["--config_file", path, "--fsdp_sharding_strategy", "FULL_SHARD"],
                                         expect_ranks=[0, 1])
        self.assertEqual({v["FSDP_SHARDING_STRATEGY"] for v, _ in ranks.values()}, {"FULL_SHARD"})
        self.assertEqual({v["FSDP_MIN_NUM_PARAMS"] for v, _ in ranks.values()}, {"2000"})
        # A bad value in the file names the key and the accepted values.
        path = self.write_config(text.replace("fsdp_sharding_strategy: 2", "fsdp_sharding_strategy: ZERO_3"))
        r = run(["--config_file", path, PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("fsdp_config.fsdp_sharding_strategy='ZERO_3' is not one of FULL_SHARD (1), SHARD_GRAD_OP (2), "
                      "NO_SHARD (3)", r.stderr)

    def test_fsdp_prefetch_keys_reach_the_program(self):
        text = HF_MULTI_CPU.replace("distributed_type: MULTI_CPU", "distributed_type: FSDP") + "fsdp_config:\n"
        # The older key name, any case; forward prefetch in a YAML 1.1 spelling, as PyYAML reads it.
        path = self.write_config(text + "  fsdp_backward_prefetch_policy: backward_post\n  fsdp_forward_prefetch: yes\n")
        ranks, r = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual((v["FSDP_BACKWARD_PREFETCH"], v["FSDP_FORWARD_PREFETCH"]), ("BACKWARD_POST", "true"))
        self.assertNotIn("change nothing", r.stderr)  # honoured: not in the tuning warning
        # Flags win over the file.
        ranks, _ = self.launch_env_probe(["--config_file", path, "--fsdp_backward_prefetch", "NO_PREFETCH",
                                          "--fsdp_forward_prefetch", "false"], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual((v["FSDP_BACKWARD_PREFETCH"], v["FSDP_FORWARD_PREFETCH"]), ("NO_PREFETCH", "false"))
        # Both names of the key: accepted when they agree.
        path = self.write_config(text + "  fsdp_backward_prefetch: BACKWARD_PRE\n"
                                 "  fsdp_backward_prefetch_policy: backward_pre\n")
        ranks, _ = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        self.assertEqual({v["FSDP_BACKWARD_PREFETCH"] for v, _ in ranks.values()}, {"BACKWARD_PRE"})

    def test_bad_fsdp_prefetch_keys_fail_before_any_process(self):
        text = HF_MULTI_CPU.replace("distributed_type: MULTI_CPU", "distributed_type: FSDP") + "fsdp_config:\n"
        for block, error in (
                ("  fsdp_backward_prefetch: SOON\n",
                 "fsdp_config.fsdp_backward_prefetch='SOON' is not one of BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH"),
                ("  fsdp_backward_prefetch_policy: 4\n",
                 "fsdp_config.fsdp_backward_prefetch_policy='4' is not one of BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH"),
                ("  fsdp_forward_prefetch: maybe\n",
                 "key 'fsdp_config.fsdp_forward_prefetch': expected true or false, got 'maybe'"),
                ("  fsdp_backward_prefetch: BACKWARD_PRE\n  fsdp_backward_prefetch_policy: BACKWARD_POST\n",
                 "fsdp_config.fsdp_backward_prefetch and fsdp_config.fsdp_backward_prefetch_policy (its older name) "
                 "contradict each other")):
            path = self.write_config(text + block)
            r = run(["--config_file", path, PROBE, "env", self.tmp], self.env)
            with self.subTest(block=block):
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(f"config file {path}: ", r.stderr)
                self.assertIn(error, r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))

    def test_missing_config_file_is_an_error(self):
        r = run(["--config_file", os.path.join(self.tmp, "nope.yaml"), PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("does not exist", r.stderr)

    def test_config_default_writes_a_file_that_launches(self):
        r = subprocess.run([LAUNCHER, "config", "default"], env=self.env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        path = os.path.join(self.env["HF_HOME"], "accelerate", "default_config.yaml")
        self.assertIn(path, r.stdout)
        with open(path) as f:
            text = f.read()
        num = int([l for l in text.splitlines() if l.startswith("num_processes:")][0].split(":")[1])
        # Quoted, so that PyYAML (the reference) reads the string NO, not a boolean.
        self.assertIn("distributed_type: 'NO'", text) if num == 1 else None
        ranks, _ = self.launch_env_probe(["--cpu"] if num == 1 else [], expect_ranks=list(range(num)))
        r = subprocess.run([LAUNCHER, "config", "default"], env=self.env, capture_output=True, text=True)
        self.assertIn("already exists", r.stdout)

    def test_interactive_config_from_piped_answers(self):
        # This machine; multi-CPU; 1 machine; no debug; no IPEX; no mpirun; no dynamo;
        # 2 processes; bf16.
        answers = "0\n1\n1\nno\nno\nno\nno\n2\n2\n"
        path = os.path.join(self.tmp, "asked.yaml")
        r = subprocess.run([LAUNCHER, "config", "--config_file", path], env=self.env, input=answers,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Which type of machine are you using?", r.stdout)
        with open(path) as f:
            text = f.read()
        self.assertIn("distributed_type: MULTI_CPU", text)
        self.assertIn("num_processes: 2", text)
        self.assertIn("mixed_precision: bf16", text)
        ranks, _ = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        self.assertEqual({v["ACCELERATE_MIXED_PRECISION"] for v, _ in ranks.values()}, {"bf16"})
        # mpirun yes: the hostfile is asked and written as the reference writes it.
        hosts = self.write_config("127.0.0.1 slots=2\n", os.path.join(self.tmp, "hostfile"))
        path = os.path.join(self.tmp, "mpirun.yaml")
        r = subprocess.run([LAUNCHER, "config", "--config_file", path], env=self.env,
                           input=f"0\n1\n1\nno\nno\nyes\n{hosts}\nno\n2\n2\n", capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Please enter the path to the hostfile to use with mpirun", r.stdout)
        with open(path) as f:
            self.assertIn(f"mpirun_config:\n  mpirun_hostfile: {hosts}", f.read())

    def test_interactive_config_for_two_machines(self):
        # This machine; multi-GPU; 2 machines; rank 1; IP; port; other network; c10d; no debug;
        # no dynamo, DeepSpeed, FSDP, TP, Megatron; 4 GPUs in all; ids 0,1; no NUMA; fp16.
        port = free_port_pair()
        answers = f"0\n3\n2\n1\n127.0.0.1\n{port}\nno\nc10d\nno\nno\nno\nno\nno\nno\n4\n0,1\nno\nfp16\n"
        path = os.path.join(self.tmp, "two.yaml")
        r = subprocess.run([LAUNCHER, "config", "--config_file", path], env=self.env, input=answers,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Machine 1 (as configured) joins machine 0 (the same file, rank overridden) on loopback.
        machine0 = self.start_machine_zero(["--config_file", path])
        ranks, _ = self.launch_env_probe(["--config_file", path], expect_ranks=[2, 3])
        _, err = machine0.communicate(timeout=30)
        self.assertEqual(machine0.returncode, 0, err)
        for rank, (v, _) in ranks.items():
            self.assertEqual(v["WORLD_SIZE"], "4")
            self.assertEqual(v["LOCAL_RANK"], str(rank - 2))
            self.assertEqual(v["MASTER_ADDR"], "127.0.0.1")
            self.assertEqual(v["MASTER_PORT"], str(port))
            self.assertEqual(v["CUDA_VISIBLE_DEVICES"], "0,1")
            self.assertEqual(v["ACCELERATE_MIXED_PRECISION"], "fp16")

    def test_interactive_config_with_fsdp(self):
        # This machine; multi-GPU; 1 machine; no debug; no dynamo, DeepSpeed; FSDP yes:
        # SHARD_GRAD_OP, no offload, SIZE_BASED_WRAP, 1500 parameters, BACKWARD_POST,
        # SHARDED_STATE_DICT, forward prefetch yes; (no TP or Megatron question after FSDP)
        # 2 GPUs; all ids; bf16.
        answers = "0\n3\n1\nno\nno\nno\nyes\n1\nno\n1\n1500\n1\n1\nyes\n2\nall\nbf16\n"
        path = os.path.join(self.tmp, "fsdp.yaml")
        r = subprocess.run([LAUNCHER, "config", "--config_file", path], env=self.env, input=answers,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("What should be your sharding strategy?", r.stdout)
        self.assertIn("What should be your FSDP's backward prefetch policy?", r.stdout)
        self.assertIn("Do you want to enable FSDP's forward prefetch policy? [yes/NO]", r.stdout)
        self.assertNotIn("Megatron", r.stdout)
        self.assertNotIn("not available with the LibTorch runtime", r.stdout)
        with open(path) as f:
            text = f.read()
        self.assertIn("distributed_type: FSDP", text)
        for line in ("fsdp_sharding_strategy: SHARD_GRAD_OP", "fsdp_auto_wrap_policy: SIZE_BASED_WRAP",
                     "fsdp_min_num_params: 1500", "fsdp_offload_params: false",
                     "fsdp_state_dict_type: SHARDED_STATE_DICT", "fsdp_backward_prefetch: BACKWARD_POST",
                     "fsdp_forward_prefetch: true", "num_processes: 2"):
            self.assertIn(line, text)
        ranks, _ = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["ACCELERATE_USE_FSDP"], "true")
            self.assertEqual(v["FSDP_SHARDING_STRATEGY"], "SHARD_GRAD_OP")
            self.assertEqual(v["FSDP_MIN_NUM_PARAMS"], "1500")
            self.assertEqual((v["FSDP_BACKWARD_PREFETCH"], v["FSDP_FORWARD_PREFETCH"]), ("BACKWARD_POST", "true"))
            self.assertEqual(v["ACCELERATE_MIXED_PRECISION"], "bf16")
        # A size that is not a number is refused, and no file is written.
        bad = answers.replace("\n1500\n", "\nmany\n")
        path2 = os.path.join(self.tmp, "fsdp-bad.yaml")
        r = subprocess.run([LAUNCHER, "config", "--config_file", path2], env=self.env, input=bad,
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("many", r.stderr)
        self.assertFalse(os.path.exists(path2))

    def test_interactive_config_with_no_input_takes_defaults(self):
        path = os.path.join(self.tmp, "empty.yaml")
        r = subprocess.run([LAUNCHER, "config", "--config_file", path], env=self.env, input="",
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.launch_env_probe(["--config_file", path, "--cpu"], expect_ranks=[0])


class FailureTests(LauncherTest):
    def run_failing(self, extra=()):
        piddir = os.path.join(self.tmp, "pids")
        os.makedirs(piddir)
        start = time.time()
        r = run(["--cpu", "--num_processes", "3", PROBE, "fail", "1", "3", piddir] + list(extra), self.env, timeout=30)
        elapsed = time.time() - start
        pids = [read_int(os.path.join(piddir, f)) for f in os.listdir(piddir)]
        return r, elapsed, pids

    def test_rank_exit_code_3_stops_everything(self):
        r, elapsed, pids = self.run_failing()
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertLess(elapsed, 5.0)
        self.assertEqual(len(pids), 3)
        self.assertEqual([p for p in pids if alive(p)], [])
        self.assertIn("rank 1", r.stderr)
        self.assertIn("exited with code 3", r.stderr)
        self.assertIn("rank 1 failing on purpose with code 3", r.stderr.split("stderr:")[-1])

    def test_sigterm_ignoring_ranks_are_killed_after_grace(self):
        r, elapsed, pids = self.run_failing(["ignore_term"])
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertLess(elapsed, 8.0)  # 0.5 s failure + 2 s grace + margin
        self.assertIn("SIGKILL", r.stderr)
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_killed_rank_gives_128_plus_signal(self):
        r = run(["--cpu", "--num_processes", "2", "sh", "-c", 'if [ "$RANK" = 0 ]; then kill -9 $$; fi; sleep 30'],
                self.env, timeout=30)
        self.assertEqual(r.returncode, 128 + 9, r.stderr)
        self.assertIn("killed by signal 9", r.stderr)

    def test_processes_left_behind_by_a_rank_are_stopped(self):
        pidfile = os.path.join(self.tmp, "background.pid")
        r = run(["--cpu", "--num_processes", "2", "sh", "-c",
                 f'if [ "$RANK" = 1 ]; then sleep 60 & echo $! > {pidfile}; fi; exit 0'], self.env, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("left processes running", r.stderr)
        self.assertFalse(alive(read_int(pidfile)))

    def test_program_that_cannot_start(self):
        r = run(["--cpu", "--num_processes", "2", os.path.join(self.tmp, "no-such-program")], self.env)
        self.assertEqual(r.returncode, 127)
        self.assertIn("cannot run", r.stderr)


class SignalTests(LauncherTest):
    def start_sleepers(self, n=2):
        piddir = os.path.join(self.tmp, "pids")
        os.makedirs(piddir)
        proc = subprocess.Popen([LAUNCHER, "launch", "--cpu", "--num_processes", str(n), PROBE, "sleep", piddir],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        pidfiles = [os.path.join(piddir, f"{r}.pid") for r in range(n)]
        self.assertTrue(wait_for_files(pidfiles), "processes did not start")
        return proc, piddir, [read_int(p) for p in pidfiles]

    def test_sigint_reaches_every_process(self):
        proc, piddir, pids = self.start_sleepers()
        start = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertLess(time.time() - start, 5.0)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        for rank in range(2):
            self.assertTrue(os.path.exists(os.path.join(piddir, f"{rank}.sigint")), err)
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_sigterm_to_launcher_ends_every_process(self):
        proc, _, pids = self.start_sleepers()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertEqual([p for p in pids if alive(p)], [])

    def test_killed_launcher_leaves_no_orphans(self):
        proc, _, pids = self.start_sleepers()
        proc.kill()
        proc.communicate(timeout=10)
        deadline = time.time() + 5
        while time.time() < deadline and any(alive(p) for p in pids):
            time.sleep(0.05)
        self.assertEqual([p for p in pids if alive(p)], [])


class PortTests(LauncherTest):
    def test_port_zero_with_two_jobs_at_once(self):
        jobs = []
        for token in ("job-a", "job-b"):
            jobs.append(subprocess.Popen(
                [LAUNCHER, "launch", "--cpu", "--num_processes", "2", "--main_process_port", "0", PROBE,
                 "rendezvous", token], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        ports = []
        for job in jobs:
            out, err = job.communicate(timeout=30)
            self.assertEqual(job.returncode, 0, err)
            found = {line.split("port=")[1] for line in out.splitlines() if "port=" in line}
            self.assertEqual(len(found), 1, out)
            ports.append(found.pop())
        self.assertNotEqual(ports[0], ports[1])
        self.assertNotIn("29500", ports)

    def test_port_zero_is_refused_for_several_machines(self):
        r = run(["--cpu", "--num_machines", "2", "--num_processes", "2", "--main_process_ip", "127.0.0.1",
                 "--main_process_port", "0", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--main_process_port 0", r.stderr)


    def test_a_peer_sending_no_newline_is_dropped(self):
        # Machine 0 keeps at most 64 KiB of a line it has not seen the end of (LineDecoder,
        # launcher/link/link_message.h; found while writing fuzz/link_message_fuzz.cpp):
        # before, a peer that never sent a newline was held, its bytes kept, for as long as it
        # sent. It is dropped now, and machine 0 goes on waiting for machine 1.
        import socket
        port = free_port_pair()
        proc = self.start_machine_zero(["--cpu", "--num_machines", "2", "--num_processes", "2", "--main_process_ip",
                                        "127.0.0.1", "--main_process_port", str(port), "--rdzv_timeout", "60"])
        try:
            deadline = time.time() + 10
            while True:
                try:
                    peer = socket.create_connection(("127.0.0.1", port + 1), timeout=1)
                    break
                except OSError:
                    self.assertLess(time.time(), deadline, "machine 0 never listened")
                    time.sleep(0.1)
            peer.settimeout(0.05)
            sent, dropped = 0, False
            # The old decoder dropped a silent connection after 10 s only; this one keeps talking.
            deadline = time.time() + 20
            while not dropped and time.time() < deadline:
                try:
                    peer.sendall(b"x" * 4096)
                    sent += 4096
                    dropped = peer.recv(1) == b""
                except socket.timeout:
                    continue
                except OSError:  # reset, broken pipe: dropped too
                    dropped = True
            peer.close()
            self.assertTrue(dropped, f"machine 0 kept a connection that sent {sent} bytes without a newline")
            self.assertIsNone(proc.poll(), "machine 0 gave up the rendezvous")
        finally:
            proc.kill()
            proc.communicate(timeout=10)

    def test_job_token_file(self):
        # docs/security.md. The proofs themselves are tested across two hosts
        # (test/multinode, StrangersTests); here: where the token comes from.
        port = free_port_pair()
        two = ["--cpu", "--num_machines", "2", "--num_processes", "2", "--main_process_ip", "127.0.0.1",
               "--main_process_port", str(port), "--rdzv_timeout", "1"]
        path = os.path.join(self.tmp, "job.token")
        # Machine 0 writes a new token to a file that does not exist yet, readable by its owner only.
        r = run(two + ["--machine_rank", "0", "--job_token_file", path, PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)  # machine 1 never came
        token = open(path).read().strip()
        self.assertRegex(token, "^[0-9a-f]{64}$")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        self.assertRegex(r.stderr, f"wrote a new job token to {path} \\(fingerprint [0-9a-f]{{8}}\\)")
        self.assertIn(f"job token {hashlib.sha256(token.encode()).hexdigest()[:8]} from --job_token_file", r.stderr)
        self.assertNotIn(token, r.stderr)
        # ... and never replaces it.
        r = run(two + ["--machine_rank", "0", "--job_token_file", path, PROBE, "env", self.tmp], self.env)
        self.assertEqual(open(path).read().strip(), token)
        self.assertNotIn("wrote a new job token", r.stderr)
        # Refused before anything listens or connects, with nothing written.
        os.chmod(path, 0o644)
        missing = os.path.join(self.tmp, "missing.token")
        short = os.path.join(self.tmp, "short.token")
        with open(os.open(short, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("tooshort\n")
        cases = [(["--machine_rank", "0", "--job_token_file", path], self.env,
                  f"--job_token_file {path} can be read by other users of this machine (mode 0644): run chmod 600"),
                 (["--machine_rank", "1", "--job_token_file", missing], self.env,
                  f"--job_token_file {missing}: No such file or directory; copy the file machine 0's launcher wrote"),
                 (["--machine_rank", "0", "--job_token_file", short], self.env,
                  f"--job_token_file {short} holds a job token of 8 characters; use at least 16"),
                 (["--machine_rank", "1"], dict(self.env, ACCELERATE_JOB_TOKEN="tooshort"),
                  "ACCELERATE_JOB_TOKEN holds a job token of 8 characters")]
        # With a 30 s rendezvous, a refusal that came only after waiting for the other machine
        # would take 30 s; a refusal before anything listens takes milliseconds (limit 5 s).
        waiting = [a if a != "1" or two[i - 1] != "--rdzv_timeout" else "30" for i, a in enumerate(two)]
        for args, env, message in cases:
            with self.subTest(args=args):
                started = time.time()
                r = run(waiting + args + [PROBE, "env", self.tmp], env)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertLess(time.time() - started, 5.0, "refused only after waiting for the other machine")
        self.assertFalse(os.path.exists(missing))
        self.assertEqual(open(path).read().strip(), token)

    def test_the_processes_do_not_see_the_job_token(self):
        env = dict(self.env, ACCELERATE_JOB_TOKEN="0123456789abcdef0123")
        ranks, r = self.launch_env_probe(["--cpu", "--num_processes", "2", "--main_process_port", "0"], env=env,
                                         expect_ranks=[0, 1])
        for values, _ in ranks.values():
            self.assertNotIn("ACCELERATE_JOB_TOKEN", values)
        r = run(["--cpu", "--job_token_file", os.path.join(self.tmp, "t"), PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("one machine: --job_token_file is not used", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "t")))


class SelfTestCommandTests(LauncherTest):
    """`accelerate test` runs accelerate-selftest found next to the launcher: a copy of the
    launcher in a temporary directory gets a stand-in self-test script."""

    def launcher_copy(self, selftest_body=None):
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        copy = os.path.join(bindir, "accelerate")
        with open(LAUNCHER, "rb") as src, open(copy, "wb") as dst:
            dst.write(src.read())
        os.chmod(copy, 0o755)
        if selftest_body is not None:
            path = os.path.join(bindir, "accelerate-selftest")
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + selftest_body)
            os.chmod(path, 0o755)
        return copy

    def test_missing_selftest_is_reported(self):
        r = subprocess.run([self.launcher_copy(), "test", "--cpu"], env=self.env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("accelerate-selftest", r.stderr)
        self.assertIn("not built", r.stderr)

    def test_selftest_runs_with_the_launch_setup(self):
        marker = os.path.join(self.tmp, "ran")
        exe = self.launcher_copy(f'echo "$RANK/$WORLD_SIZE" >> {marker}\n')
        r = subprocess.run([exe, "test", "--cpu", "--num_processes", "2"], env=self.env, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("success", r.stdout)
        with open(marker) as f:
            self.assertEqual(sorted(f.read().split()), ["0/2", "1/2"])

    def test_failing_selftest_fails(self):
        exe = self.launcher_copy('[ "$RANK" = 1 ] && { echo "collective mismatch" >&2; exit 5; }\nexit 0\n')
        r = subprocess.run([exe, "test", "--cpu", "--num_processes", "2"], env=self.env, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 5)
        self.assertIn("FAILED", r.stdout)
        self.assertIn("collective mismatch", r.stderr)


class RestartTests(LauncherTest):
    """--max_restarts: after a failure every process is stopped and the whole job starts
    again (TORCHELASTIC_RESTART_COUNT = attempt, a fresh MASTER_PORT on one machine)."""

    def attempts(self, log):
        with open(log) as f:
            return [line.split() for line in f.read().splitlines()]

    def test_restarts_every_process_until_it_succeeds(self):
        log = os.path.join(self.tmp, "attempts")
        script = (f'echo "$RANK $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $MASTER_PORT" >> {log}; '
                  '[ "$RANK" = 1 ] && [ "$TORCHELASTIC_RESTART_COUNT" != 2 ] && { sleep 0.3; exit 3; }; exit 0')
        r = run(["--cpu", "--num_processes", "2", "--max_restarts", "2", "--monitor_interval", "0.1",
                 "sh", "-c", script], self.env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.attempts(log)
        self.assertEqual(sorted((row[1], row[0]) for row in rows),
                         [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1"), ("2", "0"), ("2", "1")])
        self.assertEqual({row[2] for row in rows}, {"2"})
        ports = {row[1]: row[3] for row in rows}
        self.assertEqual(len(set(ports.values())), 3, rows)  # a fresh rendezvous port per attempt
        self.assertIn("restarting every process (restart 1 of at most 2)", r.stderr)
        self.assertIn("restart 2 of at most 2", r.stderr)

    def test_gives_up_with_the_failing_code(self):
        log = os.path.join(self.tmp, "attempts")
        r = run(["--cpu", "--num_processes", "2", "--max_restarts", "1", "sh", "-c",
                 f'echo "$TORCHELASTIC_RESTART_COUNT" >> {log}; [ "$RANK" = 0 ] && {{ sleep 0.3; exit 5; }}; sleep 30'],
                self.env, timeout=60)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(sorted(sum(self.attempts(log), [])), ["0", "0", "1", "1"])
        self.assertIn("exiting with code 5 after 1 restart(s)", r.stderr)

    def test_no_restarts_is_the_default(self):
        for flags in ([], ["--max_restarts", "0"]):
            log = os.path.join(self.tmp, "attempts")
            r = run(["--cpu", "--num_processes", "2"] + flags + ["sh", "-c",
                     f'echo "${{TORCHELASTIC_RESTART_COUNT:-unset}}" >> {log}; [ "$RANK" = 0 ] && {{ sleep 0.3; exit 4; }}; sleep 30'],
                    dict(self.env, TORCHELASTIC_RESTART_COUNT="7"), timeout=60)
            self.assertEqual(r.returncode, 4, r.stderr)
            self.assertEqual(sum(self.attempts(log), []), ["unset", "unset"])  # one attempt, no variable
            self.assertNotIn("restart", r.stderr)
            os.remove(log)

    def test_an_interrupted_launch_is_not_restarted(self):
        piddir = os.path.join(self.tmp, "pids")
        os.makedirs(piddir)
        proc = subprocess.Popen([LAUNCHER, "launch", "--cpu", "--num_processes", "2", "--max_restarts", "3",
                                 PROBE, "sleep", piddir], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.assertTrue(wait_for_files([os.path.join(piddir, f"{r}.pid") for r in range(2)]))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertNotIn("restarting", err)

    def test_project_dir_reaches_every_process_as_an_absolute_path(self):
        ranks, _ = self.launch_env_probe(["--cpu", "--num_processes", "2", "--project_dir", "runs/x"],
                                         expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["ACCELERATE_PROJECT_DIR"], os.path.join(self.tmp, "runs", "x"))
            self.assertNotIn("TORCHELASTIC_RESTART_COUNT", v)

    def test_trace_reaches_every_process_as_an_absolute_path(self):
        ranks, _ = self.launch_env_probe(["--cpu", "--num_processes", "2", "--trace", "traces/a"],
                                         expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["ACCELERATE_TRACE"], os.path.join(self.tmp, "traces", "a"))

    def test_bad_values_are_usage_errors(self):
        for args, text in ((["--max_restarts", "-1"], "--max_restarts"), (["--monitor_interval", "soon"],
                           "--monitor_interval"), (["--monitor_interval", "0"], "--monitor_interval")):
            r = run(args + [PROBE, "env", self.tmp], self.env)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(text, r.stderr)

    @unittest.skipUnless(os.environ.get("ACCEL_CHECKPOINT_WORKER"), "checkpoint_worker not built (runtime off)")
    def test_killed_process_restarts_from_the_latest_checkpoint_and_ends_as_uninterrupted(self):
        worker = os.environ["ACCEL_CHECKPOINT_WORKER"]
        env = dict(self.env, OMP_NUM_THREADS="1")
        common = ["--cpu", "--num_processes", "2", "--main_process_port", "0"]
        whole = run(common + ["--project_dir", "p1", worker, "train", "--out", "a"], env, timeout=300)
        self.assertEqual(whole.returncode, 0, whole.stdout + whole.stderr)
        # Checkpoints at steps 6 and 12; rank 1 is SIGKILLed after step 13 in the first attempt.
        killed = run(common + ["--max_restarts", "2", "--project_dir", "p2", worker, "train", "--out", "b",
                               "--kill-at", "13", "--kill-rank", "1"], env, timeout=300)
        self.assertEqual(killed.returncode, 0, killed.stdout + killed.stderr)
        self.assertIn("rank 1", killed.stderr)
        self.assertIn("killed by signal 9", killed.stderr)
        self.assertIn("restart 1 of at most 2", killed.stderr)
        self.assertIn("checkpoints/checkpoint_1 at step 12", killed.stdout)

        def params(name):
            with open(os.path.join(self.tmp, name + ".params")) as f:
                return [(l.split()[0], [float.fromhex(v) for v in l.split()[1:]]) for l in f.read().splitlines()]

        a, b = params("a"), params("b")
        self.assertEqual([n for n, _ in a], [n for n, _ in b])
        diff = max(abs(x - y) for (_, va), (_, vb) in zip(a, b) for x, y in zip(va, vb))
        self.assertLessEqual(diff, 1e-7)
        for rank in (0, 1):
            def by_step(name):
                with open(os.path.join(self.tmp, f"{name}.order{rank}")) as f:
                    return {int(l.split()[0]): l for l in f.read().splitlines()}
            self.assertEqual(by_step("a"), by_step("b"))  # the same batches at every step


@unittest.skipUnless(os.environ.get("ACCEL_SELFTEST"), "accelerate-selftest not built (runtime off)")
class RuntimeTests(LauncherTest):
    """The runtime under our launcher and under torchrun (Debian's /usr/bin/torchrun):
    accelerate-selftest trains a small model data-parallel and prints its weights."""

    def weights(self, output):
        lines = [l for l in output.splitlines() if "weights:" in l]
        self.assertEqual(len(lines), 1, output)
        return [float(v) for v in lines[0].split("weights:")[1].split()]

    def test_accelerate_test_passes_on_two_cpu_processes(self):
        r = subprocess.run([LAUNCHER, "test", "--cpu", "--num_processes", "2", "--main_process_port", "0"],
                           env=dict(self.env, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("all checks passed", r.stdout)
        self.assertIn("success", r.stdout)

    @unittest.skipUnless(os.path.exists("/usr/bin/torchrun"), "no /usr/bin/torchrun (python3-torch)")
    def test_same_result_under_torchrun(self):
        selftest = os.environ["ACCEL_SELFTEST"]
        env = dict(self.env, OMP_NUM_THREADS="1")
        ours = run(["--cpu", "--num_processes", "2", "--main_process_port", "0", selftest, "--print-weights"],
                   env, timeout=300)
        self.assertEqual(ours.returncode, 0, ours.stderr)
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        logs = os.path.join(self.tmp, "torchrun-logs")
        # Python 3.11 needs --redirects/--tee/--log_dir with torchrun 1.13 (shared/PLATFORM.md).
        # torchrun, with Debian 13's libuv-less store worked around (test/support/torchrun.py).
        torchrun = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "support", "torchrun.py")
        theirs = subprocess.run(
            ["/usr/bin/python3", torchrun, "--nnodes", "1", "--nproc_per_node", "2", "--master_port", str(port),
             "--no_python", "--redirects", "1", "--tee", "1", "--log_dir", logs, selftest, "--print-weights"],
            env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(theirs.returncode, 0, theirs.stdout + theirs.stderr)
        a, b = self.weights(ours.stdout), self.weights(theirs.stdout)
        self.assertEqual(len(a), len(b))
        for x, y in zip(a, b):
            self.assertAlmostEqual(x, y, delta=1e-6)


@unittest.skipUnless(os.environ.get("ACCEL_RUNTIME_WORKER"), "runtime_worker not built (runtime off)")
class DivergenceTests(LauncherTest):
    """Issue #15: process 1 leaves its training loop early and waits in wait_for_everyone while
    process 0 waits in the gradient all-reduce of its next step. The runtime fails both within
    seconds (not Gloo's 30-minute timeout) and the launcher ends the job with the exit code of
    the process that failed, the message naming both collectives."""

    def test_divergent_processes_end_the_job_quickly(self):
        env = dict(self.env, OMP_NUM_THREADS="1")
        start = time.time()
        r = run(["--cpu", "--num_processes", "2", "--main_process_port", "0", os.environ["ACCEL_RUNTIME_WORKER"],
                 "diverge", "uncaught"], env, timeout=120)
        elapsed = time.time() - start
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 3, out)  # the worker exits with 3 on an exception
        self.assertLess(elapsed, 10.0, out)
        self.assertRegex(r.stdout, r"ERROR: accelerate: .* the processes diverged: process 0 is in "
                                   r"'all_reduce of gradient bucket 0 of 1 \(2 parameters\)' \(collective #(\d+)\) "
                                   r"while process 1 is in 'barrier \(wait_for_everyone\)' \(collective #\1\)")
        self.assertRegex(r.stderr, r"rank [01] \(pid \d+\) exited with code 3: stopping the other processes")
        self.assertIn("exiting with code 3", r.stderr)


class CliTests(LauncherTest):
    def test_every_reference_command_exists(self):
        commands = reference_table()["command"]
        self.assertIn("to-fsdp2", commands)
        for command in commands:
            r = subprocess.run([LAUNCHER] + command.split() + ["--help"], capture_output=True, text=True, timeout=30)
            with self.subTest(command=command):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn("unknown command", r.stderr)
        r = subprocess.run([LAUNCHER, "tpu-config"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("TPUs are not supported", r.stderr)

    def test_unknown_flag_is_a_clear_error(self):
        r = run(["--num_procesess", "2", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unrecognized option '--num_procesess'", r.stderr)
        self.assertIn("did you mean --num_processes", r.stderr)

    def test_missing_program(self):
        r = run(["--cpu"], self.env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("<program>", r.stderr)

    def test_a_bad_mixed_precision_lists_exactly_the_accepted_values(self):
        # --mixed_precision accepts fp8 (the plan then refuses it with its reason), so its
        # error lists it; `config default` does not write fp8, so its error leaves it out.
        r = run(["--mixed_precision", "fp32", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--mixed_precision: expected one of no, fp16, bf16, fp8, got 'fp32'", r.stderr)
        r = run(["--mixed_precision", "fp8", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("mixed precision fp8 is not supported by the LibTorch runtime (use one of no, fp16, bf16)",
                      r.stderr)
        path = os.path.join(self.tmp, "cfg", "default.yaml")
        for bad in ("fp32", "fp8"):
            c = subprocess.run([LAUNCHER, "config", "default", "--config_file", path, "--mixed_precision", bad],
                               env=self.env, capture_output=True, text=True)
            self.assertEqual(c.returncode, 2, c.stderr)
            self.assertIn(f"--mixed_precision: expected one of no, fp16, bf16, got '{bad}'", c.stderr)
            self.assertFalse(os.path.exists(path))

    def test_bad_flag_values(self):
        for args, text in ((["--num_processes", "x"], "--num_processes"), (["--mixed_precision", "fp32"], "fp32"),
                           (["--cpu", "--multi_gpu"], "--multi_gpu"), (["--num_processes", "3", "--num_machines", "2",
                            "--main_process_ip", "h"], "multiple of --num_machines"),
                           (["--rdzv_timeout", "0"], "--rdzv_timeout: expected seconds"),
                           (["--network_interface", "no-such-if0"], "no such interface on this machine"),
                           (["--num_machines", "2", "--num_processes", "2", "--main_process_ip", "127.0.0.1",
                             "--main_process_port", "65535"],
                            "choose a port below 65535")):
            r = run(args + [PROBE, "env", self.tmp], self.env)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(text, r.stderr)

    def test_tuning_only_reference_flags_are_named_in_one_warning_even_when_quiet(self):
        _, r = self.launch_env_probe(["-q", "--cpu", "--rdzv_backend", "c10d", "--dynamo-backend=no"],
                                     expect_ranks=[0])
        self.assertEqual(r.stderr.count("warning:"), 1, r.stderr)
        self.assertIn("--rdzv_backend: torchrun's rendezvous backend", r.stderr)
        self.assertIn("--dynamo_backend: torch.compile", r.stderr)
        self.assertNotIn("note", r.stderr)

    def test_fsdp_flags_reach_the_program(self):
        ranks, _ = self.launch_env_probe(
            ["--cpu", "--num_processes", "2", "--use_fsdp", "--fsdp-sharding-strategy", "shard_grad_op",
             "--fsdp_auto_wrap_policy", "size_based_wrap", "--fsdp_min_num_params", "1e6",
             "--fsdp_offload_params", "True", "--fsdp_state_dict_type", "SHARDED_STATE_DICT",
             "--fsdp_backward_prefetch", "backward_post", "--fsdp_forward_prefetch", "TRUE"], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual(v["ACCELERATE_USE_FSDP"], "true")
            self.assertEqual(v["FSDP_SHARDING_STRATEGY"], "SHARD_GRAD_OP")
            self.assertEqual(v["FSDP_AUTO_WRAP_POLICY"], "SIZE_BASED_WRAP")
            self.assertEqual(v["FSDP_MIN_NUM_PARAMS"], "1000000")
            self.assertEqual(v["FSDP_OFFLOAD_PARAMS"], "true")
            self.assertEqual(v["FSDP_STATE_DICT_TYPE"], "SHARDED_STATE_DICT")
            self.assertEqual(v["FSDP_BACKWARD_PREFETCH"], "BACKWARD_POST")
            self.assertEqual(v["FSDP_FORWARD_PREFETCH"], "true")
        # --use_fsdp alone: the reference's defaults; without it, no FSDP variables at all.
        ranks, _ = self.launch_env_probe(["--cpu", "--use_fsdp"], expect_ranks=[0])
        v = ranks[0][0]
        self.assertEqual((v["FSDP_SHARDING_STRATEGY"], v["FSDP_OFFLOAD_PARAMS"], v["FSDP_MIN_NUM_PARAMS"]),
                         ("FULL_SHARD", "false", "100000000"))
        self.assertNotIn("FSDP_AUTO_WRAP_POLICY", v)
        # Prefetching unset unless asked for: the runtime's defaults (NO_PREFETCH, false) hold.
        self.assertNotIn("FSDP_BACKWARD_PREFETCH", v)
        self.assertNotIn("FSDP_FORWARD_PREFETCH", v)
        ranks, _ = self.launch_env_probe(["--cpu"], expect_ranks=[0])
        self.assertFalse([k for k in ranks[0][0] if "FSDP" in k])
        # Without --use_fsdp the prefetch flags, like --fsdp_offload_params, are checked and
        # change nothing.
        ranks, r = self.launch_env_probe(["--cpu", "--fsdp_backward_prefetch", "BACKWARD_PRE",
                                          "--fsdp_forward_prefetch", "true"], expect_ranks=[0])
        self.assertFalse([k for k in ranks[0][0] if "FSDP" in k])

    def test_fsdp_backward_prefetch_older_name(self):
        ranks, _ = self.launch_env_probe(["--cpu", "--use_fsdp", "--fsdp-backward-prefetch-policy", "Backward_Pre"],
                                         expect_ranks=[0])
        self.assertEqual(ranks[0][0]["FSDP_BACKWARD_PREFETCH"], "BACKWARD_PRE")
        ranks, _ = self.launch_env_probe(["--cpu", "--use_fsdp", "--fsdp_backward_prefetch_policy", "no_prefetch",
                                          "--fsdp_backward_prefetch", "NO_PREFETCH"], expect_ranks=[0])
        self.assertEqual(ranks[0][0]["FSDP_BACKWARD_PREFETCH"], "NO_PREFETCH")
        r = run(["--cpu", "--use_fsdp", "--fsdp_backward_prefetch", "BACKWARD_PRE", "--fsdp_backward_prefetch_policy",
                 "BACKWARD_POST", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--fsdp_backward_prefetch BACKWARD_PRE and --fsdp_backward_prefetch_policy BACKWARD_POST "
                      "(its older name) contradict each other", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))

    def test_bad_fsdp_values_name_the_accepted_ones(self):
        for args, text in ((["--fsdp_sharding_strategy", "ZERO3"],
                            "--fsdp_sharding_strategy='ZERO3' is not one of FULL_SHARD (1), SHARD_GRAD_OP (2), NO_SHARD (3)"),
                           (["--fsdp_sharding_strategy", "HYBRID_SHARD"], "not supported by the LibTorch runtime"),
                           (["--fsdp_auto_wrap_policy", "BY_SIZE"], "TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP, NO_WRAP"),
                           (["--fsdp_state_dict_type", "LOCAL_STATE_DICT"], "FULL_STATE_DICT, SHARDED_STATE_DICT"),
                           (["--fsdp_min_num_params", "many"], "not a number of parameters"),
                           (["--fsdp_offload_params", "cpu"], "expected true or false"),
                           (["--fsdp_backward_prefetch", "BACKWARD"],
                            "--fsdp_backward_prefetch='BACKWARD' is not one of BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH"),
                           (["--fsdp_backward_prefetch_policy", "5"],
                            "--fsdp_backward_prefetch_policy='5' is not one of BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH"),
                           (["--fsdp_forward_prefetch", "sometimes"],
                            "--fsdp_forward_prefetch: expected true or false, got 'sometimes'")):
            r = run(["--cpu", "--use_fsdp"] + args + [PROBE, "env", self.tmp], self.env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(text, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))

    def test_help_and_env(self):
        r = subprocess.run([LAUNCHER, "launch", "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--num_processes", r.stdout)
        r = subprocess.run([LAUNCHER, "env"], env=self.env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("CPU count", r.stdout)
        self.assertIn("LibTorch version", r.stdout)



# Every flag `accelerate launch --help` lists that this launcher honours itself, with what
# shows it reached the processes: (extra flags, variable of the probe's environment, value).
# A listed flag missing here fails FlagTests, so a new flag comes with its own check.
HONOURED_ENV = {
    "cpu": ([], "ACCELERATE_USE_CPU", "true"),
    "num_processes": (["2"], "WORLD_SIZE", "2"),
    "num_machines": (["1"], "GROUP_WORLD_SIZE", "1"),
    "machine_rank": (["0"], "NODE_RANK", "0"),
    "main_process_ip": (["127.0.0.1"], "MASTER_ADDR", "127.0.0.1"),
    "rdzv_timeout": (["77"], "ACCELERATE_RDZV_TIMEOUT", "77"),
    "network_interface": (["lo"], "GLOO_SOCKET_IFNAME", "lo"),
    "mixed_precision": (["bf16"], "ACCELERATE_MIXED_PRECISION", "bf16"),
    "gpu_ids": (["0"], "CUDA_VISIBLE_DEVICES", "0"),
    "gradient_accumulation_steps": (["3"], "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "3"),
    "num_cpu_threads_per_process": (["3"], "OMP_NUM_THREADS", "3"),
    "enable_cpu_affinity": ([], "ACCELERATE_CPU_AFFINITY", "1"),
    "debug": ([], "ACCELERATE_DEBUG_MODE", "true"),
    "split_batches": ([], "ACCELERATE_SPLIT_BATCHES", "true"),
    "max_restarts": (["1"], "TORCHELASTIC_MAX_RESTARTS", "1"),
    "log_with": (["csv"], "ACCELERATE_LOG_WITH", "csv"),
    "use_fsdp": ([], "ACCELERATE_USE_FSDP", "true"),
    "fsdp_sharding_strategy": (["SHARD_GRAD_OP", "--use_fsdp"], "FSDP_SHARDING_STRATEGY", "SHARD_GRAD_OP"),
    "fsdp_auto_wrap_policy": (["SIZE_BASED_WRAP", "--use_fsdp"], "FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"),
    "fsdp_min_num_params": (["5", "--use_fsdp"], "FSDP_MIN_NUM_PARAMS", "5"),
    "fsdp_transformer_layer_cls_to_wrap": (["Block", "--use_fsdp"], "FSDP_TRANSFORMER_CLS_TO_WRAP", "Block"),
    "fsdp_offload_params": (["true", "--use_fsdp"], "FSDP_OFFLOAD_PARAMS", "true"),
    "fsdp_state_dict_type": (["SHARDED_STATE_DICT", "--use_fsdp"], "FSDP_STATE_DICT_TYPE", "SHARDED_STATE_DICT"),
    "fsdp_backward_prefetch": (["BACKWARD_POST", "--use_fsdp"], "FSDP_BACKWARD_PREFETCH", "BACKWARD_POST"),
    "fsdp_backward_prefetch_policy": (["BACKWARD_PRE", "--use_fsdp"], "FSDP_BACKWARD_PREFETCH", "BACKWARD_PRE"),
    "fsdp_forward_prefetch": (["true", "--use_fsdp"], "FSDP_FORWARD_PREFETCH", "true"),
    "fsdp_reshard_after_forward": (["false", "--use_fsdp"], "FSDP_SHARDING_STRATEGY", "SHARD_GRAD_OP"),
}
# Honoured flags whose effect is not a variable: each has its own check in FlagTests.
HONOURED_OTHER = {"help", "config_file", "quiet", "multi_gpu", "main_process_port", "no_python", "module", "tee",
                  "log_dir", "rank_prefix", "no_rank_prefix", "monitor_interval", "project_dir", "job_token_file",
                  "trace", "mpirun_hostfile"}  # mpirun_hostfile: multinode.LaunchStyles starts Open MPI with it
# The DeepSpeed flags and what the processes get (the mapping onto FSDP, docs/launcher.md).
DEEPSPEED_ENV = {
    "use_deepspeed": ([], {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "SHARD_GRAD_OP"}),
    "zero_stage": (["3"], {"FSDP_SHARDING_STRATEGY": "FULL_SHARD", "FSDP_OFFLOAD_PARAMS": "false"}),
    "offload_param_device": (["cpu"], {"FSDP_OFFLOAD_PARAMS": "true"}),
    "offload_optimizer_device": (["cpu"], {"FSDP_OFFLOAD_PARAMS": "true"}),
    "gradient_clipping": (["1.5"], {"ACCELERATE_GRADIENT_CLIPPING": "1.5"}),
    "deepspeed_config_file": (None, {"FSDP_SHARDING_STRATEGY": "FULL_SHARD", "ACCELERATE_MIXED_PRECISION": "bf16",
                                     "ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "4"}),
}
DS_JSON = """{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 4,
 "bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "overlap_comm": true}}"""


def help_groups():
    """`accelerate launch --help`: the flags it documents, and its three groups of the
    reference's other flags (mapped, tuning, refused), parsed from the text."""
    r = subprocess.run([LAUNCHER, "launch", "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    native, groups, current = set(), {"mapped": set(), "tuning": set(), "refused": set()}, None
    for line in r.stdout.splitlines():
        if line.startswith("  mapped onto FSDP"):
            current = "mapped"
        elif line.startswith("  accepted; they tune"):
            current = "tuning"
        elif line.startswith("  refused with an error"):
            current = "refused"
        names = [w[2:].rstrip(",") for w in line.split() if w.startswith("--")]
        if current:
            groups[current].update(names)
        elif line.startswith("  -") and names:
            native.add(names[0])
    return native, groups


def reference_table():
    """test/expected/hf-accelerate.txt: {kind: [names]} ('flag' and 'older-flag' as (name, arity))."""
    table = {k: [] for k in ("command", "flag", "older-flag", "key", "older-key", "distributed_type")}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "expected", "hf-accelerate.txt")
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                kind, rest = line.split(" ", 1)
                table[kind].append(tuple(rest.split()) if kind.endswith("flag") else rest.strip())
    return table


class FlagTests(LauncherTest):
    """Every flag the launcher accepts, one by one (issue 31: honoured, mapped or refused;
    what only tunes Python is named in a warning that --quiet does not hide)."""

    def test_every_documented_flag_has_a_check(self):
        native, groups = help_groups()
        self.assertEqual(native, set(HONOURED_ENV) | HONOURED_OTHER)
        self.assertEqual(groups["mapped"], set(DEEPSPEED_ENV))
        self.assertGreater(len(groups["tuning"]), 20)
        self.assertGreater(len(groups["refused"]), 20)
        self.assertFalse(groups["tuning"] & groups["refused"])

    def test_every_reference_flag_is_handled(self):
        """Every flag of the reference's `accelerate launch` (test/expected/hf-accelerate.txt,
        from its source) is honoured, mapped, tuning or refused here, with its arity."""
        native, groups = help_groups()
        table = reference_table()
        handled = native | groups["mapped"] | groups["tuning"] | groups["refused"]
        self.assertGreater(len(table["flag"]), 100)
        switches = self.switches()
        for name, arity in table["flag"] + table["older-flag"]:
            with self.subTest(flag=name):
                self.assertIn(name, handled)
                if name in groups["tuning"] | groups["refused"]:
                    self.assertEqual(name in switches, arity == "switch")
        # Sizes of the reference's parallelism: 1 asks for nothing, 2 is refused naming the flag.
        self.launch_env_probe(["--cpu", "--parallelism_config_tp_size", "1"], expect_ranks=[0])
        r = run(["--cpu", "--parallelism_config_tp_size", "2", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--parallelism_config_tp_size: a size above 1", r.stderr)

    def test_mpirun_hostfile_is_checked_before_anything_starts(self):
        missing = os.path.join(self.tmp, "no-hosts")
        r = run(["--cpu", "--mpirun_hostfile", missing, PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"--mpirun_hostfile {missing}: cannot read it", r.stderr)
        empty = self.write_config("# no host\n", os.path.join(self.tmp, "hosts"))
        r = run(["--cpu", "--mpirun_hostfile", empty, "--max_restarts", "1", PROBE, "env", self.tmp], self.env)
        self.assertIn("restarts (--max_restarts) are mpirun's", r.stderr)
        r = run(["--cpu", "--mpirun_hostfile", empty, PROBE, "env", self.tmp], self.env)
        self.assertIn(f"--mpirun_hostfile {empty}: names no host", r.stderr)

    def test_log_with_is_checked_at_launch(self):
        for value, text in (("wandb", "'wandb' is one of Hugging Face Accelerate's Python trackers"),
                            ("csv,bogus", "'bogus' is not a tracker")):
            r = run(["--cpu", "--log_with", value, PROBE, "env", self.tmp], self.env)
            with self.subTest(value=value):
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"--log_with: {text}", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))
        ranks, _ = self.launch_env_probe(["--cpu", "--log_with", "all"], expect_ranks=[0])
        self.assertEqual(ranks[0][0]["ACCELERATE_LOG_WITH"], "all")

    def test_reshard_after_forward_is_the_strategy(self):
        r = run(["--cpu", "--use_fsdp", "--fsdp_sharding_strategy", "FULL_SHARD", "--fsdp_reshard_after_forward",
                 "false", PROBE, "env", self.tmp], self.env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("contradict each other", r.stderr)
        ranks, _ = self.launch_env_probe(["--cpu", "--use_fsdp", "--fsdp_reshard_after_forward", "SHARD_GRAD_OP"],
                                         expect_ranks=[0])
        self.assertEqual(ranks[0][0]["FSDP_SHARDING_STRATEGY"], "SHARD_GRAD_OP")

    def test_honoured_flags_reach_the_processes(self):
        for flag, (values, var, expected) in HONOURED_ENV.items():
            ranks, r = self.launch_env_probe(["--cpu", "--main_process_port", "0", "--" + flag] + values)
            with self.subTest(flag=flag):
                for v, _ in ranks.values():
                    self.assertEqual(v.get(var), expected, r.stderr)
                self.assertNotIn("warning", r.stderr)

    def test_honoured_flags_without_a_variable(self):
        port = free_port_pair()
        ranks, _ = self.launch_env_probe(["--cpu", "--main_process_port", str(port)], expect_ranks=[0])
        self.assertEqual(ranks[0][0]["MASTER_PORT"], str(port))
        ranks, _ = self.launch_env_probe(["--cpu", "--project_dir", "p"], expect_ranks=[0])
        self.assertEqual(ranks[0][0]["ACCELERATE_PROJECT_DIR"], os.path.join(self.tmp, "p"))
        _, r = self.launch_env_probe(["--cpu", "--monitor_interval", "0.2"], expect_ranks=[0])
        self.assertNotEqual(run(["--cpu", "--monitor_interval", "x", PROBE, "env", self.tmp], self.env).returncode, 0)
        _, r = self.launch_env_probe(["--num_processes", "2", "--multi_gpu"], expect_ranks=[0, 1])
        self.assertIn("at least 2 processes", run(["--multi_gpu", "--num_processes", "1", PROBE, "env", self.tmp],
                                                  self.env).stderr)
        path = self.write_config(HF_MULTI_CPU)
        ranks, _ = self.launch_env_probe(["--config_file", path], expect_ranks=[0, 1])
        self.assertEqual(ranks[0][0]["ACCELERATE_MIXED_PRECISION"], "bf16")
        self.assertIn("note:", run([PROBE, "env", self.tmp], self.env).stderr)  # the defaults note
        self.assertNotIn("note:", run(["--quiet", PROBE, "env", self.tmp], self.env).stderr)
        logs = os.path.join(self.tmp, "logs")
        self.launch_env_probe(["--cpu", "--log_dir", logs, "--tee", "1"], expect_ranks=[0])
        self.assertEqual(sorted(os.listdir(logs)), ["rank0.stdout.log"])
        _, r = self.launch_env_probe(["--cpu", "--rank_prefix"], expect_ranks=[0])
        self.assertIn("[rank0]: probe rank 0 of 1", r.stdout)
        _, r = self.launch_env_probe(["--cpu", "--num_processes", "2", "--no_rank_prefix"], expect_ranks=[0, 1])
        self.assertNotIn("[rank", r.stdout)

    def test_no_python_and_module(self):
        script = os.path.join(self.tmp, "probe.py")  # a .py name, run directly with --no_python
        os.symlink(PROBE, script)
        out = os.path.join(self.tmp, "py")
        os.makedirs(out)
        r = run(["--cpu", "--no_python", script, "env", out], self.env)
        self.assertEqual((r.returncode, os.listdir(out)), (0, ["rank0.env"]), r.stderr)
        data = os.path.join(self.tmp, "d.json")
        with open(data, "w") as f:
            f.write('{"b": 1}')
        r = run(["--cpu", "--module", "json.tool", data], self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"b": 1', r.stdout)

    def test_help(self):
        r = subprocess.run([LAUNCHER, "launch", "--help"], capture_output=True, text=True)
        self.assertIn("usage: accelerate launch", r.stdout)

    def test_tuning_flags_warn_even_when_quiet(self):
        _, groups = help_groups()
        switches = self.switches()
        for flag in sorted(groups["tuning"]):
            args = ["--" + flag] if flag in switches else ["--" + flag, "yes"]
            _, r = self.launch_env_probe(["-q", "--cpu"] + args, expect_ranks=[0])
            with self.subTest(flag=flag):
                self.assertIn("warning: these settings change nothing", r.stderr)
                self.assertIn(f"  --{flag}: ", r.stderr)

    def test_refused_flags_fail_naming_the_flag(self):
        _, groups = help_groups()
        switches = self.switches()
        for flag in sorted(groups["refused"]):
            args = ["--" + flag] if flag in switches else ["--" + flag, "something"]
            r = run(["--cpu"] + args + [PROBE, "env", self.tmp], self.env)
            with self.subTest(flag=flag):
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"--{flag}: ", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "rank0.env")))
            if flag not in switches:  # a value that asks for nothing is accepted
                self.launch_env_probe(["--cpu", "--" + flag, "none"], expect_ranks=[0])

    def test_deepspeed_flags_map_onto_fsdp_in_one_line(self):
        ds = os.path.join(self.tmp, "ds.json")
        with open(ds, "w") as f:
            f.write(DS_JSON)
        for flag, (values, expected) in DEEPSPEED_ENV.items():
            args = ["--use_deepspeed"] + ([] if flag == "use_deepspeed" else ["--" + flag] + (values or [ds]))
            ranks, r = self.launch_env_probe(["-q", "--cpu", "--num_processes", "2"] + args, expect_ranks=[0, 1])
            with self.subTest(flag=flag):
                for v, _ in ranks.values():
                    self.assertEqual({k: v.get(k) for k in expected}, expected, r.stderr)
                self.assertEqual(r.stderr.count("DeepSpeed ZeRO-"), 1, r.stderr)
        self.assertIn("zero_optimization.overlap_comm", r.stderr)  # the file's speed-only keys are named
        # Without --use_deepspeed the reference reads none of them: said, not silently dropped.
        ranks, r = self.launch_env_probe(["--cpu", "--zero_stage", "3"], expect_ranks=[0])
        self.assertNotIn("ACCELERATE_USE_FSDP", ranks[0][0])
        self.assertIn("without --use_deepspeed these flags change nothing: --zero_stage", r.stderr)

    def test_deepspeed_without_an_equivalent_is_refused(self):
        ds = os.path.join(self.tmp, "ds.json")
        for args, text in ((["--offload_param_device", "nvme"], "offloading to NVMe is not available"),
                           (["--zero_stage", "4"], "expected 0, 1, 2 or 3"),
                           (["--zero_stage", "0", "--offload_param_device", "cpu"], "offload needs zero_stage"),
                           (["--use_fsdp"], "choose one"),
                           (["--deepspeed_config_file", ds], "cannot be read")):
            r = run(["--cpu", "--use_deepspeed"] + args + [PROBE, "env", self.tmp], self.env)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(text, r.stderr, args)
        with open(ds, "w") as f:
            f.write('{"optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2}}')
        r = run(["--cpu", "--use_deepspeed", "--deepspeed_config_file", ds, PROBE, "env", self.tmp], self.env)
        self.assertIn("optimizer: DeepSpeed's own optimizer is not available", r.stderr)

    def test_deepspeed_config_section(self):
        text = HF_MULTI_CPU.replace("distributed_type: MULTI_CPU", "distributed_type: DEEPSPEED") + (
            "deepspeed_config:\n"
            "  gradient_accumulation_steps: 2\n"
            "  gradient_clipping: 1.0\n"
            "  offload_optimizer_device: none\n"
            "  offload_param_device: cpu\n"
            "  zero3_init_flag: true\n"
            "  zero3_save_16bit_model: true\n"
            "  zero_stage: 3\n")
        ranks, r = self.launch_env_probe(["-q", "--config_file", self.write_config(text)], expect_ranks=[0, 1])
        for v, _ in ranks.values():
            self.assertEqual((v["FSDP_SHARDING_STRATEGY"], v["FSDP_OFFLOAD_PARAMS"], v["ACCELERATE_GRADIENT_CLIPPING"],
                              v["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"]), ("FULL_SHARD", "true", "1.0", "2"))
        self.assertIn("DeepSpeed ZeRO-3 -> FSDP FULL_SHARD, parameters offloaded to CPU", r.stderr)
        self.assertIn("zero3_init_flag: deepspeed.zero.Init", r.stderr)
        # A JSON file's bf16 wins over the file's default `mixed_precision: 'no'`; a flag saying
        # otherwise is an error.
        ds = os.path.join(self.tmp, "ds.json")
        with open(ds, "w") as f:
            f.write('{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}')
        no_mp = text.replace("mixed_precision: bf16", "mixed_precision: 'no'").replace(
            "  zero_stage: 3\n", f"  deepspeed_config_file: {ds}\n")
        ranks, r = self.launch_env_probe(["--config_file", self.write_config(no_mp)], expect_ranks=[0, 1])
        self.assertEqual((ranks[0][0]["ACCELERATE_MIXED_PRECISION"], ranks[0][0]["FSDP_SHARDING_STRATEGY"]),
                         ("bf16", "SHARD_GRAD_OP"), r.stderr)
        r = run(["--config_file", self.write_config(no_mp), "--mixed_precision", "fp16", PROBE, "env", self.tmp],
                self.env)
        self.assertIn("enables bf16 but mixed precision fp16 was asked for", r.stderr)
        r = run(["--config_file", self.write_config(text + "  deepspeed_hostfile: /etc/hosts\n"), PROBE, "env",
                 self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("key 'deepspeed_config.deepspeed_hostfile': DeepSpeed's own multi-machine launcher", r.stderr)
        r = run(["--config_file", self.write_config(text.replace("DEEPSPEED", "MEGATRON_LM")), PROBE, "env",
                 self.tmp], self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("MEGATRON_LM (tensor or pipeline parallelism) is not available", r.stderr)

    _switches = None

    @classmethod
    def switches(cls):
        """The switches among the reference's flags: the launcher says they take no value."""
        if cls._switches is None:
            _, groups = help_groups()
            cls._switches = set()
            for flag in groups["tuning"] | groups["refused"]:
                r = subprocess.run([LAUNCHER, "launch", "--" + flag + "=x", "--cpu", "/bin/true"],
                                   capture_output=True, text=True, timeout=20)
                if f"option --{flag} takes no value" in r.stderr:
                    cls._switches.add(flag)
        return cls._switches

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--probe", required=True)
    opts, rest = parser.parse_known_args()
    LAUNCHER = os.path.abspath(opts.launcher)
    PROBE = os.path.abspath(opts.probe)
    unittest.main(argv=[sys.argv[0], "-v"] + rest)
