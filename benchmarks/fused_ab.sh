#!/usr/bin/env bash
# A/B timing of the fused probability update (runtime/fused.hpp) across versions of the runtime
# headers, in one command: this host's speed drifts by 5-10% within an hour, more than most kernel
# changes are worth, so the versions are built side by side and their runs alternated.
#
#   benchmarks/fused_ab.sh [INCLUDE_DIR ...]
#
# Each INCLUDE_DIR is a copy of cpp_core/include with a changed header; cpp_core/include itself is
# the reference and always runs first. For each version and N in $NODES (default 16 32 64) it prints
# the best ns per call over $ROUNDS alternated rounds (default 5) and the ratio to the reference.
# Built as the extension is built (-O3). Needs g++ and a CPU with AVX-512.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nodes="${NODES:-16 32 64}"
rounds="${ROUNDS:-5}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

dirs=("$root/cpp_core/include" "$@")
for i in "${!dirs[@]}"; do
  if [[ ! -f "${dirs[$i]}/dcgym/runtime/fused.hpp" ]]; then
    echo "fused_ab.sh: ${dirs[$i]} has no dcgym/runtime/fused.hpp" >&2
    exit 2
  fi
  g++ -std=c++17 -O3 -Wall -Wextra -I"${dirs[$i]}" "$root/benchmarks/fused_ab.cpp" -o "$work/v$i"
done

"$work/v0" 1 > /dev/null || exit 2  # the kernel runs here (it says why not)

for _ in $(seq "$rounds"); do
  for i in "${!dirs[@]}"; do
    for n in $nodes; do
      echo "$i $n $("$work/v$i" "$n")"
    done
  done
done > "$work/runs"

printf '%-50s %6s %10s %8s\n' "headers" "nodes" "ns/call" "ratio"
awk -v names="${dirs[*]}" -v nodes="$nodes" -v count="${#dirs[@]}" '
  { key = $1 " " $2; if (!(key in best) || $3 < best[key]) best[key] = $3 }
  END {
    split(names, dir, " ");
    k = split(nodes, ns, " ");
    for (i = 0; i < count; ++i)
      for (j = 1; j <= k; ++j)
        printf "%-50s %6d %10.1f %8.3f\n", dir[i + 1], ns[j], best[i " " ns[j]], best[i " " ns[j]] / best["0 " ns[j]];
  }' "$work/runs"
