#!/usr/bin/env bash
# The connect storm (adxl-storm) on the network lane with multi-path links:
# the target engine in one fresh network namespace, the peer processes in
# another, joined by two veth pairs (two /24s, both ends addressed), so that
# every engine of the storm opens its two interfaces as network paths (the
# default where a host has two or more interfaces up with IPv4, as serving
# nodes with several NICs do) and every link connects once per path beside
# its main connection.  Fails when the storm fails, and when the links did
# not move their bytes over both paths: each veth pair's interface byte
# counters (the target's end: tx_bytes for what the peers READ, 1 MiB per
# peer, striped over the paths) must show at least a quarter of the storm's
# READ payload, so that a run that fell back to one path cannot pass.  The
# storm's file descriptors per link (2 without paths, 4 with two) are
# checked as well.
# Needs root and iproute2; without root it says so ("skipped") and exits 0,
# as the namespace tests of the suite skip (scripts/stress.sh counts that as
# a skip, and fails on it where root and ip netns are there).
#
#   scripts/netns_storm.sh [adxl-storm options]     (default: --peers 64 --idle-ms 500)
set -euo pipefail
ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STORM="${BUILD_DIR:-$ADXL_ROOT/build}/bin/adxl-storm"
[[ -x "$STORM" ]] || { echo "netns_storm: $STORM missing; build first" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then
  echo "netns_storm: skipped: needs root (network namespaces)"
  exit 0
fi
args=("$@")
((${#args[@]} > 0)) || args=(--peers 64 --idle-ms 500)
peers=64
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
  [[ "${args[i]}" == --peers ]] && peers="${args[i + 1]}"
done

tns="adxl-storm-t-$$" pns="adxl-storm-p-$$"
cleanup() {
  ip netns del "$tns" 2>/dev/null || true
  ip netns del "$pns" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$tns"
ip netns add "$pns"
ip -n "$tns" link set lo up
ip -n "$pns" link set lo up
subnet=$(($$ % 250 + 1))
tdev=() pdev=()
for i in 0 1; do
  # Names unique per run (the namespaces are too, but veth names are created
  # in the caller's namespace first).
  a="sta$i$(($$ % 100000))" b="stb$i$(($$ % 100000))"
  ip link add "$a" type veth peer name "$b"
  ip link set "$a" netns "$tns"
  ip link set "$b" netns "$pns"
  ip -n "$tns" addr add "10.$((231 + i)).$subnet.1/24" dev "$a"
  ip -n "$pns" addr add "10.$((231 + i)).$subnet.2/24" dev "$b"
  ip -n "$tns" link set "$a" up
  ip -n "$pns" link set "$b" up
  tdev+=("$a") pdev+=("$b")
done
counter() {  # device statistic: the target's end
  ip netns exec "$tns" cat "/sys/class/net/$1/statistics/$2"
}
tx0=() rx0=()
for i in 0 1; do
  tx0+=("$(counter "${tdev[i]}" tx_bytes)") rx0+=("$(counter "${tdev[i]}" rx_bytes)")
done

out="$(ip netns exec "$tns" env -u ADXL_UCX_RDMA_PATHS "$STORM" --lane rdma --peer-netns "$pns" \
  --target-host "10.231.$subnet.1" --peer-host "10.231.$subnet.2" "${args[@]}" 2>&1)" && rc=0 || rc=$?
echo "$out" | grep '^storm:' || true
if ((rc != 0)); then
  echo "$out" | tail -n 40 >&2
  echo "netns_storm: the storm failed (exit $rc)" >&2
  exit 1
fi
fds="$(sed -n 's/.*RESULT .* fds_per_link=\([0-9.]*\).*/\1/p' <<<"$out")"
[[ -n "$fds" ]] || { echo "netns_storm: no RESULT line with fds_per_link" >&2; exit 1; }
# Each peer READs 1 MiB (storm::kReadBytes) once, striped over the paths.
want=$((peers * 1048576 / 4))
bad=0
for i in 0 1; do
  tx=$(($(counter "${tdev[i]}" tx_bytes) - tx0[i])) rx=$(($(counter "${tdev[i]}" rx_bytes) - rx0[i]))
  printf 'netns_storm: path %d (%s/%s): the target sent %.1f MiB, received %.1f MiB\n' $((i + 1)) "${tdev[i]}" \
    "${pdev[i]}" "$(awk -v b="$tx" 'BEGIN { print b / 1048576 }')" "$(awk -v b="$rx" 'BEGIN { print b / 1048576 }')"
  if ((tx < want)); then
    echo "netns_storm: path $((i + 1)) carried $tx bytes to the peers, under a quarter of the $peers MiB they READ:" \
      "the links did not use both paths" >&2
    bad=1
  fi
done
((bad == 0)) || exit 1
if ! awk -v f="$fds" 'BEGIN { exit !(f >= 3.5) }'; then
  echo "netns_storm: $fds file descriptors per link: the links did not use the two paths" >&2
  exit 1
fi
echo "netns_storm: PASS with two network paths per link, bytes on both ($fds fds per link)"
