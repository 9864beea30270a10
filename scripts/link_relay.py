#!/usr/bin/python3
"""A userspace netem for scripts/cluster on kernels without sch_netem: two TAP devices, each frame
read from one written to the other DELAY_MS later, LOSS_PERCENT of them dropped, each direction on
its own. No numerics here: it only delays and drops one host's frames (docs/DISTRIBUTED.md §9.1).
  link_relay.py TAP_A TAP_B LOSS_PERCENT DELAY_MS READY_FILE
Creates both TAPs (they vanish when it exits), then writes its pid to READY_FILE and forwards."""
import collections
import fcntl
import math
import os
import random
import select
import struct
import sys
import time

TUNSETIFF = 0x400454CA  # linux/if_tun.h
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
BATCH = 256  # frames read from one TAP before the other gets its turn


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def relay(fds, loss, delay):
    queues = (collections.deque(), collections.deque())  # (due, frame) read from fds[i], for the other
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    while True:
        now = time.monotonic()
        for i, queue in enumerate(queues):
            while queue and queue[0][0] <= now:
                try:
                    os.write(fds[1 - i], queue.popleft()[1])
                except OSError:  # the link is down (scripts/cluster link/fail): the frame is lost
                    pass
        due = min((queue[0][0] for queue in queues if queue), default=None)
        timeout = None if due is None else max(0, math.ceil((due - now) * 1000))
        for fd, _ in poller.poll(timeout):
            i = fds.index(fd)
            for _ in range(BATCH):
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if random.random() >= loss:
                    queues[i].append((time.monotonic() + delay, frame))


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    a, b, loss, delay, ready = sys.argv[1:]
    fds = (open_tap(a), open_tap(b))
    with open(ready + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ready + ".tmp", ready)
    relay(fds, float(loss) / 100, float(delay) / 1000)


if __name__ == "__main__":
    main()
