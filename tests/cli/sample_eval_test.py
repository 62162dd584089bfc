#!/usr/bin/env python3
"""`zerotrain sample` and `zerotrain eval` through the binary, with a model trained here on one
sentence (byte-level data from `zerotrain prepare`): greedy sampling continues the sentence it
memorised; a seed repeats its draws; `eval` over the whole validation split equals the final
validation loss the training run wrote, at another world size and stage, and from the checkpoint's
export through --init-from (exactly one of the two, printed once when neither); --sample-every prints one
sample per K steps from rank 0 alone; bad input (a tokenizer file that does not parse, a missing
checkpoint, ids that are not ids, more tokens than the context) exits 2 naming the file or flag;
prepare, env and check print once under a launcher.
A safetensors export samples as its checkpoint does; a tokenizer (the BPE fixture of
tests/model/data/bpe) turns text into ids and back. A Llama model (grouped-query attention, RoPE)
trained the same way at 2 ranks and stage 3 continues the sentence byte for byte through its own
decoder, from its checkpoint at 1 and 8 ranks (printed once) and from its Hugging Face export.
A Llama with a SentencePiece-style tokenizer (tests/model/data/sentencepiece_bpe, Llama-2's layout)
samples from <s>, and its prompt's ids are tokenizers' (<s> first, bytes for characters outside the
vocabulary), at 1 and 8 ranks.
Usage: sample_eval_test.py ZEROTRAIN MPIRUN TOKENIZER_JSON"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zt_metrics  # noqa: E402 (found through the path above)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
import sentencepiece_variant  # noqa: E402 (found through the path above)

ZT, MPIRUN, TOKENIZER = sys.argv[1], sys.argv[2], sys.argv[3]
MPI = [MPIRUN, "-q", "--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
ROOT = tempfile.mkdtemp(prefix="zt_sample_eval_")
FAILURES = []
SENTENCE = "the quick brown fox jumps over the lazy dog. "
MODEL = ["--model", "tiny", "--vocab", "256", "--seq-len", "32", "--dim", "64", "--heads", "4"]
LLAMA = ["--model", "llama-tiny", "--vocab", "256", "--seq-len", "32"]


def check(name, ok, what):
    if not ok:
        FAILURES.append(name)
        print("FAIL %s: %s" % (name, what), flush=True)
    return ok


def run(cmd, expect_rc=0, name=""):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, stdin=subprocess.DEVNULL, timeout=300)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    check(name or cmd[-1], p.returncode == expect_rc,
          "exit %d, want %d: %s\nstdout:\n%s\nstderr:\n%s" % (p.returncode, expect_rc, " ".join(cmd), out[-1500:], err[-1500:]))
    return out, err


def config(stage):
    path = os.path.join(ROOT, "stage%d.json" % stage)
    json.dump({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
               "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "betas": [0.9, 0.95], "weight_decay": 0.0}},
               "zero_optimization": {"stage": stage}}, open(path, "w"))
    return path


def main():
    text = os.path.join(ROOT, "sentence.txt")
    open(text, "w").write(SENTENCE * 400)
    data = os.path.join(ROOT, "data")
    run([ZT, "prepare", "--text", text, "--out", data], name="prepare")
    # One process's commands print (and write) once under a launcher: the same lines as one rank's.
    for name, cmd in [("prepare", ["prepare", "--text", text, "--out", os.path.join(ROOT, "data2")]), ("env", ["env"]),
                      ("check", ["check", "--config", config(2), "--model", "tiny", "--world-size", "2"])]:
        one, _ = run([ZT] + cmd, name=name + "_np1")
        two, _ = run(MPI + ["-np", "2", ZT] + cmd, name=name + "_np2")
        check(name + "_once", len(two.splitlines()) == len(one.splitlines()) > 0,
              "%d lines at 2 ranks, %d at 1:\n%s" % (len(two.splitlines()), len(one.splitlines()), two))
    ckpt = os.path.join(ROOT, "ckpt")
    metrics = os.path.join(ROOT, "train.jsonl")
    # Whole-split validation at the end (--eval-batches past the split), a sample every 100 steps.
    out, err = run(MPI + ["-np", "2", ZT, "--config", config(3)] + MODEL +
                   ["--data", data, "--steps", "300", "--eval-every", "0", "--eval-batches", "1000",
                    "--sample-every", "100", "--sample-tokens", "20", "--save", ckpt, "--metrics", metrics, "--threads", "1"],
                   name="train")
    samples = [l for l in out.splitlines() if l.startswith("sample (step")]
    check("sample_every", len(samples) == 3 and all(l.startswith("sample (step %d" % (100 * (i + 1))) for i, l in enumerate(samples)),
          "want one sample line at steps 100, 200 and 300 (rank 0 only):\n%s" % samples)
    end = zt_metrics.read_metrics(metrics, missing_ok=False).end
    final_val = end["val_loss"]
    check("memorised", final_val < 0.2, "final val loss %.4f: the sentence was not learned" % final_val)

    # Greedy: the sentence continues from its own start, byte for byte.
    out, err = run([ZT, "sample", "--checkpoint", ckpt, "--prompt", "the quick ", "--tokens", "22", "--temperature", "0"],
                   name="greedy")
    want = (SENTENCE * 2)[:len("the quick ") + 22]
    check("greedy", out.rstrip("\n") == want, "greedy sample %r, want %r" % (out, want))
    check("greedy_report", "key/value cache" in err and "22 tokens" in err, "stderr: %s" % err)
    # The same weights exported to safetensors sample the same (the model from the flags).
    weights = os.path.join(ROOT, "weights.safetensors")
    run([ZT, "export", "--checkpoint", ckpt, "--out", weights], name="export")
    out2, _ = run([ZT, "sample", "--init-from", weights] + MODEL +
                  ["--prompt", "the quick ", "--tokens", "22", "--temperature", "0"], name="init_from")
    check("init_from_same", out2 == out, "--init-from export %r, --checkpoint %r" % (out2, out))
    # A seed repeats its draws (at temperature 1 over every token), under a launcher too (one process prints).
    a, _ = run([ZT, "sample", "--checkpoint", ckpt, "--prompt", "th", "--tokens", "25", "--seed", "7", "--top-k", "0"],
               name="seed_a")
    b, _ = run(MPI + ["-np", "2", ZT, "sample", "--checkpoint", ckpt, "--prompt", "th", "--tokens", "25", "--seed", "7",
                      "--top-k", "0"], name="seed_b")
    check("seeded", a == b and len(a) == 2 + 25 + 1, "seed 7 twice: %r vs %r" % (a, b))
    ids, _ = run([ZT, "sample", "--checkpoint", ckpt, "--prompt-ids", "116,104,101,32,113", "--tokens", "3", "--temperature", "0"],
                 name="ids")
    check("ids_out", ids.split() == [str(ord(c)) for c in "the quic"], "ids output %r" % ids)

    # Llama: the same sentence, the same checks through the Llama decoder (query heads sharing
    # key/value heads in the cache, RoPE at each new position).
    ckpt_llama = os.path.join(ROOT, "ckpt_llama")
    out, err = run(MPI + ["-np", "2", ZT, "--config", config(3)] + LLAMA +
                   ["--data", data, "--steps", "300", "--eval-every", "0", "--eval-batches", "1000",
                    "--sample-every", "150", "--sample-tokens", "10", "--save", ckpt_llama, "--metrics", metrics,
                    "--threads", "1"], name="train_llama")
    samples = [l for l in out.splitlines() if l.startswith("sample (step")]
    check("llama_sample_every", len(samples) == 2, "want one sample line at steps 150 and 300:\n%s" % samples)
    llama_val = zt_metrics.read_metrics(metrics, missing_ok=False).end["val_loss"]
    check("llama_memorised", llama_val < 0.2, "final val loss %.4f: the sentence was not learned" % llama_val)
    greedy = ["--prompt", "the quick ", "--tokens", "22", "--temperature", "0"]
    out, err = run([ZT, "sample", "--checkpoint", ckpt_llama] + greedy, name="llama_greedy")
    check("llama_greedy", out.rstrip("\n") == want, "greedy Llama sample %r, want %r" % (out, want))
    out8, err8 = run(MPI + ["-np", "8", ZT, "sample", "--checkpoint", ckpt_llama] + greedy, name="llama_greedy_np8")
    check("llama_greedy_np8", out8 == out and err8.count("sample: ") == 2,
          "at 8 ranks %r (want %r once) and stderr:\n%s" % (out8, out, err8))
    llama_weights = os.path.join(ROOT, "llama.safetensors")
    run([ZT, "export", "--checkpoint", ckpt_llama, "--out", llama_weights], name="llama_export")
    out2, _ = run([ZT, "sample", "--init-from", llama_weights] + LLAMA + greedy, name="llama_init_from")
    check("llama_init_from_same", out2 == out, "--init-from export %r, --checkpoint %r" % (out2, out))

    # eval: the whole validation split, at 1 rank and stage 0, equals the run's final validation.
    out, err = run([ZT, "eval", "--checkpoint", ckpt, "--data", data, "--config", config(0), "--threads", "1"],
                   name="eval_np1")
    line = [l for l in out.splitlines() if l.startswith("eval: loss")]
    if check("eval_line", len(line) == 1, "no eval line:\n%s" % out):
        got = float(line[0].split()[2].rstrip(","))
        check("eval_equals_training", abs(got - final_val) <= 1e-5 * max(1.0, abs(final_val)),
              "eval %.8f, training's final validation %.8f" % (got, final_val))
    out2, _ = run(MPI + ["-np", "2", ZT, "eval", "--checkpoint", ckpt, "--data", data, "--config", config(2),
                         "--threads", "1"], name="eval_np2")
    check("eval_once", out2.count("eval: loss") == 1, "eval line count at 2 ranks:\n%s" % out2)
    # eval --init-from the checkpoint's export (the model from the flags) gives the same loss.
    out3, _ = run([ZT, "eval", "--init-from", weights] + MODEL + ["--data", data, "--config", config(0), "--threads", "1"],
                  name="eval_init_from")
    line3 = [l for l in out3.splitlines() if l.startswith("eval: loss")]
    if check("eval_init_from_line", len(line3) == 1, "no eval line:\n%s" % out3):
        check("eval_init_from_equals", abs(float(line3[0].split()[2].rstrip(",")) - final_val) <= 1e-5 * max(1.0, final_val),
              "eval --init-from %s, training's final validation %.8f" % (line3[0], final_val))

    # Text through a tokenizer: a model whose vocabulary holds the tokenizer's ids.
    ckpt_bpe = os.path.join(ROOT, "ckpt_bpe")
    run([ZT] + MODEL[:2] + ["--vocab", "1024", "--seq-len", "16", "--data", data, "--steps", "3", "--eval-every", "0",
                            "--eval-batches", "1", "--save", ckpt_bpe, "--threads", "1"], name="train_bpe")
    out, err = run([ZT, "sample", "--checkpoint", ckpt_bpe, "--tokenizer", TOKENIZER, "--prompt", "the quick",
                    "--tokens", "5", "--seed", "3"], name="tokenizer_text")
    check("tokenizer_text_out", out.startswith("the quick") and len(out) > len("the quick\n"),
          "stdout %r: the prompt then decoded text" % out)
    check("tokenizer_prompt_tokens", "prompt tokens" in err and "sample: " in err, "stderr %s" % err)

    # A Llama with a SentencePiece-style tokenizer (Llama-2's layout: <s> = 1, </s> = 2, <0xNN> byte
    # tokens): --sample-every starts from <s>; a prompt gets <s> first and spells characters outside
    # the vocabulary in bytes, as tokenizers gives the ids; at 8 ranks the same, printed once.
    sp = os.path.join(ROOT, "llama2_legacy.json")
    sp_expected = sentencepiece_variant.expected()
    legacy = sentencepiece_variant.variant_named("llama2_legacy", sp_expected)
    json.dump(sentencepiece_variant.variant_tokenizer(legacy), open(sp, "w", encoding="utf-8"))
    ckpt_sp = os.path.join(ROOT, "ckpt_sp")
    out, _ = run(MPI + ["-np", "2", ZT, "--config", config(3)] + LLAMA[:2] +
                 ["--vocab", "1024", "--seq-len", "32", "--data", data, "--steps", "3", "--eval-every", "0",
                  "--eval-batches", "1", "--sample-every", "3", "--sample-tokens", "6", "--tokenizer", sp, "--save", ckpt_sp,
                  "--threads", "1"], name="train_sp")
    samples = [l for l in out.splitlines() if l.startswith("sample (step")]
    check("sp_sample_every", len(samples) == 1 and samples[0].startswith("sample (step 3, from token 1)"),
          "want one sample line from <s> (id 1):\n%s" % out)
    at = sp_expected["texts"].index("emoji \U0001F600\U0001F680 and \U0001F44D\U0001F3FD skin tone")
    want_ids = legacy["ids_with_special_tokens"][at]
    greedy_ids = ["sample", "--checkpoint", ckpt_sp, "--tokenizer", sp, "--prompt", sp_expected["texts"][at],
                  "--tokens", "3", "--temperature", "0", "--print-ids"]
    out1, _ = run([ZT] + greedy_ids, name="sp_prompt_ids")
    got_ids = [int(x) for x in out1.split()]
    check("sp_prompt_ids", got_ids[:len(want_ids)] == want_ids and len(got_ids) == len(want_ids) + 3,
          "prompt ids %s, tokenizers' %s (then 3 new)" % (got_ids, want_ids))
    out8, err8 = run(MPI + ["-np", "8", ZT] + greedy_ids, name="sp_prompt_ids_np8")
    check("sp_prompt_ids_np8", out8 == out1 and err8.count("sample: ") == 2,
          "at 8 ranks %r (want %r once) and stderr:\n%s" % (out8, out1, err8))
    text_out, _ = run([ZT, "sample", "--checkpoint", ckpt_sp, "--tokenizer", sp, "--prompt", "caf\u00e9 na\u00efve",
                       "--tokens", "3", "--seed", "1"], name="sp_prompt_text")
    check("sp_prompt_text", text_out.startswith("<s> caf\u00e9 na\u00efve"),
          "stdout %r: <s> then the prompt as tokenizers decodes it" % text_out)

    # Bad input: exit 2, the file or flag named, nothing on stdout.
    bad_tok = os.path.join(ROOT, "tokenizer.json")
    open(bad_tok, "w").write("{ not json")
    for name, cmd, needle in [
        ("bad_tokenizer", [ZT, "sample", "--checkpoint", ckpt, "--tokenizer", bad_tok, "--prompt", "x"], bad_tok),
        ("missing_checkpoint", [ZT, "sample", "--checkpoint", os.path.join(ROOT, "nope"), "--prompt", "x"], "nope"),
        ("bad_ids", [ZT, "sample", "--checkpoint", ckpt, "--prompt-ids", "1,x"], "--prompt-ids"),
        ("too_long", [ZT, "sample", "--checkpoint", ckpt, "--prompt", "ab", "--tokens", "31"], "--tokens"),
        ("bad_temperature", [ZT, "sample", "--checkpoint", ckpt, "--prompt", "ab", "--temperature", "-1"], "--temperature"),
        ("tokenizer_too_big", [ZT, "sample", "--checkpoint", ckpt, "--tokenizer", TOKENIZER, "--prompt", "the quick"],
         "--tokenizer"),
        ("ids_outside_tokenizer", [ZT, "sample", "--checkpoint", ckpt_bpe, "--tokenizer", TOKENIZER, "--prompt-ids", "900"],
         "--prompt-ids"),
        ("model_flags_with_checkpoint", [ZT, "sample", "--checkpoint", ckpt, "--model", "small", "--prompt", "x"],
         "--model"),
        ("llama_weights_as_gpt2", [ZT, "sample", "--init-from", llama_weights] + MODEL + ["--prompt-ids", "1"],
         llama_weights),
        ("eval_missing", [ZT, "eval", "--checkpoint", os.path.join(ROOT, "nope")], "nope"),
        ("eval_both", [ZT, "eval", "--checkpoint", ckpt, "--init-from", weights], "exactly one of --checkpoint"),
        ("eval_neither", MPI + ["-np", "2", ZT, "eval"], "exactly one of --checkpoint"),
        ("eval_model_flags_with_checkpoint", [ZT, "eval", "--checkpoint", ckpt, "--model", "small"], "--model"),
        ("train_bad_tokenizer", [ZT] + MODEL + ["--steps", "1", "--tokenizer", bad_tok], bad_tok),
    ]:
        out, err = run(cmd, expect_rc=2, name=name)
        check(name + "_message", needle in err, "stderr does not name %s:\n%s" % (needle, err))
        if name == "eval_neither":  # at 2 ranks, printed once
            check(name + "_once", err.count(needle) == 1, "printed %d times:\n%s" % (err.count(needle), err))
    if FAILURES:
        print("FAILED: %s (files in %s)" % (", ".join(FAILURES), ROOT))
        return 1
    shutil.rmtree(ROOT)
    print("sample/eval: all cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
