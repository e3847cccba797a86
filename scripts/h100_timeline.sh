#!/bin/bash
# Where the time of a GEMM goes on the GPU: each launch of one iteration (autogemm run --timeline) for the
# shapes that the first bench found slow, then the end-to-end (numpy in, numpy out) bench beside cuBLAS.
# Run on the GPU machine after `source .gpu/prelude.sh` with src/ on PYTHONPATH; output to $OUT.
set -u
for shape in "1000 1000 1000 N N" "1024 1024 1024 N N" "1024 1024 1024 N T" "1024 1024 1024 T N" \
             "4097 4097 4097 N N" "8192 64 8192 N N" "128 128 65536 N N" "256 256 256 N T"; do
  read -r m n k ta tb <<< "$shape"
  python3 -m autogemm.cli run -d gpu -M "$m" -N "$n" -K "$k" --trans-a "$ta" --trans-b "$tb" -i 5 --timeline -v
done 2>&1 | tee "$OUT/timeline.log"
python3 -m autogemm.cli bench -d gpu --dtype s,d --sizes 1024,4096,8192 --end-to-end --peers cublas --runs 5 \
  --json "$OUT/e2e.json" 2>&1 | tee "$OUT/e2e.log"
