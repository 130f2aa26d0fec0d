#!/usr/bin/env bash
# Install clgrad and a working OpenCL CPU device. Usage: bash scripts/setup.sh [test]
#   As root on Debian: Debian's PoCL 3.1 (pocl-opencl-icd) and Fashion-MNIST; with `test` also Mesa's rusticl
#   (mesa-opencl-icd, enabled by RUSTICL_ENABLE=llvmpipe) and pip's PoCL 3.0-rc2 beside them, so the tests cover
#   every implementation and the health check meets a driver that breaks on some CPUs.
#   Elsewhere (no apt, not root): pip's pocl-binary-distribution, whose LLVM 14 works on many x86 CPUs but not
#   all (see the README); clgrad's health check decides whether it is used.
set -euo pipefail
cd "$(dirname "$0")/.."
packages="pocl-opencl-icd dataset-fashion-mnist"
[ "${1:-}" = test ] && packages="$packages mesa-opencl-icd"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  missing=$(for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  if [ -n "$missing" ]; then
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
fi
extras=""
# pip's PoCL 3.0-rc2 only where no system PoCL exists (its LLVM 14 fails on CPUs it does not know, e.g.
# AMD EPYC with AVX-512), and for the tests
if [ ! -e /etc/OpenCL/vendors/pocl.icd ] || [ "${1:-}" = test ]; then
  extras="pocl"
fi
if [ "${1:-}" = test ]; then
  extras="test,pocl,oclgrind,distributed"
fi
python -m pip install -q -e ".${extras:+[$extras]}"
if [ "${1:-}" = test ]; then
  # PyTorch CPU (and expecttest, which its OpInfo database imports) is only an optional oracle in tests; they skip
  # cleanly without it
  python -m pip install -q torch==2.13.0 expecttest 2>/dev/null || echo "torch not installed: oracle tests will skip"
fi
# every device with its health verdict (the first time, clgrad's kernels run on each device in a child process;
# the verdicts are cached, so later runs start at once)
if [ "${1:-}" = test ] && [ -e /etc/OpenCL/vendors/rusticl.icd ]; then export RUSTICL_ENABLE=llvmpipe; fi
python -c "import clgrad; print('OpenCL devices:', *clgrad.opencl.devices(), sep='\n  ')"
