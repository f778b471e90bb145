#!/usr/bin/env bash
# The GPU tier as one prepared run on a lent GPU machine (its own torch, CUDA build), so the
# records it writes say what ran them. Usage, from the repository root on the GPU machine:
#
#     OUT=/some/dir bash tests/gpu/device_session.sh
#
# Wheels for what the machine lacks (jsonschema and its needs, nbformat) may lie in .whl/.
# Each step has its own time limit, so one slow step cannot eat the others' time; everything
# it prints goes to $OUT/*.log, and the verification records come back as $OUT/records.tgz.
set -u
OUT=${OUT:?set OUT to a folder for the logs}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site
fi
# The package itself, without its dependencies (the machine's torch is the one to test), so
# its pytest plugin and console script are registered as a user's install would.
python3 -m pip install -q --no-deps --no-build-isolation --no-compile --target /tmp/sd . || exit 3
export PYTHONPATH=/tmp/sd${PYTHONPATH:+:$PYTHONPATH}

{
  date -u +%FT%TZ
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
} 2>&1 | tee "$OUT/machine.log"

# 1. Every case unchanged on real CUDA; records appended to cases/*.verified.json.
timeout 240 python3 -m samedevice verify --real --record -j 8 2>&1 | tee "$OUT/verify_real.log"
tar czf "$OUT/records.tgz" cases/*.verified.json

# 2. The same with each case's two programs swapped: on real CUDA too, every case must fail.
timeout 170 python3 - <<'EOF' 2>&1 | tee "$OUT/verify_real_swapped.log"
from samedevice.cases import load_cases
from samedevice.verify import FAIL, verify_cases
results = verify_cases(load_cases(), real=True, jobs=8, swapped=True)
for r in results:
    print(f"{r.status:5} {r.case.slug}: {(r.problems or [r.reason])[0]}")
failed = sum(r.status == FAIL for r in results)
print(f"swapped on real CUDA: {failed}/{len(results)} failed, as they must")
EOF

# 3. The GPU pytest tier: each case again, and each simulated scenario against real CUDA.
timeout 130 python3 -m pytest -p no:cacheprovider -m gpu -q -rs -n 8 \
  tests/gpu/test_real_cuda.py -k simulated_message 2>&1 | tee "$OUT/pytest_gpu.log"
exit 0
