#!/usr/bin/env python3
# check_hf_export.py ORIGINAL EXPORTED: reads both files with the safetensors reference library and
# checks that zerotrain's export (GPT2LMHeadModel names with the "transformer." prefix, metadata
# format "pt") holds every weight of the original bit for bit, in the same shape and dtype.
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file


def main():
    orig, exported = load_file(sys.argv[1]), load_file(sys.argv[2])
    with safe_open(sys.argv[2], framework="numpy") as f:
        meta = f.metadata()
    assert meta.get("format") == "pt", f"metadata {meta}: transformers needs format=pt"
    weights = {k: v for k, v in orig.items() if not k.endswith(".attn.bias")}
    names = {("transformer." + k if not k.startswith("lm_head") else k): k for k in weights}
    assert set(exported) == set(names), f"names differ: {sorted(set(exported) ^ set(names))}"
    for name, k in names.items():
        a, b = weights[k], exported[name]
        assert a.dtype == b.dtype and a.shape == b.shape, f"{name}: {b.dtype}{b.shape} vs {a.dtype}{a.shape}"
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"{name}: values differ"
    print(f"check_hf_export: {len(names)} tensors equal bit for bit")


if __name__ == "__main__":
    main()
