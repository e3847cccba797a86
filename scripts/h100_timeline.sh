#!/bin/bash
# Where the time of a GEMM goes on the GPU: launch gaps (scripts/launch_gaps.py), then each launch of one
# iteration (autogemm run --timeline) for the shapes that the first bench found slow, then the SGEMM suite.
# Run on the GPU machine after `source .gpu/prelude.sh` with src/ on PYTHONPATH; output to $OUT.
set -u
timeout 60 python3 scripts/launch_gaps.py gpu 2>&1 | tee "$OUT/gaps.log"
for shape in "1000 1000 1000 N N" "1024 1024 1024 N T" "4097 4097 4097 N N" "8192 64 8192 N N" \
             "128 128 65536 N N" "256 256 256 N T"; do
  read -r m n k ta tb <<< "$shape"
  python3 -m autogemm.cli run -d gpu -M "$m" -N "$n" -K "$k" --trans-a "$ta" --trans-b "$tb" -i 5 --timeline -v
done 2>&1 | grep -v iteration | tee "$OUT/timeline.log"
timeout -s INT "${SUITE_SECONDS:-270}" python3 -m autogemm.cli bench -d gpu --dtype s --suite \
  --json "$OUT/suite-s.json" --plot "$OUT/suite-s.png" > "$OUT/suite-s.log" 2>&1
tail -52 "$OUT/suite-s.log"
