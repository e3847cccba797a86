#!/bin/bash
# The next H100 visit for issue 4, in one call (run after `source .gpu/prelude.sh` with src/ on
# PYTHONPATH; everything goes to $OUT):
#   1. the subgroup family's device spellings: PTX shuffles on the GPU, Khronos/Intel shuffles on PoCL 5
#      on the machine's CPU (its tests run where a device offers a shuffle);
#   2. a default tune of all four dtypes (medium class, layouts, register caps, subgroup family);
#   3. the SGEMM and DGEMM suites beside cuBLAS, CLBlast and numpy, and the CPU through PoCL beside numpy.
set -u
export AUTOGEMM_CACHE_DIR=${AUTOGEMM_CACHE_DIR:-/tmp/agc} COLUMNS=200
for dev in gpu cpu; do
  AUTOGEMM_DEVICE=$dev timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_subgroup_family.py 2>&1 \
    | tail -5 | sed "s/^/[$dev] /"
done | tee "$OUT/subgroup-tests.log"
timeout 560 python3 -m autogemm.cli tune -d gpu > "$OUT/tune.log" 2>&1; tail -20 "$OUT/tune.log"
tar czf "$OUT/cache.tgz" -C "$AUTOGEMM_CACHE_DIR" profiles checkpoints 2>/dev/null
for letter in s d; do
  timeout -s INT 280 python3 -m autogemm.cli bench -d gpu --dtype $letter --suite \
    --json "$OUT/suite-$letter.json" --plot "$OUT/suite-$letter.png" > "$OUT/suite-$letter.log" 2>&1
  tail -4 "$OUT/suite-$letter.log"
done
timeout -s INT 200 python3 -m autogemm.cli bench -d cpu --dtype s,d --sizes 256:2048 --peers numpy \
  --json "$OUT/cpu.json" > "$OUT/cpu.log" 2>&1; tail -14 "$OUT/cpu.log"
