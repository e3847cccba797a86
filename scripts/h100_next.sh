#!/bin/bash
# The H100 visits for issues 4 and 5, one phase per call (each well inside the 10-minute limit); run after
# `source .gpu/prelude.sh` with src/ on PYTHONPATH; logs and results go to $OUT.
#   shuffles  the subgroup family's device spellings: PTX shuffles on the GPU, Khronos/Intel shuffles on
#             PoCL 5 on the machine's CPU (its tests run where a device offers a shuffle)
#   tune      a default tune of all four dtypes (medium class, layouts, register caps, subgroup family);
#             the cache goes to $OUT/cache.tgz: unpack it into the cache of the later phases
#   suites    the SGEMM and DGEMM suites beside cuBLAS, CLBlast and numpy
#   cpu       the machine's CPU through PoCL beside numpy
#   tensor    a tune of d and z with the nvidia_mma family (FP64 tensor cores) beside the others, from the
#             bundled profile; the profile goes to $OUT (bundle it for the next phase)
#   tensor-bench  d and z at 4096 and 8192 beside cuBLAS and CLBlast, and the DGEMM suite
#   tf32      the tensor-core tests (TF32 modes included) and scripts/h100_mma.py's TF32 variants
#   tf32-tune a tune of the TF32 and 3xTF32 modes of s and c, from the bundled profile; profile to $OUT
#   tf32-bench  s in its three precisions and c in its TF32 modes at 4096 and 8192 beside cuBLAS (FP32, TF32)
#   half      the float16/bfloat16 tensor-core tests, mma.sync's ceilings of every operand type, and
#             scripts/h100_mma.py's float16/bfloat16 variants
#   half-tune a tune of h and b, from the bundled profile; profile to $OUT
#   half-bench  h, b and hs at 4096 and 8192 beside cuBLAS (and CLBlast's HGEMM where it runs)
#   pipeline  scripts/h100_mma.py's pipeline variants (swizzle, 8-byte reads, two fragment sets), then
#             scripts/h100_anatomy.py (mma.sync against occupancy, main-loop ablations, SASS), then the
#             tensor-core tests
#   ldmatrix  scripts/h100_mma.py's ldmatrix variants, scripts/h100_anatomy.py on them, the tensor-core tests
set -u
export AUTOGEMM_CACHE_DIR=${AUTOGEMM_CACHE_DIR:-/tmp/agc} COLUMNS=200
case "${1:-}" in
  shuffles)
    for dev in gpu cpu; do
      AUTOGEMM_DEVICE=$dev timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_subgroup_family.py 2>&1 \
        | tail -5 | sed "s/^/[$dev] /"
    done | tee "$OUT/subgroup-tests.log" ;;
  tune)
    timeout 560 python3 -m autogemm.cli tune -d gpu > "$OUT/tune.log" 2>&1; tail -20 "$OUT/tune.log"
    tar czf "$OUT/cache.tgz" -C "$AUTOGEMM_CACHE_DIR" profiles checkpoints ;;
  suites)
    for letter in s d; do
      timeout -s INT 270 python3 -m autogemm.cli bench -d gpu --dtype $letter --suite \
        --json "$OUT/suite-$letter.json" --plot "$OUT/suite-$letter.png" > "$OUT/suite-$letter.log" 2>&1
      tail -4 "$OUT/suite-$letter.log"
    done ;;
  cpu)
    timeout -s INT 400 python3 -m autogemm.cli bench -d cpu --dtype s,d --sizes 256:2048 --peers numpy \
      --json "$OUT/cpu.json" > "$OUT/cpu.log" 2>&1; tail -14 "$OUT/cpu.log" ;;
  tensor)
    timeout 570 python3 -m autogemm.cli tune -d gpu --dtype d,z --budget 8m > "$OUT/tune-dz.log" 2>&1
    tail -30 "$OUT/tune-dz.log"; cp "$AUTOGEMM_CACHE_DIR"/profiles/*.json "$OUT/"
    tar czf "$OUT/cache.tgz" -C "$AUTOGEMM_CACHE_DIR" profiles checkpoints capabilities ;;
  tensor-bench)
    timeout -s INT 200 python3 -m autogemm.cli bench -d gpu --dtype d,z --sizes 4096,8192 --peers cublas,clblast \
      --json "$OUT/sweep-dz.json" --plot "$OUT/sweep-dz.png" > "$OUT/sweep-dz.log" 2>&1; tail -12 "$OUT/sweep-dz.log"
    timeout -s INT 330 python3 -m autogemm.cli bench -d gpu --dtype d --suite --peers cublas,clblast \
      --json "$OUT/suite-d.json" --plot "$OUT/suite-d.png" > "$OUT/suite-d.log" 2>&1; tail -6 "$OUT/suite-d.log" ;;
  tf32)
    timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_mma_family.py 2>&1 | tail -4 \
      | tee "$OUT/tensor-tests.log"
    timeout 380 python3 scripts/h100_mma.py tf32 > "$OUT/mma-run.log" 2>&1; tail -12 "$OUT/mma-run.log" ;;
  tf32-tune)
    timeout 570 python3 -m autogemm.cli tune -d gpu --dtype s.tf32,s.3xtf32,c.tf32,c.3xtf32 --budget 8m \
      > "$OUT/tune-tf32.log" 2>&1
    tail -30 "$OUT/tune-tf32.log"; cp "$AUTOGEMM_CACHE_DIR"/profiles/*.json "$OUT/"
    tar czf "$OUT/cache.tgz" -C "$AUTOGEMM_CACHE_DIR" profiles checkpoints capabilities ;;
  tf32-bench)
    timeout -s INT 400 python3 -m autogemm.cli bench -d gpu --dtype s,s.tf32,s.3xtf32,c,c.tf32,c.3xtf32 \
      --sizes 4096,8192 --peers cublas,clblast --json "$OUT/sweep-tf32.json" --plot "$OUT/sweep-tf32.png" \
      > "$OUT/sweep-tf32.log" 2>&1; tail -24 "$OUT/sweep-tf32.log" ;;
  half)
    timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_half_precision.py tests/test_mma_family.py \
      2>&1 | tail -6 | tee "$OUT/half-tests.log"
    timeout 120 python3 scripts/h100_mma_peak.py > "$OUT/mma-peak.log" 2>&1; tail -12 "$OUT/mma-peak.log"
    timeout 200 python3 scripts/h100_mma.py half > "$OUT/mma-run.log" 2>&1; tail -24 "$OUT/mma-run.log" ;;
  half-tune)
    timeout 570 python3 -m autogemm.cli tune -d gpu --dtype h,b --budget 8m > "$OUT/tune-half.log" 2>&1
    tail -30 "$OUT/tune-half.log"; cp "$AUTOGEMM_CACHE_DIR"/profiles/*.json "$OUT/"
    tar czf "$OUT/cache.tgz" -C "$AUTOGEMM_CACHE_DIR" profiles checkpoints capabilities ;;
  half-bench)
    timeout -s INT 500 python3 -m autogemm.cli bench -d gpu --dtype h,b,hs --sizes 4096,8192 --peers cublas,clblast \
      --json "$OUT/sweep-half.json" --plot "$OUT/sweep-half.png" > "$OUT/sweep-half.log" 2>&1; tail -24 "$OUT/sweep-half.log" ;;
  pipeline)
    timeout 240 python3 scripts/h100_mma.py pipeline > "$OUT/mma-run.log" 2>&1; grep -v Warning "$OUT/mma-run.log" | tail -34
    timeout 150 python3 scripts/h100_anatomy.py > "$OUT/anatomy-run.log" 2>&1; tail -30 "$OUT/anatomy.log"
    timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_half_precision.py tests/test_mma_family.py \
      2>&1 | tail -6 | tee "$OUT/tensor-tests.log" ;;
  ldmatrix)
    timeout 200 python3 scripts/h100_mma.py ldmatrix > "$OUT/mma-run.log" 2>&1; grep -v Warning "$OUT/mma-run.log" | tail -22
    timeout 120 python3 scripts/h100_anatomy.py > "$OUT/anatomy-run.log" 2>&1; tail -8 "$OUT/anatomy.log"
    timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_half_precision.py tests/test_mma_family.py \
      2>&1 | tail -6 | tee "$OUT/tensor-tests.log" ;;
  *) echo "usage: $0 shuffles|tune|suites|cpu|tensor|tensor-bench|tf32|tf32-tune|tf32-bench|half|half-tune|half-bench|pipeline|ldmatrix" >&2
     exit 2 ;;
esac
