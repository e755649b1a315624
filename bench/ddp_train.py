"""The training loop of bench/overhead_train.cpp in Python with PyTorch DDP.

Same model (512-1024-1024-10 MLP), synthetic data sizes, SGD with momentum, global batch
and steps; each process reads its shard through DistributedSampler, as a migrated C++
program does through prepare_data_loader. Run it under torchrun (any number of processes):

    OMP_NUM_THREADS=1 /usr/bin/torchrun --nproc_per_node 2 --redirects 1 --tee 1 \
        --log_dir /tmp/ddp-logs bench/ddp_train.py --batch-size 128

--batch-size is per process (like the C++ program under `accelerate launch`). Rank 0
prints `bench: step_ms=<median> mean_ms=<mean> cpu_ms=<process CPU time per step> steps=<timed steps>`
and `final: loss=...`, as the C++ program does.
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (at least 1)")
    p.add_argument("--batch-size", type=int, default=256, help="per process")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 1 or args.batch_size < 1:
        p.error("steps, warmup and batch size must be positive")

    dist.init_process_group("gloo")
    world = dist.get_world_size()
    rank = dist.get_rank()
    torch.manual_seed(args.seed)

    features, hidden, classes = 512, 1024, 10
    global_batch = args.batch_size * world
    n = global_batch * (args.warmup + args.steps)
    dataset = TensorDataset(torch.randn(n, features), torch.randint(classes, (n,)))
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(),
                          nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, classes))
    model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    step_ms = []
    last_loss = 0.0
    cpu0 = 0.0
    t0 = time.perf_counter()
    for step, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        optimizer.step()
        last_loss = loss.item()
        t1 = time.perf_counter()
        if step >= args.warmup:
            step_ms.append((t1 - t0) * 1000.0)
        if step + 1 == args.warmup:
            cpu0 = time.process_time()  # all threads of this process, like std::clock
        t0 = t1

    cpu_ms = (time.process_time() - cpu0) * 1000.0 / len(step_ms)
    if rank == 0:
        print("bench: step_ms=%.3f mean_ms=%.3f cpu_ms=%.3f steps=%d"
              % (statistics.median(step_ms), statistics.mean(step_ms), cpu_ms, len(step_ms)))
        print("final: loss=%.6f" % last_loss, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
