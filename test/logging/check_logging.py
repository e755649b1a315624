#!/usr/bin/env python3
"""accelerate/logging.h on 2 real processes (issue 50 item 4, docs/runtime-api.md "Logging").

1. Under `accelerate launch --num_processes 2`: a user's logger prints main-process messages
   once (before the Accelerator exists too: the process comes from the launch environment),
   every-process messages once per process with its marker, warning_once once; the runtime's
   own notes (ACCELERATE_DEBUG_MODE) and the launcher's go through the same format.
   ACCELERATE_LOG_LEVEL=warning silences every note (program, runtime, launcher) and keeps
   the warnings; =debug adds the debug line; `-q` silences the launcher's notes only;
   ACCELERATE_LOG_LEVEL=loud is refused by the launcher before anything starts.
2. in_order: two processes started by hand with the same stderr file (so the file holds the
   lines in the order they were written); process 0 takes its turn 0.7 s late, and its line
   still comes first.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
        if detail:
            print("     " + detail.replace("\n", "\n     "), flush=True)


def launch(args, extra_env=None, flags=()):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("ACCELERATE_LOG_LEVEL", None)
    env.update(extra_env or {})
    cmd = [args.launcher, "launch", "--cpu", "--num_processes", "2", "--main_process_port", str(free_port()), *flags,
           args.worker]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


def count(text, line):
    return sum(1 for l in text.splitlines() if l == line)


def check_launched(args):
    rc, err = launch(args, {"ACCELERATE_DEBUG_MODE": "true"})
    check(rc == 0, "2 processes under the launcher end well", err)
    check(count(err, "worker: note: before the accelerator: main process only") == 1,
          "before the Accelerator: a main-process message prints once", err)
    for r in (0, 1):
        check(count(err, f"worker: note: [process {r}] before the accelerator: every process") == 1,
              f"before the Accelerator: process {r}'s every-process message with its marker", err)
    check(count(err, "worker: note: after: main process only") == 1, "after: a main-process message prints once", err)
    check(count(err, "worker: warning: a warning") == 1, "warnings are main-process-only too by default", err)
    check(count(err, "worker: warning: said once") == 1, "warning_once prints once", err)
    check("a debug line" not in err, "debug is below the default level (info)", err)
    check(any(re.fullmatch(r"accelerate: note: all 2 processes met at .*", l) for l in err.splitlines()),
          "the runtime's own note goes through the format (once)", err)
    check(sum(1 for l in err.splitlines() if re.fullmatch(r"accelerate: note: \[process [01]\] on .*: Gloo on .*", l)) == 2,
          "the runtime's every-process note carries each process's marker", err)
    check(any(l.startswith("accelerate launch: note: starting ranks 0..1 of 2") for l in err.splitlines()),
          "the launcher's note goes through the format", err)

    rc, err = launch(args, {"ACCELERATE_DEBUG_MODE": "true", "ACCELERATE_LOG_LEVEL": "warning"})
    check(rc == 0 and ": note: " not in err and count(err, "worker: warning: a warning") == 1,
          "ACCELERATE_LOG_LEVEL=warning: no note from the program, the runtime or the launcher; warnings stay", err)

    rc, err = launch(args, {"ACCELERATE_LOG_LEVEL": "DEBUG"})
    check(rc == 0 and count(err, "worker: debug: a debug line") == 1, "ACCELERATE_LOG_LEVEL=DEBUG adds the debug line", err)

    rc, err = launch(args, flags=("-q",))
    check(rc == 0 and "accelerate launch: note:" not in err and
          count(err, "worker: note: after: main process only") == 1,
          "-q: no launcher notes, the program's own stay", err)

    rc, err = launch(args, {"ACCELERATE_LOG_LEVEL": "loud"})
    check(rc == 2 and "ACCELERATE_LOG_LEVEL='loud' is not a log level" in err and "worker:" not in err,
          "a bad ACCELERATE_LOG_LEVEL is refused before any process starts", err)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_in_order(args):
    with tempfile.TemporaryFile(mode="w+") as out:
        port = str(free_port())
        procs = []
        for r in (0, 1):
            env = dict(os.environ, OMP_NUM_THREADS="1", RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                       LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            env.pop("ACCELERATE_LOG_LEVEL", None)
            procs.append(subprocess.Popen([args.worker], env=env, stdout=subprocess.DEVNULL, stderr=out))
        rcs = [p.wait(timeout=120) for p in procs]
        out.seek(0)
        err = out.read()
    lines = [l for l in err.splitlines() if "in turn from process" in l]
    check(rcs == [0, 0], "2 processes started by hand end well", err)
    check(lines == ["worker: note: [process 0] in turn from process 0", "worker: note: [process 1] in turn from process 1"],
          "in_order: process 0's line first although it came 0.7 s late", err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--worker", required=True)
    args = ap.parse_args()
    check_launched(args)
    check_in_order(args)
    if failures:
        print(f"FAILED logging: {len(failures)} check(s)")
        return 1
    print("PASSED logging")
    return 0


if __name__ == "__main__":
    sys.exit(main())
