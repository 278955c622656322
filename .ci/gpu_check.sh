#!/usr/bin/env bash
# The README's tests (and a differential-fuzz run) on a lent GPU machine, installed like CI.
#
# Run ON the GPU machine from the project root, with the git-ignored `.gpu/` filled on the
# development machine by `bash ../shared/tools/gpu/prepare.sh` (wheels, shared models) and
# carried along:
#
#     bash .ci/gpu_check.sh 'pytest -W error -q -n 15 --dist loadfile -p no:benchmark && lit -sv filecheck'
#
# Unlike `.gpu/run.sh` (a non-editable install run with `python3 -P`), this installs irc
# EDITABLE into a virtual environment over the machine's Python (which has numpy, onnx,
# onnxruntime, scipy, pytest, pytest-xdist, torch), as `.ci/run` does, so that tests which run
# console scripts or `python -c` subprocesses from the checkout see what CI sees. The machine's
# pytest-benchmark plugin must be disabled (`-p no:benchmark`): under `-W error` its
# xdist warning is fatal.
#
# OpenCL: NVIDIA's driver is registered with the ICD loader of pyopencl's wheel. When the
# git-ignored `.gpu_pocl/` is carried too (`libpocl-*.so.xz` and `pocl_dist.tar.xz`: PoCL of
# `pocl-binary-distribution`, too big as a wheel for the 64 MiB transfer), PoCL's CPU device is
# registered beside it; `IRC_OPENCL_DEVICE=portable:` then picks it (a GPU is preferred
# otherwise). Set OUT to collect the log in $OUT/log.txt.
set -u
export PYTHONUNBUFFERED=1
root=$PWD
venv=${IRC_GPU_VENV:-/tmp/irc-gpu-venv}

mkdir -p /tmp/icd
for lib in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib64/libnvidia-opencl.so \
  /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
  [ -e "$lib" ] && { echo "$lib" >/tmp/icd/nvidia.icd; break; }
done

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || exit 1
  # the machine's python3 may itself be a venv (/opt/torch/.venv): its packages through a .pth
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/machine-site.pth"
  "$venv/bin/python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .gpu/whl/*.whl || exit 1
  "$venv/bin/python" -m pip install -q --no-index --no-deps --no-build-isolation -e . || exit 1
fi

if [ -d .gpu_pocl ]; then
  site=$("$venv/bin/python" -c 'import os, pyopencl; print(os.path.dirname(os.path.dirname(pyopencl.__file__)))')
  for xz_lib in .gpu_pocl/libpocl-*.so.xz; do
    lib="$site/pyopencl/.libs/$(basename "$xz_lib" .xz)"
    [ -e "$lib" ] || xz -dc "$xz_lib" >"$lib"
    echo "$lib" >/tmp/icd/pocl.icd
  done
  [ -d "$site/pocl_binary_distribution" ] || tar xJf .gpu_pocl/pocl_dist.tar.xz -C "$site"
fi
export OCL_ICD_VENDORS=/tmp/icd

[ -d .gpu/models ] && mkdir -p ../shared && ln -sfn "$root/.gpu/models" ../shared/models
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -c "import pyopencl as cl; [print(p.name, '|', d.name, '|', d.version) for p in cl.get_platforms() for d in p.get_devices()]"
(eval "$@") 2>&1 | tee "${OUT:-/tmp}/log.txt"
