#!/usr/bin/env bash
# Regenerates every projection and validation report in benchmarks/projections/ with the
# command that made it, and checks that each comes out byte for byte as committed.
#   benchmarks/projections/regenerate.sh [--cheap] [--write] [--build DIR] [--only FILE]
#     --cheap  skip the run that takes minutes (DeepSeek-V3); CI runs this
#     --only   make and compare that one run (its first output file's name in runs.txt)
#     --write  overwrite the committed files instead of comparing (a deliberate change)
# Exit 0: all identical (or written); 1: some differ (each difference is listed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
cheap=0 write=0 only='' build="${OVERLAPSIM_BUILD_DIR:-$root/build}"
while (($#)); do
  case "$1" in
    --cheap) cheap=1 ;;
    --write) write=1 ;;
    --build) build="${2:?regenerate.sh: --build needs a directory}"; shift ;;
    --only) only="${2:?regenerate.sh: --only needs a file name from runs.txt}"; shift ;;
    *) echo "regenerate.sh: unknown argument '$1' (expected --cheap, --write, --build DIR or --only FILE)" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/app/overlapsim"
[[ -x "$bin" ]] || { echo "regenerate.sh: $bin: not built (run scripts/setup)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

P=benchmarks/projections
cluster=workloads/clusters/h200-128node-ndr.yaml
# names | slow (1) or cheap (0) | arguments after `overlapsim`, from runs.txt
runs=()
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  line="${line//\$P/$P}"
  line="${line//\$out/$out}"
  runs+=("${line//\$cluster/$cluster}")
done <"$P/runs.txt"

differ=0 ran=0
for run in "${runs[@]}"; do
  IFS='|' read -r names slow args <<<"$run"
  read -r -a files <<<"$names"
  name="${files[0]}"
  ((cheap && slow)) && continue
  [[ -n "$only" && "$name" != "$only" ]] && continue
  # shellcheck disable=SC2086 # the arguments are words by design
  if ! "$bin" $args --output "$out/$name" >"$out/$name.log" 2>&1; then
    echo "FAIL  $name: overlapsim $args"; sed 's/^/      /' "$out/$name.log"; differ=1; continue
  fi
  ran=$((ran + 1))
  for file in "${files[@]}"; do
    if ((write)); then
      cp "$out/$file" "$P/$file"; echo "wrote $P/$file"
    elif cmp -s "$out/$file" "$P/$file"; then
      echo "same  $file"
    else
      echo "DIFF  $file: overlapsim $args"
      diff "$P/$file" "$out/$file" | head -20 | sed "s/^/      /" || true
      differ=1
    fi
  done
done
if [[ -n "$only" ]] && ((ran == 0 && !differ)); then
  echo "regenerate.sh: --only $only: not a run in $P/runs.txt (or skipped by --cheap)" >&2; exit 2
fi
echo "regenerate.sh: $ran run(s), $( ((differ)) && echo 'some differ' || echo 'all identical')"
exit "$differ"
