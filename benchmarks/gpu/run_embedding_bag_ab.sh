#!/usr/bin/env bash
# One device call on ONE GPU comparing two builds of our embedding-bag lookup
# (kernels/ops/embedding_bag.hpp) with embedding-bag-bench at the DLRM-DCNv2 shapes of
# run_embedding_bag.sh: the build before a kernel change ($CARRY_DIR/bin/embedding-bag-bench-old,
# the same bench source over the earlier kernel) and after it (embedding-bag-bench), run
# old, new, old, new so drift between runs shows. Each CSV has the copy bandwidth and the
# floor rows (empty launch, one bag) of its own run; out_hash compares the outputs bit for
# bit. Before them embedding_bag_test on the new kernel; after them, if time is left,
# compute-sanitizer memcheck over the test. Everything ends up in $OUT/embedding_bag_ab.tar.gz.
#   CARRY_DIR=.emb-carry bash benchmarks/gpu/run_embedding_bag_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT/embedding_bag_ab"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
log_machine
carry="$root/${CARRY_DIR:-.emb-carry}"
use_device_libs "$carry/lib"
step "embedding_bag_test"
timeout "${TEST_TIMEOUT:-90}" "$carry/bin/embedding_bag_test" >"$run_dir/test.txt" 2>&1
echo "embedding_bag_test rc=$?" >>"$log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure" "$run_dir/test.txt" >>"$log" 2>&1
for pass in old1 new1 old2 new2; do
  bin="$carry/bin/embedding-bag-bench"
  [[ $pass == old* ]] && bin="$carry/bin/embedding-bag-bench-old"
  step "bench $pass"
  timeout "${BENCH_TIMEOUT:-150}" "$bin" --output "$run_dir/$pass.csv" >"$run_dir/${pass}_stdout.txt" 2>&1
  echo "bench $pass rc=$?" >>"$log"
  [[ -s $run_dir/$pass.csv ]] || cp "$run_dir/$pass.csv.tmp" "$run_dir/$pass.csv" 2>/dev/null
done
if [[ ${MEMCHECK:-1} == 1 ]]; then
  step "memcheck"
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
  timeout "${MEMCHECK_TIMEOUT:-90}" "$sanitizer" --tool memcheck "$carry/bin/embedding_bag_test" \
    >"$run_dir/memcheck.txt" 2>&1
  echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$run_dir/memcheck.txt" | tail -1)" >>"$log"
fi
step "done"
cat "$log"
tar -czf "$OUT/embedding_bag_ab.tar.gz" -C "$OUT" embedding_bag_ab
