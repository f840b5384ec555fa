#!/usr/bin/env bash
# Two builds of embedding-alltoall-bench on one machine, alternating (old, new, old, new),
# so the one-launch lookup (`embedding_bag fused_local`) and the fused call of a change can
# be set against the unchanged per-table lookup (`embedding_bag own`) of the same run:
#   OLD=carry-old/bin/embedding-alltoall-bench NEW=carry-new/bin/embedding-alltoall-bench \
#     bash benchmarks/gpu/run_embedding_alltoall_ab.sh
# WORLD (4), BATCHES (2112,8192,32768), SCALES (1,4), ROUNDS (2), LIBS (a folder of carried
# libraries). Writes $OUT/ab/{old,new}_r<round>.csv and prints per case the medians of both
# builds' fused_local / own and fused / sequential.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_device_libs ${LIBS:-}
ab="$OUT/ab"
mkdir -p "$ab"
world=${WORLD:-4}
gpus=$(seq -s, 0 $((world - 1)))
export CUDA_MODULE_LOADING=EAGER
for round in $(seq 1 "${ROUNDS:-2}"); do
  for build in old new; do
    bin=$([[ $build == old ]] && echo "$OLD" || echo "$NEW")
    CUDA_VISIBLE_DEVICES=$gpus timeout 120 "$bin" --world "$world" \
      --batches "${BATCHES:-2112,8192,32768}" --pooling-scales "${SCALES:-1,4}" --iterations 20 \
      --warmup 3 --b2b-calls 0 --timeout 30 --output "$ab/${build}_r$round.csv" \
      >/dev/null 2>>"$ab/stderr.txt"
    echo "$build round $round rc=$?"
  done
done
python3 - "$ab" <<'EOF'
import collections, csv, glob, os, statistics, sys
ab = sys.argv[1]
t = collections.defaultdict(list)
for path in glob.glob(os.path.join(ab, "*_r*.csv")):
    build = os.path.basename(path).split("_")[0]
    for r in csv.DictReader(open(path)):
        t[(build, int(r["world"]), int(r["m"]), int(r["k"]), r["op"] + "/" + r["design"])].append(
            float(r["time_us"]))
cases = sorted({k[1:4] for k in t})
m = lambda *k: statistics.median(t[k]) if t.get(k) else float("nan")
print("world batch k | old: fused_local own local/own fused seq seq/fused | new: same")
for w, b, k in cases:
    line = f"{w} {b:6} {k:4} |"
    for build in ("old", "new"):
        fl, own = m(build, w, b, k, "embedding_bag/fused_local"), m(build, w, b, k, "embedding_bag/own")
        f, s = m(build, w, b, k, "embedding+alltoall/fused"), m(build, w, b, k, "embedding+alltoall/sequential")
        line += f" {fl:8.1f} {own:8.1f} {fl / own:6.3f} {f:8.1f} {s:8.1f} {s / f:5.2f} |"
    print(line)
EOF
