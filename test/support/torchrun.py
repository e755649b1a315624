#!/usr/bin/python3
"""torchrun, as the tests start it.

Debian 13's python3-torch 2.6 is built without libuv, but torchrun's rendezvous creates its
TCPStore with use_libuv left at its default (True), so torchrun aborts before starting any
worker: "use_libuv was requested but PyTorch was build without libuv support". Where the
store cannot use libuv, this runs torchrun with the classic store server as the default
(what USE_LIBUV=0 selects where PyTorch reads it); elsewhere it is plain torchrun. Users of
Debian 13's torchrun need the same (docs/troubleshooting.md).
"""
import os
import sys

import torch.distributed as dist


def libuv_missing():
    try:
        dist.TCPStore("127.0.0.1", 0, 1, True, use_libuv=True)
    except TypeError:
        return False  # a LibTorch without the option (1.13) has no libuv server to miss
    except RuntimeError as e:
        return "libuv" in str(e)
    return False


if libuv_missing():
    # The workers' init_process_group (env://) reads USE_LIBUV itself.
    os.environ.setdefault("USE_LIBUV", "0")

    class ClassicStore(dist.TCPStore):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    import torch.distributed.elastic.rendezvous.c10d_rendezvous_backend as c10d_backend
    import torch.distributed.elastic.rendezvous.static_tcp_rendezvous as static_backend
    dist.TCPStore = ClassicStore
    static_backend.TCPStore = ClassicStore
    c10d_backend.TCPStore = ClassicStore

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
