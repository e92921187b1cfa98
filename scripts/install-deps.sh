#!/usr/bin/env bash
# Installs the Debian packages trainscope needs to build, test and run.
# Run as root (or through sudo) on Debian 12 (bookworm) or newer.
#   --main  only what building trainscope and running its suites and reports
#           needs (scripts/main.sh): not the tests' Chromium, the PyTorch
#           peer, valgrind, clang-format or SimGrid, which are half of the
#           download (about 515 of 1,064 MB of packages on Debian 12)
#   --fuzz  adds clang 14 and its libFuzzer runtime for scripts/fuzz.sh.
#
# Quiet: a line a step on the terminal; apt's whole output goes to
# out/install-deps.log (TRAINSCOPE_INSTALL_LOG names another file), whose
# last lines are shown when a step fails.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin          # MPI backend of comm/ and mpirun
  libopenblas-openmp-dev              # sgemm; the OpenMP build shares one thread pool with our kernels
  libdnnl-dev                         # oneDNN: bf16 GEMMs with fp32 accumulation (kernels/matmul_bf16.h)
  libhwy-dev                          # Highway: the element-wise kernels' vector code, dispatched per CPU (kernels/simd.h)
  libgtest-dev libgmock-dev googletest # tests (the release preset configures them)
  libbenchmark-dev                    # bench/
  libfmt-dev                          # formatting
  libsqlite3-dev sqlite3              # results/
  nlohmann-json3-dev                  # JSON, JSONL, traces, safetensors headers
  libcli11-dev                        # command line
  libtomlplusplus-dev                 # suite files
  gnuplot-nox                         # report charts
  iproute2 util-linux                 # virtual cluster (scripts/netns-*.sh): ip netns, unshare
)
# Not for --main: the tests, CI's checks and the other engines.
test_packages=(
  chromium                            # report test: renders the HTML report headless
  python3-torch                       # the suites' PyTorch peer (bench/pytorch/, suite vs-pytorch)
  valgrind                            # the speed gate's work lane (callgrind counts; trainscope work)
  clang-format                        # scripts/check-format.sh (CI keeps the sources' format)
  libsimgrid-dev                      # SimGrid's SMPI: smpicxx, smpirun (simgrid/, trainscope simgrid)
)
case ${1:-} in
  "") packages+=("${test_packages[@]}") ;;
  --main) ;;
  --fuzz)
    packages+=("${test_packages[@]}")
    packages+=(clang-14 libclang-rt-14-dev libomp-14-dev)  # the fuzz preset: libFuzzer, sanitizers, OpenMP
    ;;
  *) echo "install-deps.sh: unknown argument '$1' (usage: install-deps.sh [--main | --fuzz])" >&2; exit 2 ;;
esac

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then exec sudo "$0" "$@"; fi
  echo "install-deps.sh: must run as root to apt-get install: ${packages[*]}" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
log=${TRAINSCOPE_INSTALL_LOG:-$root/out/install-deps.log}
mkdir -p "$(dirname "$log")"
: > "$log"
# One step: its line on the terminal, its output in the log; on failure the
# log's tail and where the rest is.
step() {
  local what=$1 start=$SECONDS
  shift
  printf 'install-deps.sh: %s ... ' "$what"
  if "$@" >> "$log" 2>&1; then
    echo "done ($((SECONDS - start)) s)"
  else
    local code=$?
    echo "failed (exit $code)"
    tail -n 20 "$log" >&2
    echo "install-deps.sh: the whole output is in $log" >&2
    exit "$code"
  fi
}
echo "install-deps.sh: ${#missing[@]} of ${#packages[@]} packages to install (apt's output: $log)"
echo "to install: ${missing[*]}" >> "$log"
export DEBIAN_FRONTEND=noninteractive
step "updating the package lists" apt-get update
step "downloading ${#missing[@]} packages" \
  apt-get install -y --no-install-recommends --download-only "${missing[@]}"
step "installing ${#missing[@]} packages" apt-get install -y --no-install-recommends "${missing[@]}"
