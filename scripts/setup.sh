#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent: skips what is present.
set -euo pipefail
packages=(cmake g++ make ninja-build pkg-config
          libopenmpi-dev openmpi-bin nlohmann-json3-dev libgtest-dev libopenblas-dev libcli11-dev liburing-dev
          libprotobuf-dev protobuf-compiler libisal-dev libxxhash-dev python3 python3-venv python3-matplotlib openssh-client
          clang libclang-rt-14-dev libomp-dev  # the config fuzzer: clang's libFuzzer and OpenMP runtimes
          libpcre2-dev  # the BPE pre-tokenizer's Unicode regex
          iproute2 util-linux  # scripts/cluster.sh: network namespaces, veth, tc; nsenter, unshare
          iptables libnetfilter-queue-dev iputils-ping  # its delay line (an NFQUEUE rule, scripts/delay_line.cpp), ping
          jq)  # scripts/mutation_check.sh: the CTest names of a mutation's test executables
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

# A virtualenv beside the sources, pinned: the tests' Python readers (the tensorboard package's
# event reader, safetensors) and scripts/prepare_data.py's tokenizers; the build and the training
# never use it.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-test"
req="$root/scripts/requirements-test.txt"
if [ -x "$venv/bin/python3" ] && cmp -s "$req" "$venv/requirements-test.txt"; then
  echo "setup: test virtualenv up to date ($venv)"
else
  echo "setup: making the test virtualenv $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$venv/requirements-test.txt"
fi

# A real pretrained model and real English text for the tests that need them (tests/real), into a
# cache outside the repository; without them those tests skip, saying why.
"$root/scripts/fetch_real_models.sh" || echo "setup: the real model and texts are not fetched; tests/real skips"
