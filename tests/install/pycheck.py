# The installed Python packages at work: imported from where they were
# installed (not the build tree), a two-process hixl READ checked byte by
# byte, an llm_datadist init / finalize.  Run by check_install.sh (packages
# from `cmake --install`) and check_pip.sh (packages from the pip wheel),
# from a directory outside the source tree.
import ctypes, multiprocessing as mp, os, socket, sys
import adxl, hixl, llm_datadist
for m in (adxl, hixl, llm_datadist):
    assert "/python/" not in m.__file__.replace(os.sep, "/") or "dist-packages" in m.__file__ \
        or "site-packages" in m.__file__, m.__file__
def serve(port, q, done):
    e = hixl.Hixl()
    assert e.initialize(f"127.0.0.1:{port}", {}) == hixl.SUCCESS
    buf = ctypes.create_string_buffer(bytes(range(256)) * 16)
    assert e.register_mem(hixl.MemDesc(ctypes.addressof(buf), 4096), hixl.MemType.MEM_HOST)[0] == hixl.SUCCESS
    q.put(ctypes.addressof(buf)); done.wait(30); e.finalize()
if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    ctx = mp.get_context("spawn"); q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=serve, args=(port, q, done)); p.start()
    addr = q.get(timeout=30)
    e = hixl.Hixl(); assert e.initialize("127.0.0.1") == hixl.SUCCESS
    dst = ctypes.create_string_buffer(4096)
    assert e.register_mem(hixl.MemDesc(ctypes.addressof(dst), 4096), hixl.MEM_HOST)[0] == hixl.SUCCESS
    assert e.connect(f"127.0.0.1:{port}", 5000) == hixl.SUCCESS
    assert e.transfer_sync(f"127.0.0.1:{port}", hixl.READ,
                           [hixl.TransferOpDesc(ctypes.addressof(dst), addr, 4096)], 5000) == hixl.SUCCESS
    assert dst.raw == bytes(range(256)) * 16
    e.finalize(); done.set(); p.join(30); assert p.exitcode == 0
    dd = llm_datadist.LLMDataDist(llm_datadist.LLMRole.PROMPT, 1)
    dd.init(llm_datadist.LLMConfig().generate_options()); dd.finalize()
    print("python packages:", ", ".join(m.__file__ for m in (adxl, hixl, llm_datadist)))
