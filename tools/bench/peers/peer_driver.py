#!/usr/bin/env python3
"""adxl-bench's peer driver: NIXL or Mooncake between two processes of their own.

adxl-bench (the initiator process) starts this script with pipes and steps it;
the script is the peer's initiator and starts the peer's target as a child
(this script again, --target), with a pipe pair of its own.  Both processes
hold a buffer of --size bytes (numpy, page-aligned, touched).  The peer moves
block i of the initiator's buffer to / from block i of the target's, as the
engine rows do.

Line protocol on stdin / stdout (one line each way per command):
  step W|R BLOCK COUNT VERIFY  ->  ok SECONDS CPU_SECONDS pass|fail|unchecked
                                   | err WHY
  plan FILE                    ->  ok | err WHY      (--workload kv: the calls to make)
  kvstep W|R VERIFY            ->  ok SECONDS CPU_SECONDS pass|fail|unchecked
  quit                         ->  (exit)
First line out: "ready DESCRIPTION" or "unavailable WHY" (then exit 0).
SECONDS is the wall time of the transfer alone (prepared descriptors are
cached per shape); CPU_SECONDS the CPU time of both peer processes in it.
VERIFY=1: the destination is poisoned before the step and compared with the
source's pattern after it (outside the timed part).  A plan FILE (little-endian
u64): pool bytes, number of calls, then per call its number of segments and
per segment (local offset, remote offset, length); kvstep makes the calls one
after another and checks the whole destination pool against its expected
image (poison, the source pattern at every destination segment).

Engines: nixl (UCX backend, its progress thread), nixl_poll (no progress
thread: the initiator polls the transfer, the target polls its agent),
mooncake (TCP transport; MC_TCP_ENABLE_CONNECTION_POOL=1 is set by the caller).
"""
import argparse
import mmap
import os
import select
import sys
import time

import numpy as np

PAGE = 4096


def aligned_buffer(size, pages):
    """A page-aligned anonymous mapping of `size` bytes, every page touched.

    Its pages follow adxl-bench's --pages, as the engine's buffers do: "huge"
    advises transparent huge pages (numpy would do that by itself for a large
    np.zeros), "base" refuses them.  Returns (mapping, uint8 view).
    """
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_HUGEPAGE if pages == "huge" else mmap.MADV_NOHUGEPAGE)
    buf = np.frombuffer(m, dtype=np.uint8)
    buf[::PAGE] = 1  # touch every page
    return m, buf


def pattern(seed, nbytes):
    n = nbytes // 8
    return (np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed)).view(np.uint8)


POISON = 0xA5


class Pipe:
    """Line-oriented pipe pair."""

    def __init__(self, rfd, wfd):
        self.r = os.fdopen(rfd, "r", buffering=1)
        self.w = os.fdopen(wfd, "w", buffering=1)

    def send(self, line):
        self.w.write(line + "\n")
        self.w.flush()

    def recv(self):
        line = self.r.readline()
        if not line:
            raise EOFError("peer pipe closed")
        return line.rstrip("\n")

    def readable(self):
        return bool(select.select([self.r], [], [], 0)[0])


# ------------------------------------------------------------------ engines

class Nixl:
    def __init__(self, name, poll):
        try:  # the nixl-cu12 wheel's module; `nixl` where the meta package is installed
            from nixl_cu12._api import nixl_agent, nixl_agent_config
        except ImportError:
            from nixl._api import nixl_agent, nixl_agent_config
        self.poll = poll
        cfg = nixl_agent_config(enable_prog_thread=not poll, enable_listen_thread=False, backends=["UCX"])
        self.agent = nixl_agent(name, cfg)
        self.handles = {}

    def register(self, buf):
        self.buf = buf
        self.reg = self.agent.register_memory([(buf.ctypes.data, buf.nbytes, 0, "")], "DRAM")
        return self.agent.get_agent_metadata().hex()

    def connect(self, peer_meta_hex):
        self.peer = self.agent.add_remote_agent(bytes.fromhex(peer_meta_hex))
        if isinstance(self.peer, bytes):
            self.peer = self.peer.decode()

    def descs(self, base, block, count):
        a = np.empty((count, 3), dtype=np.uint64)
        a[:, 0] = base + np.arange(count, dtype=np.uint64) * np.uint64(block)
        a[:, 1] = block
        a[:, 2] = 0
        return self.agent.get_xfer_descs(a, "DRAM")

    def transfer(self, op, block, count, peer_base):
        key = (op, block, count)
        h = self.handles.get(key)
        if h is None:
            local = self.descs(self.buf.ctypes.data, block, count)
            remote = self.descs(peer_base, block, count)
            h = self.agent.initialize_xfer("WRITE" if op == "W" else "READ", local, remote, self.peer)
            self.handles[key] = h
        state = self.agent.transfer(h)
        while state not in ("DONE", "ERR"):
            state = self.agent.check_xfer_state(h)
        if state == "ERR":
            raise RuntimeError("nixl transfer state ERR")

    def call(self, op, key, local, remote, lengths, peer_base):
        h = self.handles.get(key)
        if h is None:
            zeros = np.zeros_like(lengths)
            ld = np.stack([self.buf.ctypes.data + local, lengths, zeros], axis=1)
            rd = np.stack([peer_base + remote, lengths, zeros], axis=1)
            h = self.agent.initialize_xfer("WRITE" if op == "W" else "READ", self.agent.get_xfer_descs(ld, "DRAM"),
                                           self.agent.get_xfer_descs(rd, "DRAM"), self.peer)
            self.handles[key] = h
        state = self.agent.transfer(h)
        while state not in ("DONE", "ERR"):
            state = self.agent.check_xfer_state(h)
        if state == "ERR":
            raise RuntimeError("nixl transfer state ERR")

    def serve_once(self):
        # Busy-polling target: getting notifications progresses the UCX worker.
        self.agent.get_new_notifs()


class Mooncake:
    def __init__(self, name, poll):
        from mooncake.engine import TransferEngine
        self.te = TransferEngine()
        rc = self.te.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "")
        if rc != 0:
            raise RuntimeError(f"mooncake initialize: {rc}")
        self.lists = {}

    def register(self, buf):
        self.buf = buf
        rc = self.te.register_memory(buf.ctypes.data, buf.nbytes)
        if rc != 0:
            raise RuntimeError(f"mooncake register_memory: {rc}")
        return f"127.0.0.1:{self.te.get_rpc_port()}"

    def connect(self, session):
        self.peer = session

    def transfer(self, op, block, count, peer_base):
        key = (block, count)
        lists = self.lists.get(key)
        if lists is None:
            idx = [i * block for i in range(count)]
            lists = ([self.buf.ctypes.data + o for o in idx], [peer_base + o for o in idx], [block] * count)
            self.lists[key] = lists
        fn = self.te.batch_transfer_sync_write if op == "W" else self.te.batch_transfer_sync_read
        rc = fn(self.peer, lists[0], lists[1], lists[2])
        if rc != 0:
            raise RuntimeError(f"mooncake batch transfer: {rc}")

    def call(self, op, key, local, remote, lengths, peer_base):
        lists = self.lists.get(key[1:])
        if lists is None:
            lists = ([int(x) for x in self.buf.ctypes.data + local], [int(x) for x in peer_base + remote],
                     [int(x) for x in lengths])
            self.lists[key[1:]] = lists
        fn = self.te.batch_transfer_sync_write if op == "W" else self.te.batch_transfer_sync_read
        rc = fn(self.peer, lists[0], lists[1], lists[2])
        if rc != 0:
            raise RuntimeError(f"mooncake batch transfer: {rc}")

    def serve_once(self):
        time.sleep(0.001)  # the transfer engine's own threads serve


ENGINES = {"nixl": (Nixl, False), "nixl_poll": (Nixl, True), "mooncake": (Mooncake, False)}


def make(engine, name):
    cls, poll = ENGINES[engine]
    return cls(name, poll)


# ------------------------------------------------------------------ target

def target_main(args, pipe):
    _, buf = aligned_buffer(args.size, args.pages)
    eng = make(args.engine, "target")
    pipe.send(f"meta {eng.register(buf)} {buf.ctypes.data}")
    poll = ENGINES[args.engine][1]
    plan, images = None, {}
    active = False  # between "start" and "stop": a step is in flight
    while True:
        if poll and active:
            # Busy-polling agent, only while a step is in flight (between steps it
            # sleeps on the pipe and leaves the cores to the other rows): poll, and
            # look at the pipe every few hundred turns.
            for _ in range(256):
                eng.serve_once()
            if not pipe.readable():
                continue
        words = pipe.recv().split()
        cmd = words[0]
        if cmd == "connect":
            eng.connect(words[1])
            pipe.send("ok")
        elif cmd in ("start", "stop"):  # a step begins / has ended: this process's CPU time so far
            active = cmd == "start"
            pipe.send(f"{time.process_time()!r}")
        elif cmd == "poison":
            buf[: int(words[1])] = POISON
            pipe.send("ok")
        elif cmd == "fill":
            n = int(words[2])
            buf[:n] = pattern(int(words[1]), n)
            pipe.send("ok")
        elif cmd == "check":
            n = int(words[2])
            pipe.send("pass" if np.array_equal(buf[:n], pattern(int(words[1]), n)) else "fail")
        elif cmd == "plan":
            plan, images = load_plan(words[1]), {}
            pipe.send("ok")
        elif cmd == "checkkv":
            op, seed = words[1], int(words[2])
            if op not in images:
                images[op] = expected_image(plan[0], plan[1], op, seed)
            n = plan[0]
            pipe.send("pass" if np.array_equal(buf[:n], images[op]) else "fail")
        elif cmd == "quit":
            sys.stdout.flush()
            os._exit(0)  # NIXL's UCX may crash at exit in its bundled netlink library


# ------------------------------------------------------------------ initiator

def start_target(args):
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(to_w)
        os.close(from_r)
        target_main(args, Pipe(to_r, from_w))
        os._exit(0)
    os.close(to_r)
    os.close(from_w)
    return pid, Pipe(from_r, to_w)


def load_plan(path):
    """[(local, remote, lengths) per call] as uint64 arrays, and the pool's bytes."""
    raw = np.fromfile(path, dtype="<u8")
    pool, ncalls, pos, calls = int(raw[0]), int(raw[1]), 2, []
    for _ in range(ncalls):
        n = int(raw[pos])
        seg = raw[pos + 1:pos + 1 + 3 * n].reshape(n, 3)
        calls.append((seg[:, 0].copy(), seg[:, 1].copy(), seg[:, 2].copy()))
        pos += 1 + 3 * n
    return pool, calls


def expected_image(pool, calls, op, seed):
    """The destination pool after a correct kv step: poison, the source pattern at every segment."""
    src = pattern(seed, pool)
    out = np.full(pool, POISON, dtype=np.uint8)
    for local, remote, lengths in calls:
        frm, to = (local, remote) if op == "W" else (remote, local)
        for f, t, n in zip(frm.tolist(), to.tolist(), lengths.tolist()):
            out[t:t + n] = src[f:f + n]
    return out


def initiator_main(args):
    # The protocol keeps a copy of stdout; fd 1 itself goes to stderr, where
    # the peers' own logging (NIXL logs to stdout) cannot garble it.
    out = Pipe(sys.stdin.fileno(), os.dup(sys.stdout.fileno()))
    sys.stdout.flush()
    os.dup2(2, 1)
    try:
        # The target first: fork before the initiator's engine has threads.
        pid, tgt = start_target(args)
        words = tgt.recv().split()
        if words[0] != "meta":
            raise RuntimeError("target: " + " ".join(words))
        peer_meta, peer_base = words[1], int(words[2])
        _, buf = aligned_buffer(args.size, args.pages)
        eng = make(args.engine, "initiator")
        meta = eng.register(buf)
        eng.connect(peer_meta)
        tgt.send(f"connect {meta}")
        if tgt.recv() != "ok":
            raise RuntimeError("target refused to connect")
    except Exception as e:  # no peer here: the bench's row says why
        out.send(f"unavailable {type(e).__name__}: {e}".replace("\n", " "))
        os._exit(0)
    out.send(f"ready {args.engine} pid {os.getpid()}+{pid}")
    seed = 1
    plan, plan_id, images = None, "", {}
    while True:
        try:
            words = out.recv().split()
        except EOFError:
            words = ["quit"]
        if words[0] == "quit":
            tgt.send("quit")
            os.waitpid(pid, 0)
            os._exit(0)
        if words[0] == "plan":
            try:
                plan = load_plan(words[1])
                plan_id = words[1]
                images = {}
                tgt.send(f"plan {words[1]}")
                out.send(tgt.recv())
            except Exception as e:
                out.send(f"err {type(e).__name__}: {e}".replace("\n", " "))
            continue
        if words[0] == "kvstep":
            try:
                out.send(kv_step(eng, tgt, buf, peer_base, plan, plan_id, images, words[1], words[2] == "1"))
            except Exception as e:
                out.send(f"err {type(e).__name__}: {e}".replace("\n", " "))
            continue
        op, block, count, verify = words[1], int(words[2]), int(words[3]), words[4] == "1"
        n = block * count
        try:
            if verify:
                seed += 1
                prepare(tgt, buf, op, seed, n)
            seconds, cpu = timed(tgt, lambda: eng.transfer(op, block, count, peer_base))
            check = "unchecked"
            if verify:
                if op == "W":
                    tgt.send(f"check {seed} {n}")
                    check = tgt.recv()
                else:
                    check = "pass" if np.array_equal(buf[:n], pattern(seed, n)) else "fail"
            out.send(f"ok {seconds!r} {cpu!r} {check}")
        except Exception as e:
            out.send(f"err {type(e).__name__}: {e}".replace("\n", " "))


def prepare(tgt, buf, op, seed, n):
    """Puts seed's pattern in the first n bytes of the source, poisons the destination's."""
    if op == "W":
        buf[:n] = pattern(seed, n)
        tgt.send(f"poison {n}")
    else:
        tgt.send(f"fill {seed} {n}")
        buf[:n] = POISON
    tgt.recv()


def timed(tgt, run):
    """Runs run() between the target's start and stop: (wall seconds, CPU seconds of both processes)."""
    tgt.send("start")
    cpu0 = float(tgt.recv()) + time.process_time()
    t0 = time.perf_counter()
    run()
    t1 = time.perf_counter()
    tgt.send("stop")
    cpu1 = float(tgt.recv()) + time.process_time()
    return t1 - t0, cpu1 - cpu0


def kv_step(eng, tgt, buf, peer_base, plan, plan_id, images, op, verify):
    """One kv step: every call of the plan in order; verified over the whole pool."""
    pool, calls = plan
    seed = 1 if op == "W" else 2  # fixed per direction: the destination is poisoned before every step
    if verify:
        prepare(tgt, buf, op, seed, pool)

    def run():
        for i, (local, remote, lengths) in enumerate(calls):
            eng.call(op, (op, plan_id, i), local, remote, lengths, peer_base)

    seconds, cpu = timed(tgt, run)
    check = "unchecked"
    if verify:
        if op == "R" and op not in images:
            images[op] = expected_image(pool, calls, op, seed)
        if op == "W":
            tgt.send(f"checkkv {op} {seed}")  # the target computes the same image from the same plan
            check = tgt.recv()
        else:
            check = "pass" if np.array_equal(buf[:pool], images[op]) else "fail"
    return f"ok {seconds!r} {cpu!r} {check}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--engine", choices=sorted(ENGINES), required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--pages", choices=("huge", "base"), default="huge")
    args = p.parse_args()
    initiator_main(args)


if __name__ == "__main__":
    main()
