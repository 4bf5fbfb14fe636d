"""What every replay of a vendor sample shares: the child process set-up (the torch test double on host memory or
on the ACL host runtime's device memory, the process group's barrier), the placement the sample's caches get
here, and byte patterns to check transfers with.

A sample's tensors hold ones and zeros; a transfer of ones into ones shows nothing, so each replay stamps the
tensors a transfer reads with a per-tensor byte pattern (through the test double, no call of the layer) and
checks every byte of the tensors it writes against what the sample's calls must leave there."""
import multiprocessing as mp
import queue
import traceback

import fake_torch as torch
from llm_datadist import Placement

# The samples' caches are Placement.DEVICE (torch_npu tensors); the host variant registers host tensors instead.
PLACEMENT = [Placement.HOST]
# The vendor registers a DEVICE cache remote-accessible by default, a HOST one not (CacheManager.
# _get_remote_accessible): the host variant asks for it, as a user of host caches must.
REMOTE = [True]


def pattern(nbytes, seed):
    """nbytes of a byte pattern that differs for each seed (and from the samples' ones and zeros)."""
    return bytes((seed * 37 + i * 7 + (i >> 8) + 1) & 0xFF for i in range(nbytes))


def stamp(tensor, seed):
    """Writes pattern(seed) into tensor; returns its bytes."""
    data = pattern(tensor.nbytes, seed)
    tensor._write(data)
    return data


def blocks(data, n):
    size = len(data) // n
    return [data[i * size:(i + 1) * size] for i in range(n)]


def expect_blocks(tensor, before, src, mapping, n):
    """tensor's n blocks: before, with dst block d replaced by src block s for each (s, d) of mapping."""
    want = blocks(before, n)
    for s, d in mapping:
        want[d] = blocks(src, n)[s]
    got = blocks(tensor.tobytes(), n)
    for i in range(n):
        assert got[i] == want[i], f"block {i} of {tensor}: {got[i][:8]!r}... want {want[i][:8]!r}..."


def _child(fn, device, barrier, kwargs, errors):
    try:
        acl = None
        if device:
            from test_serving_flows import acl_emulation
            acl = acl_emulation()
            assert acl is not None
        torch.use_device(acl)
        torch.distributed.set_barrier(barrier)
        PLACEMENT[0] = Placement.DEVICE if device else Placement.HOST
        REMOTE[0] = None if device else True
        fn(**kwargs)
    except BaseException:
        errors.put(f"{fn.__name__}: {traceback.format_exc()}")
        barrier.abort()  # the peers stop waiting for this one
        raise


def run_processes(device, roles, timeout=120):
    """roles: [(function, kwargs)], each run in its own process (spawn) with one barrier for all of them; fails
    with the first role's traceback when any role fails."""
    ctx = mp.get_context("spawn")
    barrier, errors = ctx.Barrier(len(roles)), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(fn, device, barrier, kw, errors)) for fn, kw in roles]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    for p in procs:
        if p.exitcode is None:
            p.kill()
            p.join()
    codes = [p.exitcode for p in procs]
    msgs = []
    try:  # a failed role put its traceback before it exited; the queue's feeder may still be delivering it
        while True:
            msgs.append(errors.get(timeout=0.1 if codes == [0] * len(procs) else 2))
    except queue.Empty:
        pass
    assert codes == [0] * len(procs) and not msgs, f"exit codes {codes}\n" + "\n".join(msgs)
