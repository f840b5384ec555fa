#!/usr/bin/env bash
# Memory guard benchmark: the runs that used to exhaust the machine, each under
# /usr/bin/time -v, with their maximum resident set size and wall time. Writes CSV
#   case,command,exit_code,max_rss_bytes,wall_s
# to benchmarks/results/cpu/memory_guard/memory_guard.csv (atomically: temp file + rename)
# and prints it.
#   benchmarks/memory_guard.sh [--build DIR] [--out FILE]
# Cases:
#   alltoall_16384      1 GiB all-to-all over the 16,384 GPUs of h200-2048node-ndr
#                       (aggregated per class of host pairs; must stay under 4 GB, 60 s)
#   dlrm_16384          the shipped DLRM (dlrm-dcnv2) on the same cluster, every design
#                       (must stay under 4 GB)
#   refused_64MiB       the same all-to-all with --max-memory 64MiB: refused up front (exit 2)
#   nodes_overflow      --nodes 2^28 on the same cluster: refused, no int overflow (exit 2)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${OVERLAPSIM_BUILD_DIR:-$root/build}"
out="$root/benchmarks/results/cpu/memory_guard/memory_guard.csv"
while (($#)); do
  case "$1" in
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    *) echo "memory_guard.sh: unknown argument '$1' (expected --build DIR or --out FILE)" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/app/overlapsim"
[[ -x "$bin" ]] || { echo "memory_guard.sh: $bin: not built (run scripts/setup)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "memory_guard.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
cd "$root"

cluster=workloads/clusters/h200-2048node-ndr.yaml
cases=(
  "alltoall_16384|collective --op alltoall --bytes 1GiB --cluster $cluster --no-timing"
  "dlrm_16384|simulate -w workloads/models/dlrm-dcnv2.yaml -c $cluster --design all --no-timing"
  "refused_64MiB|collective --op alltoall --bytes 1GiB --cluster $cluster --max-memory 64MiB"
  "nodes_overflow|collective --op alltoall --bytes 1GiB --cluster $cluster --nodes 268435456"
)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "case,command,exit_code,max_rss_bytes,wall_s" >"$tmp/csv"
for c in "${cases[@]}"; do
  IFS='|' read -r name args <<<"$c"
  rc=0
  # shellcheck disable=SC2086 # the arguments are words by design
  /usr/bin/time -v -o "$tmp/$name.time" "$bin" $args >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  rss_kib=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$tmp/$name.time")
  wall=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/$name.time")
  # h:mm:ss or m:ss(.ss) -> seconds
  wall_s=$(awk -F: '{ s = 0; for (i = 1; i <= NF; ++i) s = s * 60 + $i; printf "%.2f", s }' <<<"$wall")
  echo "$name,overlapsim $args,$rc,$((rss_kib * 1024)),$wall_s" >>"$tmp/csv"
  if ((rc != 0)); then sed "s/^/  $name: /" "$tmp/$name.err" >&2; fi
done
mkdir -p "$(dirname "$out")"
cp "$tmp/csv" "$out.tmp.$$"
mv "$out.tmp.$$" "$out"
cat "$out"
