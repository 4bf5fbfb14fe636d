"""LLMDataDist: one cluster (the C++ LlmDataDist, with our extension's calls), its links, and
the reference's rank-table link / unlink, check_link_status and switch_role."""
from . import _native
from .cache_manager import CacheManager
from .config import LLMClusterInfo, LLMRole, RegisterMemStatus, _init_options
from .errors import LLMException, LLMStatusCode, _ParamInvalid, _check, _code
from .host_pool import _HostPool
from .layerwise import _finalize_at_exit
from .validation import _int, _need, _str, _type


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
        self._options = {}

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
        self.role = role

    def link(self, comm_name, cluster_rank_info, rank_table):
        """Links this cluster to every other cluster of cluster_rank_info ({cluster id: rank id}), each found in
        rank_table (the reference's JSON: server_list[].device[] with rank_id and device_ip).  Every participant
        calls link() with the same arguments and links to every other one.  Returns a comm id for unlink.  The
        C++ ext::LinkRankTable (include/llm_datadist/llm_datadist_ext.h) does it all: the engine names and the
        ports derived from comm_name for a device_ip without one, the listener's move, the waits and retries."""
        _str(comm_name, "comm_name")
        if not isinstance(cluster_rank_info, dict):
            raise TypeError(f"cluster_rank_info must be a dict, not {type(cluster_rank_info).__name__}")
        for k, v in cluster_rank_info.items():
            _int(k, "cluster_rank_info key")
            _int(v, "cluster_rank_info value", 0, 2 ** 32 - 1)
        _str(rank_table, "rank_table")
        s, comm_id = self._manager().link_rank_table(comm_name, list(cluster_rank_info.items()), rank_table)
        _check(s, f"link({comm_name!r})")
        return comm_id

    def unlink(self, comm_id):
        """Unlinks (forced) every cluster link(comm_id) linked (C++ ext::UnlinkComm)."""
        _int(comm_id, "comm_id")
        _check(self._manager().unlink_comm(comm_id), "unlink")

    def query_register_mem_status(self, comm_id):
        """Registrations are complete when register_* returns: OK for a linked comm_id (C++
        ext::QueryRegisterMemStatus)."""
        _int(comm_id, "comm_id")
        _check(self._manager().query_register_mem_status(comm_id), "query_register_mem_status")
        return RegisterMemStatus.OK

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
