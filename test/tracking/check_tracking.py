#!/usr/bin/env python3
"""Experiment tracking end to end (docs/tracking.md): tracking_worker under the launcher with
--log_with all, on 1 and then 2 processes, and what it wrote read back by independent
readers -- TensorBoard's event records by Python's protobuf (Debian's python3-protobuf, the
message layout declared here from TensorBoard's event.proto/summary.proto field numbers) and
their checksums by python3-crc32c; the CSV by the csv module, the JSON lines by json. Checks:
every value at its step, only process 0 writes (2 processes log once, not twice), a second
run appends to the text files and adds a new event file (nothing overwritten)."""
import argparse
import csv
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

import crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def event_class():
    """tensorflow.Event with only the fields the runtime writes (field numbers as upstream)."""
    f = descriptor_pb2.FileDescriptorProto(name="tb_subset.proto", package="tbsubset", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    value = f.message_type.add(name="Value")
    value.field.add(name="tag", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=T.TYPE_FLOAT, label=T.LABEL_OPTIONAL)
    summary = f.message_type.add(name="Summary")
    summary.field.add(name="value", number=1, type=T.TYPE_MESSAGE, type_name=".tbsubset.Value",
                      label=T.LABEL_REPEATED)
    event = f.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=T.TYPE_DOUBLE, label=T.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=T.TYPE_INT64, label=T.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=T.TYPE_MESSAGE, type_name=".tbsubset.Summary",
                    label=T.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    desc = pool.FindMessageTypeByName("tbsubset.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def masked(data):
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(path):
    Event = event_class()
    data, at, events = open(path, "rb").read(), 0, []
    while at < len(data):
        header = data[at:at + 12]
        (length,) = struct.unpack("<Q", header[:8])
        (length_crc,) = struct.unpack("<I", header[8:12])
        check(length_crc == masked(header[:8]), f"{os.path.basename(path)}: record at {at}: length checksum")
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        check(body_crc == masked(body), f"{os.path.basename(path)}: record at {at}: data checksum")
        e = Event()
        e.ParseFromString(body)
        events.append(e)
        at += 16 + length
    return events


def launch(a, n, project):
    cmd = [a.launcher, "launch", "--cpu", "--num_processes", str(n), "--log_with", "all",
           "--project_dir", project, a.worker]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    check(p.returncode == 0 and p.stdout.count("done") == n, f"{n} process(es) ran: rc {p.returncode}")
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])


def check_run(run_dir, runs):
    """`runs` runs (each 1 or 2 processes) appended to the same directory."""
    rows = list(csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))))
    loss = [(int(r["step"]), float(r["value"])) for r in rows if r["name"] == "loss"]
    check(loss == [(0, 1.0), (1, 0.5), (2, 1 / 3), (10, 0.0625)] * runs, f"csv loss rows: {loss}")
    check([float(r["value"]) for r in rows if r["name"] == "written_by"] == [0.0] * 3 * runs,
          "csv: only process 0 wrote")
    check([int(r["step"]) for r in rows if r["name"] == "last"] == [11] * runs, "csv: the default step follows 10")
    check(any(r["name"] == "grad_sync/passes" and r["step"] == "20" for r in rows), "csv: runtime stats at step 20")
    conf = list(csv.DictReader(open(os.path.join(run_dir, "config.csv"))))
    check([(c["name"], c["value"]) for c in conf][:3] ==
          [("lr", "0.125"), ("optimizer", 'SGD, momentum "0.9"'), ("epochs", "3")], "csv config, quoted text")
    lines = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    check([(l["step"], l["values"].get("loss")) for l in lines if "loss" in l["values"]] ==
          [(0, 1.0), (1, 0.5), (2, 1 / 3), (10, 0.0625)] * runs, "jsonl loss lines")
    configs = [json.loads(l)["config"] for l in open(os.path.join(run_dir, "config.jsonl"))]
    check(configs == [{"lr": 0.125, "optimizer": 'SGD, momentum "0.9"', "epochs": 3.0}] * runs, "jsonl config")
    files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    check(len(files) == runs, f"one event file per run: {len(files)}")
    for f in files:
        events = read_events(f)
        check(events[0].file_version == "brain.Event:2", "first event is the file version")
        scalars = [(e.step, v.tag, v.simple_value) for e in events[1:] for v in e.summary.value]
        want = [(0, "loss", 1.0), (0, "written_by", 0.0), (1, "loss", 0.5), (1, "written_by", 0.0),
                (2, "loss", 1 / 3), (2, "written_by", 0.0), (10, "loss", 0.0625), (11, "last", 1.5)]
        got = [(s, t, v) for s, t, v in scalars if not t.startswith(("grad_sync/", "fsdp/"))]
        check(len(got) == len(want) and all(g[:2] == w[:2] and abs(g[2] - w[2]) < 1e-7 for g, w in zip(got, want)),
              f"event scalars (steps, tags, values as float): {got}")
        check(all(e.wall_time > 1.6e9 for e in events), "wall times are Unix seconds")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    one, two = os.path.join(a.work, "one"), os.path.join(a.work, "two")
    launch(a, 1, one)
    check_run(os.path.join(one, "demo"), 1)
    launch(a, 2, two)
    check_run(os.path.join(two, "demo"), 1)
    launch(a, 2, two)  # the same directory again: appended, a second event file
    check_run(os.path.join(two, "demo"), 2)
    if failures:
        print(f"FAILED tracking: {len(failures)} checks")
        return 1
    print("PASSED tracking")
    return 0


if __name__ == "__main__":
    sys.exit(main())
