#!/usr/bin/env bash
# adxl-bench between two network namespaces joined by PATHS veth pairs (each
# its own /24, each rate-limited with tc tbf at RATE on both ends): what one
# link delivers over one path or several.  Needs root, iproute2 and tc.
#
#   scripts/netns_bench.sh [PATHS] [RATE] [-- adxl-bench initiator options]
#     PATHS  veth pairs (default 2)        RATE  tbf rate (default 2gbit; "none": no limit)
#   env: NET_DEVICES  UCX_NET_DEVICES for both sides: "all" (default: every
#        interface, what UCX does unset), "first" (the first pair's ends only),
#        "both" (every pair's ends, named), "paths" (UCX_NET_DEVICES unset;
#        instead ADXL_UCX_RDMA_PATHS on each side names that side's ends of
#        every pair: a multi-path link, one UCP connection per path), or a
#        list as UCX takes it; every mode but "paths" sets
#        ADXL_UCX_RDMA_PATHS=none (else the engine would make every veth end a
#        path by default); other UCX_* / ADXL_* variables pass through.
#
# Example: UCX_MAX_RNDV_RAILS=2 scripts/netns_bench.sh 2 2gbit -- --block-sizes 1M:1M
# One path against two, each run alone (same adxl-bench options):
#   NET_DEVICES=first scripts/netns_bench.sh 2 2gbit -- --block-sizes 1M:4M --transfer-size 64M
#   NET_DEVICES=paths scripts/netns_bench.sh 2 2gbit -- --block-sizes 1M:4M --transfer-size 64M
set -euo pipefail
ADXL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="${BUILD_DIR:-$ADXL_ROOT/build}/bin/adxl-bench"
PATHS="${1:-2}"
RATE="${2:-2gbit}"
shift $(($# >= 2 ? 2 : $#))
[[ "${1:-}" == "--" ]] && shift
[[ -x "$BENCH" ]] || { echo "netns_bench: $BENCH missing; build adxl-bench first" >&2; exit 2; }

id=$$
ns_a="adxl-bench-a-$id"
ns_b="adxl-bench-b-$id"
cleanup() { ip netns del "$ns_a" 2>/dev/null || true; ip netns del "$ns_b" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$ns_a"
ip netns add "$ns_b"
ip -n "$ns_a" link set lo up
ip -n "$ns_b" link set lo up
devs_a=() devs_b=()
for ((i = 0; i < PATHS; ++i)); do
  va="bna$i$((id % 10000))" vb="bnb$i$((id % 10000))"
  ip link add "$va" type veth peer name "$vb"
  ip link set "$va" netns "$ns_a"
  ip link set "$vb" netns "$ns_b"
  ip -n "$ns_a" addr add "10.$((223 + i)).$((id % 250 + 1)).1/24" dev "$va"
  ip -n "$ns_b" addr add "10.$((223 + i)).$((id % 250 + 1)).2/24" dev "$vb"
  ip -n "$ns_a" link set "$va" up
  ip -n "$ns_b" link set "$vb" up
  if [[ "$RATE" != none ]]; then
    ip netns exec "$ns_a" tc qdisc add dev "$va" root tbf rate "$RATE" burst 256kb latency 20ms
    ip netns exec "$ns_b" tc qdisc add dev "$vb" root tbf rate "$RATE" burst 256kb latency 20ms
  fi
  devs_a+=("$va") devs_b+=("$vb")
done
ip_a="10.223.$((id % 250 + 1)).1"
list() { local IFS=,; echo "$*"; }
# env_a / env_b: what each side's adxl-bench runs with (through env(1)).
env_a=() env_b=()
case "${NET_DEVICES:-all}" in
  all) env_a=(UCX_NET_DEVICES=all ADXL_UCX_RDMA_PATHS=none) env_b=(UCX_NET_DEVICES=all ADXL_UCX_RDMA_PATHS=none) ;;
  first) env_a=("UCX_NET_DEVICES=${devs_a[0]}" ADXL_UCX_RDMA_PATHS=none)
         env_b=("UCX_NET_DEVICES=${devs_b[0]}" ADXL_UCX_RDMA_PATHS=none) ;;
  both) env_a=("UCX_NET_DEVICES=$(list "${devs_a[@]}")" ADXL_UCX_RDMA_PATHS=none)
        env_b=("UCX_NET_DEVICES=$(list "${devs_b[@]}")" ADXL_UCX_RDMA_PATHS=none) ;;
  paths) env_a=("ADXL_UCX_RDMA_PATHS=$(list "${devs_a[@]}")") env_b=("ADXL_UCX_RDMA_PATHS=$(list "${devs_b[@]}")") ;;
  *) env_a=("UCX_NET_DEVICES=$NET_DEVICES" ADXL_UCX_RDMA_PATHS=none) env_b=("UCX_NET_DEVICES=$NET_DEVICES" ADXL_UCX_RDMA_PATHS=none) ;;
esac
echo "netns_bench: $PATHS path(s) at $RATE; A: ${env_a[*]}; B: ${env_b[*]}"
port=$((27000 + id % 1000))
clean=(env -u UCX_NET_DEVICES -u ADXL_UCX_RDMA_PATHS)  # the mode alone decides both
ip netns exec "$ns_a" "${clean[@]}" "${env_a[@]}" "$BENCH" --role target --side-channel "$ip_a:$port" \
  --local-engine "$ip_a:$((port + 1))" >"/tmp/netns_bench_target.$id.log" 2>&1 &
target=$!
sleep 1
ip netns exec "$ns_b" "${clean[@]}" "${env_b[@]}" "$BENCH" --role initiator --side-channel "$ip_a:$port" "$@"
rc=$?
wait "$target" || true
exit $rc
