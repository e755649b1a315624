"""bench/overhead_train.cpp's training loop in Python, on one device, for bench/gpu/run.sh;
with --resident, bench/resident_train.cpp's.

Same model (512-H-H-10 MLP; with --resident FEATURES-H-...-H-10 with --layers hidden
layers), synthetic data sizes, SGD with momentum, batch and steps as the C++ program. With
--resident the whole data set is on the device and the batches are cut by hand from a
shuffled index, as in resident_train.cpp (no DataLoader: Accelerate prepares the model and
the optimizer only). Two ways to run it, so that the C++ figures have Python neighbours
measured on the same machine in the same run:

    python3 bench/gpu/hf_train.py --mode plain   # PyTorch alone (model.to(device), loss.backward())
    python3 bench/gpu/hf_train.py --mode hf      # Hugging Face Accelerate: Accelerator.prepare / backward
        [--mixed-precision no|bf16|fp16] [--steps N] [--warmup N] [--batch-size N] [--hidden N]
        [--resident [--layers N] [--features N]]

Prints `device: ...`, `bench: step_ms=<median> mean_ms=<mean> cpu_ms=<process CPU time per
step> steps=<timed steps>` and `final: loss=...`, the lines the C++ program prints; `--mode
hf` also prints `accelerate: <version>`. Exit status 3 when Hugging Face Accelerate is not
installed (the caller records a skip with that reason).
"""
import argparse
import statistics
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("plain", "hf"), required=True)
    p.add_argument("--mixed-precision", choices=("no", "bf16", "fp16"), default="no")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--resident", action="store_true", help="the data set on the device (resident_train.cpp)")
    p.add_argument("--layers", type=int, default=6, help="hidden layers (--resident)")
    p.add_argument("--features", type=int, default=1024, help="input features (--resident)")
    a = p.parse_args()
    if min(a.steps, a.warmup, a.batch_size, a.hidden, a.layers, a.features) < 1:
        p.error("steps, warmup, batch size, hidden, layers and features must be positive")
    if a.mode == "plain" and a.mixed_precision != "no":
        p.error("--mixed-precision needs --mode hf")
    return a


def setup(a):
    """The loop's objects, prepared by Accelerate in hf mode; returns (step_fn, loader, device)."""
    torch.manual_seed(a.seed)
    features, classes = 512, 10
    n = a.batch_size * (a.warmup + a.steps)
    dataset = TensorDataset(torch.randn(n, features), torch.randint(classes, (n,)))
    loader = DataLoader(dataset, batch_size=a.batch_size, shuffle=True)
    model = nn.Sequential(nn.Linear(features, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden), nn.ReLU(),
                          nn.Linear(a.hidden, classes))
    loss_fn = nn.CrossEntropyLoss()
    if a.mode == "hf":
        acc = hf_accelerator(a)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        model, optimizer, loader = acc.prepare(model, optimizer, loader)

        def step(data, target):
            optimizer.zero_grad()
            loss = loss_fn(model(data), target)
            acc.backward(loss)
            optimizer.step()
            return loss
        return step, loader, acc.device
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(data, target):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        optimizer.step()
        return loss
    return step, loader, device


def resident_batches(a):
    """resident_train.cpp's loop in Python: (step_fn, batches, device, params)."""
    torch.manual_seed(a.seed)
    classes = 10
    n = a.batch_size * (a.warmup + a.steps)
    inputs, targets = torch.randn(n, a.features), torch.randint(classes, (n,))  # made first, as in C++
    layers, width = [], a.features
    for _ in range(a.layers):
        layers += [nn.Linear(width, a.hidden), nn.ReLU()]
        width = a.hidden
    model = nn.Sequential(*layers, nn.Linear(width, classes))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if a.mode == "hf":
        acc = hf_accelerator(a)
        model, optimizer = acc.prepare(model, optimizer)
        device, backward = acc.device, acc.backward
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device)  # in place: the optimizer keeps the same parameters
        backward = torch.Tensor.backward
    inputs, targets = inputs.to(device), targets.to(device)
    perm = torch.randperm(n, device=device)

    def step(data, target):
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        backward(loss)
        optimizer.step()
        return loss
    batches = ((inputs.index_select(0, perm[i:i + a.batch_size]), targets.index_select(0, perm[i:i + a.batch_size]))
               for i in range(0, n, a.batch_size))
    return step, batches, device, sum(p.numel() for p in model.parameters())


def hf_accelerator(a):
    try:
        import accelerate
    except ImportError as e:
        print("hf_train: Hugging Face Accelerate is not installed (%s)" % e, file=sys.stderr)
        sys.exit(3)
    print("accelerate: %s" % accelerate.__version__)
    return accelerate.Accelerator(mixed_precision=a.mixed_precision)


def main():
    a = parse()
    if a.resident:
        step, loader, device, params = resident_batches(a)
        print("params: %d" % params)
    else:
        step, loader, device = setup(a)
    print("device: %s" % device)
    step_ms, last_loss, cpu0 = [], 0.0, 0.0
    t0 = time.perf_counter()
    for i, (data, target) in enumerate(loader):
        last_loss = step(data, target).item()  # synchronises the device, as the C++ loop does
        t1 = time.perf_counter()
        if i >= a.warmup:
            step_ms.append((t1 - t0) * 1000.0)
        if i + 1 == a.warmup:
            cpu0 = time.process_time()
        t0 = t1
    if not step_ms:
        sys.exit("hf_train: no timed steps")
    cpu_ms = (time.process_time() - cpu0) * 1000.0 / len(step_ms)
    print("bench: step_ms=%.3f mean_ms=%.3f cpu_ms=%.3f steps=%d"
          % (statistics.median(step_ms), statistics.mean(step_ms), cpu_ms, len(step_ms)))
    print("final: loss=%.6f" % last_loss, flush=True)


if __name__ == "__main__":
    main()
