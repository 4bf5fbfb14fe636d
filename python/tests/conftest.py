"""Shared by the Python tests: a free port, the two-process harness, the wait
for an asynchronous transfer, and the block pattern of the layer-wise tests
(layerwise_peer.py imports it too)."""
import contextlib
import multiprocessing as mp
import socket

import pytest


def free_tcp_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def free_port():
    return free_tcp_port()


@contextlib.contextmanager
def spawned(target, *args, channels, release=None):
    """Runs target(*args, *chans) in a spawned process (a second engine), chans = channels(context) (queues,
    events), and yields chans; leaving the block calls release(chans) if given, joins the peer and (when the
    block raised nothing) checks that it exited cleanly."""
    ctx = mp.get_context("spawn")
    chans = channels(ctx)
    p = ctx.Process(target=target, args=(*args, *chans))
    p.start()
    try:
        yield chans
    finally:
        if release is not None:
            release(chans)
        p.join(30)
    assert p.exitcode == 0


def peer_process(target, *args):
    """target(*args, queue, event) in a spawned process; yields (queue, event): the peer reports on the
    queue and waits on the event, which leaving the block sets."""
    return spawned(target, *args, channels=lambda ctx: (ctx.Queue(), ctx.Event()),
                   release=lambda chans: chans[1].set())


def wait_transfer(engine, req, success, waiting):
    """Polls engine.get_transfer_status(req) (adxl and hixl alike), each poll returning `success`, until
    the transfer is no longer `waiting`; returns the state it ended in."""
    while True:
        s, st = engine.get_transfer_status(req)
        assert s == success
        if st != waiting:
            return st


# The layer-wise tests' geometry (test_layerwise.py and its peer, layerwise_peer.py): a paged cache of
# LAYERS x (K, V) tensors of BLOCKS blocks; SRC_BLOCKS of prefill go to DST_BLOCKS of decode.
LAYERS, BLOCKS, BLOCK_BYTES = 3, 8, 256
SRC_BLOCKS, DST_BLOCKS = [1, 3, 6], [0, 5, 2]


def layerwise_pattern(tensor, block):
    """A block's contents: they differ per tensor, block and byte."""
    return bytes((tensor * 37 + block * 11 + i * 3 + 1) & 0xFF for i in range(BLOCK_BYTES))
