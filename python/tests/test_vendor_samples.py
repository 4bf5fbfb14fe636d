"""The vendor's Python samples (examples/python of its hixl repository: the llm_datadist samples and
hixl/hixl_d2rd_multiproc_sample.py), each replayed call for call as separate processes (vendor_samples_*.py),
every byte checked, on host memory ([host]) and on the ACL host runtime's device memory ([device], the samples'
torch_npu tensors; skipped in a build without emulation/acl).  See docs/cache_layer.md, "The vendor's Python
samples"."""
import pytest

from conftest import free_tcp_port
from test_serving_flows import acl_emulation
from vendor_replay import run_processes

import vendor_samples_hixl as hx
import vendor_samples_push as ps
import vendor_samples_rank_table as rt

BOTH = pytest.mark.parametrize("device", [False, True], ids=["host", "device"])


def need(device):
    if device and acl_emulation() is None:
        pytest.skip("no host ACL runtime (emulation/acl) in this build")


@BOTH
@pytest.mark.parametrize("backend", ["", "hixl"], ids=["default_backend", "hixl_backend"])
def test_push_blocks_sample(device, backend):
    need(device)
    kw = {"pport": free_tcp_port(), "dport": free_tcp_port(), "backend": backend}
    run_processes(device, [(ps.push_blocks_prompt, kw), (ps.push_blocks_decoder, kw)])


@BOTH
@pytest.mark.parametrize("local_comm_res", ["", ps.LOCAL_COMM_RES], ids=["default_backend", "hixl_backend"])
def test_push_cache_sample(device, local_comm_res):
    need(device)
    kw = {"pport": free_tcp_port(), "dport": free_tcp_port(), "local_comm_res": local_comm_res}
    run_processes(device, [(ps.push_cache_prompt, kw), (ps.push_cache_decoder, kw)])


@BOTH
def test_switch_role_sample(device):
    need(device)
    kw = {"port": free_tcp_port()}
    run_processes(device, [(ps.switch_role_prompt, kw), (ps.switch_role_decoder, kw)])


@BOTH
def test_transfer_cache_async_sample(device):
    need(device)
    kw = {"port": free_tcp_port()}
    run_processes(device, [(ps.transfer_async_prompt, kw), (ps.transfer_async_decoder, kw)])


@BOTH
def test_hixl_transfer_backend_sample(device):
    need(device)
    kw = {"pport": free_tcp_port(), "dport": free_tcp_port()}
    run_processes(device, [(ps.hixl_backend_prompt, kw), (ps.hixl_backend_decoder, kw)])


@BOTH
def test_pull_blocks_xpyd_sample(device):
    """2 prompts, 1 decoder."""
    need(device)
    prompts = [f"127.0.0.1:{free_tcp_port()}" for _ in range(2)]
    roles = [(ps.xpyd_prompt, {"local_ip_port": p}) for p in prompts]
    roles.append((ps.xpyd_decoder, {"local_ip_port": f"127.0.0.1:{free_tcp_port()}",
                                    "remote_ip_port": ";".join(prompts)}))
    run_processes(device, roles)


@BOTH
def test_pull_blocks_sample(device):
    need(device)
    run_processes(device, [(rt.pull_blocks_prompt, {}), (rt.pull_blocks_decoder, {})])


def test_pull_cache_sample():
    """allocate_cache: host placement from llm.HostMemPoolConfig (no device pool here, docs/cache_layer.md)."""
    run_processes(False, [(rt.pull_cache_prompt, {}), (rt.pull_cache_decoder, {})])


@BOTH
def test_pull_from_cache_to_blocks(device):
    """The prompt's allocate_cache is host memory in both variants (no device pool here); the decoder's blocks
    cache is on the device in [device]."""
    need(device)
    run_processes(device, [(rt.from_cache_to_blocks_prompt, {}), (rt.from_cache_to_blocks_decoder, {})])


@BOTH
def test_hixl_d2rd_multiproc_sample(device):
    need(device)
    server, client = hx.engine_pair()
    kw = {"local_engine": server, "remote_engine": client}
    run_processes(device, [(hx.run_server, kw),
                           (hx.run_client, {"local_engine": client, "remote_engine": server})])
