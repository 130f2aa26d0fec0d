#!/usr/bin/env bash
# Install clgrad and a working OpenCL CPU device. Usage: bash scripts/setup.sh [test]
#   pip's pocl-binary-distribution is the embedded default device, but its LLVM 14 can't target some
#   CPUs ("unknown target CPU 'generic'"); Debian's pocl-opencl-icd (PoCL 3.1) is installed beside it
#   when we are root on a Debian-like system, and clgrad picks whichever PoCL can build kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's Fashion-MNIST (IDX files under /usr/share/datasets/fashion-mnist) is the examples' real data.
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && \
   { [ ! -e /etc/OpenCL/vendors/pocl.icd ] || [ ! -d /usr/share/datasets/fashion-mnist ]; }; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd dataset-fashion-mnist >/dev/null
fi
extras="pocl"
if [ "${1:-}" = test ]; then
  extras="test,pocl,oclgrind,distributed"
fi
python -m pip install -q -e ".[${extras}]"
if [ "${1:-}" = test ]; then
  # PyTorch CPU is only an optional oracle in tests; they skip cleanly without it
  python -m pip install -q torch==2.13.0 2>/dev/null || echo "torch not installed: oracle tests will skip"
fi
python -c "import clgrad; print('OpenCL devices:', *clgrad.opencl.devices(), sep='\n  ')"
