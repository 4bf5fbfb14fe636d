"""LLMDataDist: one cluster (the C++ LlmDataDist, with our extension's calls), its links, and
the reference's rank-table link / unlink, check_link_status and switch_role."""
import json
import socket
import time
import zlib

from . import _native
from .cache_manager import CacheManager
from .config import LLMClusterInfo, LLMRole, RegisterMemStatus, _init_options
from .errors import LLMException, LLMStatusCode, _ParamInvalid, _check, _code
from .host_pool import _HostPool
from .layerwise import _finalize_at_exit
from .validation import _int, _need, _str, _type


# Rank-table link() without ports: each participant listens on _RANK_PORT_BASE + 4 * (crc32(comm_name) %
# _RANK_PORT_SLOTS) + its place among the ranks, and links to the others within _RANK_LINK_TIMEOUT_S.
_RANK_PORT_BASE, _RANK_PORT_SLOTS, _RANK_LINK_TIMEOUT_S = 12000, 2000, 10.0  # 12000-19999: below the ephemeral ports


class LLMDataDist:
    """One cluster: an engine plus its CacheManager.

    init(options) takes every key LLMConfig.generate_options() emits (see
    _init_options): "llm.listenIpInfo" ("ip:port" to be linkable, default
    "127.0.0.1" = client only), "llm.SyncKvCacheWaitTime" (ms, default 1000),
    "llm.HostMemPoolConfig" (the host pool of allocate_cache), the RDMA and
    LocalCommRes keys (to the engine) are applied; the other "llm." and "ge."
    keys are accepted and logged once at INFO; "adxl." keys and the engine's
    own option names go to AdxlEngine::Initialize; any other key is refused.
    """

    def __init__(self, role, cluster_id):
        self.role = _type(role, LLMRole, "role")
        self.cluster_id = _int(cluster_id, "cluster_id")
        self._native = None
        self._cache_manager = None
        self._surface_init()

    def init(self, options):
        _need(options, "options")
        if not isinstance(options, dict):
            raise TypeError("options must be a dict")
        if self._native is not None:
            return
        listen, timeout, engine_opts, pool_cfg = _init_options(options)
        # The public C++ LlmDataDist; the options are already in the engine's terms (ext::InitializeEngine).
        m = _native.LlmDataDist(self.cluster_id, _native.LlmRole(self.role.value))
        _check(m.initialize(listen, engine_opts), "init")
        try:
            _check(m.set_sync_timeout(timeout), "init")
            pool = _HostPool(pool_cfg) if pool_cfg else None
        except BaseException:
            m.finalize()
            raise
        self._native = m
        self._cache_manager = CacheManager(m, pool, options)
        self._options = dict(options)
        self._listen = listen
        _finalize_at_exit(self)

    @property
    def cache_manager(self):
        if self._cache_manager is None:
            raise LLMException("LLMDataDist is not initialized", LLMStatusCode.LLM_FAILED)
        return self._cache_manager

    def _clusters(self, clusters):
        _need(clusters, "clusters")
        if not isinstance(clusters, (list, tuple)):
            raise TypeError("clusters must be a list or tuple of LLMClusterInfo")
        return [(_int(_type(c, LLMClusterInfo, "clusters[]").remote_cluster_id, "remote_cluster_id"), c._engine())
                for c in clusters]

    def link_clusters(self, clusters, timeout=3000):
        cl = self._clusters(clusters)
        s, rets = self.cache_manager._m.link_clusters(cl, _int(timeout, "timeout", 1, 2 ** 31 - 1))
        return _code(s), [_code(r) for r in rets]

    def unlink_clusters(self, clusters, timeout=3000, force=False):
        """By remote_cluster_id; per-cluster statuses.  force: the link is dropped here whatever the peer answers,
        and a cluster with no link either way is LLM_SUCCESS; without force, on the default backend, a cluster
        without exactly one remote ip info is LLM_PARAM_INVALID, as the vendor's (the C++ cache layer's
        UnlinkClusters)."""
        _need(clusters, "clusters")
        if not isinstance(clusters, (list, tuple)):
            raise TypeError("clusters must be a list or tuple of LLMClusterInfo")
        _type(force, bool, "force")
        # The peer's address when the cluster carries exactly one remote ip info: without force the C++ layer
        # wants it on the default backend (the vendor asks the peer), else LLM_PARAM_INVALID for that cluster.
        cl = [(_int(_type(c, LLMClusterInfo, "clusters[]").remote_cluster_id, "remote_cluster_id"),
               c._engine() if len(c._remote_ip_info_list) == 1 else "") for c in clusters]
        s, rets = self.cache_manager._m.unlink_clusters(cl, _int(timeout, "timeout", 1, 2 ** 31 - 1), force)
        return _code(s), [_code(r) for r in rets]

    def finalize(self):
        if self._native is not None:
            self._native.finalize()
            if self._cache_manager is not None and self._cache_manager._pool is not None:
                self._cache_manager._pool.close()  # after finalize: nothing registered uses it any more
        self._native = None
        self._cache_manager = None
        self._surface_init()

    def _surface_init(self):
        self._comms = {}  # comm_id -> [(cluster id, engine name)] linked by link()
        self._next_comm = 1
        self._options = {}
        self._listen = None

    def _manager(self):
        return self.cache_manager._m

    def check_link_status(self, remote_cluster_id):
        """Returns when the link to remote_cluster_id exists and is healthy; LLMException otherwise
        (LLM_NOT_YET_LINK: no link; LLM_FAILED: the link failed, unlink and link again)."""
        _int(remote_cluster_id, "remote_cluster_id")
        _check(self._manager().check_link_status(remote_cluster_id), "check_link_status")

    def switch_role(self, role, switch_options=None):
        """Changes the role.  As the reference: no link may exist either way (LLM_EXIST_LINK); registered caches
        stay registered; "llm.listenIpInfo" in switch_options starts or moves the listener, a switch without it
        stops listening (the C++ cache layer's Rebind: a new engine, every cache re-registered under its id)."""
        _type(role, LLMRole, "role")
        if switch_options is not None and not isinstance(switch_options, dict):
            raise TypeError(f"switch_options must be a dict, not {type(switch_options).__name__}")
        m = self._manager()
        opts = dict(switch_options or {})
        listen = opts.get("llm.listenIpInfo", opts.get("llm.ListenIpInfo"))
        if listen is not None:
            _check_listen(_str(listen, "llm.listenIpInfo"))
        options = {k: v for k, v in self._options.items()
                   if k not in ("llm.listenIpInfo", "llm.ListenIpInfo", "llm.ListenIp", "llm.ListenPort")}
        options.update(opts)
        new_listen, _, engine_opts, _ = _init_options(options)
        _check(m.rebind(new_listen, engine_opts), "switch_role")
        self._options = options
        self._listen = new_listen
        self.role = role

    def link(self, comm_name, cluster_rank_info, rank_table):
        """Links this cluster to every other cluster of cluster_rank_info ({cluster id: rank id}), each found in
        rank_table (the reference's JSON: server_list[].device[] with rank_id and device_ip; the engine of a
        rank is device_ip:device_port, device_ip written "ip:port", or, as in the vendor's rank tables, device_ip
        alone: then a cluster that does not listen there yet starts listening at device_ip on a port derived from
        comm_name and its place among the ranks, as every participant derives it).  Every participant calls link()
        with the same arguments and links to every other one.  Returns a comm id for unlink."""
        _str(comm_name, "comm_name")
        if not 0 < len(comm_name) < 128:
            raise _ParamInvalid("comm_name must be 1 to 127 characters")
        if not isinstance(cluster_rank_info, dict):
            raise TypeError(f"cluster_rank_info must be a dict, not {type(cluster_rank_info).__name__}")
        for k, v in cluster_rank_info.items():
            _int(k, "cluster_rank_info key")
            _int(v, "cluster_rank_info value", 0, 2 ** 32 - 1)
        _str(rank_table, "rank_table")
        ranks = list(cluster_rank_info.values())
        if not 1 < len(ranks) <= 4:
            raise _ParamInvalid("cluster_rank_info must hold 2 to 4 clusters")
        if ranks != sorted(ranks) or len(set(ranks)) != len(ranks):
            raise _ParamInvalid("ranks in cluster_rank_info must be ordered and distinct")
        if self.cluster_id not in cluster_rank_info:
            raise _ParamInvalid(f"cluster_rank_info does not name this cluster ({self.cluster_id})")
        engines = _rank_engines(rank_table, comm_name, sorted(ranks))
        mine, explicit = engines.get(cluster_rank_info[self.cluster_id], (None, True))
        if mine is None:
            raise _ParamInvalid(f"rank_table has no device with rank_id {cluster_rank_info[self.cluster_id]} "
                                f"(this cluster, {self.cluster_id})")
        peers = []
        for cid, rank in cluster_rank_info.items():
            if cid == self.cluster_id:
                continue
            if rank not in engines:
                raise _ParamInvalid(f"rank_table has no device with rank_id {rank} (cluster {cid})")
            peers.append((cid, engines[rank][0]))
        if not explicit and self._listen != mine:
            # vLLM-Ascend's flow: neither side set llm.listenIpInfo and the rank table's device_ip has no port.
            # This cluster listens at its rank's device_ip on a port both sides derive from comm_name and the
            # rank's place in cluster_rank_info, so that the others can link to it (the C++ Rebind; no link
            # may exist yet).
            self._rebind(mine, f"link({comm_name!r}): listening at {mine} (the port derived for this rank; a "
                               f"device_port in the rank table chooses another)")
        # Every participant links to every other one; a peer that does not listen yet (it has not reached its
        # own link() call) is tried again until the deadline.
        deadline = time.monotonic() + _RANK_LINK_TIMEOUT_S
        todo, done = list(peers), []
        for _, name in todo:  # wait quietly (no refused-connect log lines) until each peer listens
            _wait_listening(name, deadline)
        while True:
            s, rets = self._manager().link_clusters(todo, 3000)
            done += [p for p, r in zip(todo, rets) if r == 0]
            retry = (LLMStatusCode.LLM_LINK_FAILED, LLMStatusCode.LLM_TIMEOUT)
            todo = [p for p, r in zip(todo, rets) if r in retry]
            failed = [r for r in rets if r != 0 and r not in retry]
            if not todo or failed or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if todo or failed:
            if done:
                self._manager().unlink_clusters(done, 3000, True)
            _check(failed[0] if failed else LLMStatusCode.LLM_LINK_FAILED, f"link({comm_name!r})")
        comm_id = self._next_comm
        self._next_comm += 1
        self._comms[comm_id] = peers
        return comm_id

    def unlink(self, comm_id):
        _int(comm_id, "comm_id")
        peers = self._comms.pop(comm_id, None)
        if peers is None:
            raise _ParamInvalid(f"unlink: comm_id {comm_id} is not linked")
        # The comm goes as a whole, as the vendor's unlink(comm_id): forced (a peer that went first is no failure).
        s, _ = self._manager().unlink_clusters(peers, 3000, True)
        _check(s, "unlink")

    def query_register_mem_status(self, comm_id):
        """Registrations are complete when register_* returns: OK for a linked comm_id."""
        _int(comm_id, "comm_id")
        if comm_id not in self._comms:
            raise _ParamInvalid(f"query_register_mem_status: comm_id {comm_id} is not linked")
        self._manager()
        return RegisterMemStatus.OK

    def _rebind(self, listen, what):
        """Moves this cluster's engine to `listen` (C++ CacheManager::Rebind: caches stay registered)."""
        options = {k: v for k, v in self._options.items()
                   if k not in ("llm.listenIpInfo", "llm.ListenIpInfo", "llm.ListenIp", "llm.ListenPort")}
        options["llm.listenIpInfo"] = listen
        new_listen, _, engine_opts, _ = _init_options(options)
        _check(self._manager().rebind(new_listen, engine_opts, what), what)
        self._options = options
        self._listen = new_listen

    def __del__(self):
        if getattr(self, "_native", None) is not None:
            self.finalize()


def _check_listen(listen):
    """As the vendor's parse_listen_ip_info, before anything else of switch_role is checked (an existing link
    included): "ip:port" ("[ipv6]:port" here too) with a port number, else LLM_PARAM_INVALID."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or (":" in host and not (host.startswith("[") and host.endswith("]"))) \
            or not port.isdigit() or int(port) > 65535:
        raise _ParamInvalid(f'llm.listenIpInfo "{listen}" is invalid, format should be "ip:port"')


def _wait_listening(name, deadline):
    """Returns once something accepts TCP connections at engine name "ip:port" / "[ipv6]:port", or at deadline."""
    host, _, port = name.rpartition(":")
    host = host.strip("[]")
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
            return
        except (OSError, ValueError):
            time.sleep(0.02)


def _rank_engines(rank_table, comm_name, ranks):
    """{rank id: (engine name, port given)} from a rank table (JSON text).  A device's engine is
    device_ip:device_port, or device_ip written "ip:port"; without a port (the vendor's rank tables, as vLLM-Ascend
    passes them), device_ip and a port derived from comm_name and the rank's place in `ranks`, the same on every
    participant."""
    try:
        table = json.loads(rank_table)
        devices = [d for server in table["server_list"] for d in server["device"]]
    except (ValueError, KeyError, TypeError):
        raise _ParamInvalid("rank_table must be JSON with server_list[].device[]") from None
    base = _RANK_PORT_BASE + (zlib.crc32(comm_name.encode()) % _RANK_PORT_SLOTS) * 4
    out = {}
    for d in devices:
        try:
            rank = int(d["rank_id"])
            ip = str(d["device_ip"])
        except (KeyError, TypeError, ValueError):
            missing = [k for k in ("rank_id", "device_ip") if not isinstance(d, dict) or k not in d]
            raise _ParamInvalid(f"rank_table device {d!r}: " + (f"no {' and no '.join(missing)}" if missing
                                                                 else "rank_id is not a number")) from None
        port = d.get("device_port", d.get("port"))
        if port is not None:
            out[rank] = (f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}", True)
        elif ip.count(":") == 1 or ip.startswith("["):
            out[rank] = (ip, True)
        else:
            port = base + (ranks.index(rank) if rank in ranks else 0)
            out[rank] = (f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}", False)
    return out
