"""A torchrun-shaped launcher: one process per node starts the node's workers.

    srun --ntasks-per-node=1 python3 launch.py NPROC [STEPS]

Each worker is a new interpreter (multiprocessing's spawn, as torchrun and
torch.multiprocessing start them) with the task's environment, so its
OTEL_RESOURCE_ATTRIBUTES too. A worker's rank is not the Slurm task's: each
passes its own in code, and Resource.create gives the caller's value
precedence over the environment's.
"""
import multiprocessing
import os
import sys

import train


def worker(local_rank, nproc, steps):
    node, nnodes = int(os.environ["SLURM_NODEID"]), int(os.environ["SLURM_NNODES"])
    rank, world_size = node * nproc + local_rank, nnodes * nproc
    train.train(rank, world_size, steps, {
        "nv.dl.rank": rank,
        "nv.dl.local_rank": local_rank,
        "nv.dl.world_size": world_size,
    })


if __name__ == "__main__":
    nproc = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=worker, args=(i, nproc, steps)) for i in range(nproc)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    sys.exit(max(w.exitcode != 0 for w in workers))
