"""Generate the tiny, deterministic models of the real vLLM test bed.

Run with the test bed's Python (it needs torch, transformers and tokenizers):

    $TESTBED/venv/bin/python tests/testbed/make_models.py [--force] [--only NAME ...]

Writes under ``$TESTBED/models`` (``TESTBED=${JETSON_LLM_TESTBED:-/var/cache/jetson_llm_vllm}``):

``tokenizer``          byte-level BPE, vocabulary 512, trained on the text in this file
``target``             Llama, 4 layers, hidden 256, 4 heads, 2 KV heads, random weights (~2.6 M)
``draft-perfect``      a copy of ``target``: at temperature 0 every draft token is accepted
``draft-random``       same shape and tokenizer as ``target``, independent random weights:
                       ~0 acceptance, speculation slower than the baseline (a real revert case)
``draft-badvocab``     vocabulary 300 (own tokenizer): vLLM refuses it at start-up with
                       "Target and draft model should have the same vocabulary size"
``target-deep``        Llama, 12 layers, hidden 1024, 16 heads, 4 KV heads (~108 M, 207 MiB); every
                       layer has zeroed o_proj/down_proj, so it is identity through the residual
                       connection but still costs its compute: the greedy output is a function of
                       the last token's embedding, the final norm and lm_head
``draft-deep-1layer``  ``target-deep``'s embeddings, first layer, final norm and lm_head: the same
                       greedy output at about a tenth of the cost (a realistic ACCEPT pair)
``draft-deep-tiny``    ``target-deep``'s embeddings, final norm and lm_head around one narrow layer
                       (4 heads of 64, MLP 64; zeroed o_proj/down_proj, the target's KV-cache
                       shape): the same greedy output at about 2 % of the target's weights, the cost
                       ratio of an EAGLE-3 head on a Jetson-sized target
``draft-heavy``        ``target``'s weights and 4 layers followed by 28 identity layers (zeroed
                       o_proj/down_proj): the same greedy output (acceptance ~1.0) at 8 times
                       the target's depth, a draft too expensive to pay on any CPU (a REJECT pair
                       whose verdict does not depend on the machine, unlike ``draft-perfect``)
``target-mtp``         a MiMo-style checkpoint: Qwen2, 4 layers, hidden 256, random weights, plus one
                       multi-token-prediction layer (``model.mtp_layers.0.*``, the layout vLLM's
                       ``mimo_mtp.py`` loads; ``num_nextn_predict_layers: 1``, architecture
                       ``MiMoForCausalLM``): vLLM 0.32's CPU build serves it with ``{"method": "mtp"}``
                       (random MTP weights, so ~0 acceptance: the path runs, it does not pay)
``draft-dflash``       a DFlash draft for ``target`` (architecture ``DFlashDraftModel``, the Qwen3 layout vLLM's
                       ``qwen3_dflash.py`` loads): one random Qwen3 layer of the target's width and KV-cache
                       shape, ``fc`` over the target's layers 1 and 3 (``dflash_config.target_layer_ids``
                       [0, 2]), the target's embeddings and lm_head, ``dflash_config.mask_token_id`` the pad
                       token: vLLM 0.32's CPU build serves ``target`` with ``{"method": "dflash"}`` and this
                       draft (the CPU platform swaps DFlash's Triton kernel for a C++ one; random weights, so
                       ~0 acceptance: the path runs, it does not pay)

Idempotent: each model directory holds ``.recipe.json``; a model whose recipe (and the recipe of
what it derives from) is unchanged is not generated again. Everything is seeded, so the same
recipe gives the same bytes. ``$TESTBED/models/manifest.json`` lists the models with their
parameter counts and weight hashes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

RECIPE_VERSION = 1
SPECIALS = ["<s>", "</s>", "<pad>"]  # ids 0, 1, 2
BOS_ID, EOS_ID, PAD_ID = 0, 1, 2
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant: {% endif %}"
)

# A few KB of text written for this project (chat, code, summaries, Q&A), the tokenizers'
# training corpus. Changing it changes every model's recipe hash.
CORPUS = r'''
User: How do I check which power mode my Jetson AGX Orin is running?
Assistant: Run `nvpmodel -q`. It prints the current mode name, for example MAXN, and its id.
For benchmarks, use MAXN and run `jetson_clocks` so the clocks stay at their maximum.

User: Summarise the following paragraph in one sentence.
Speculative decoding lets a small draft model propose several tokens that the large target
model then verifies in a single forward pass. When the draft agrees with the target most of
the time, the target produces several tokens per step and the user sees lower latency. When
the draft disagrees, the extra work is wasted and the server can become slower than without it.
Assistant: A cheap draft model guesses tokens that the target checks in one pass, which speeds
up generation when the guesses are usually right and slows it down when they are not.

Q: What is the time to first token?
A: The time from sending a request until the first streamed token arrives. It is dominated by
the prefill of the prompt, so it grows with the prompt length.
Q: What is TPOT?
A: Time per output token after the first one: (latency - ttft) / (output_tokens - 1).
Q: Why can throughput fall at high concurrency with speculation?
A: Batches are already large, so the GPU is busy; verifying draft tokens adds compute that
no longer hides behind memory bandwidth.

def percentile(values, q):
    """Linear interpolation between closest ranks, like numpy's default."""
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)

for concurrency in (1, 8):
    result = run_benchmark(endpoint="http://127.0.0.1:8000", concurrency=concurrency)
    print(f"c={concurrency}: {result['throughput_tok_s']:.1f} tok/s")

#include <stdio.h>
int main(void) {
    for (int i = 0; i < 10; i++) {
        printf("token %d\n", i);
    }
    return 0;
}

- name: Restart vLLM when the unit changed
  ansible.builtin.systemd_service:
    name: vllm
    state: restarted
    daemon_reload: true

User: Write a haiku about a robot that reads the weather.
Assistant: Cold sensors listen / clouds gather in the data / the robot packs rain.

User: Translate "the server is ready" into French and German.
Assistant: French: le serveur est pret. German: der Server ist bereit.

The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
Sphinx of black quartz, judge my vow. How vexingly quick daft zebras jump!
0123456789 + - * / = < > ( ) [ ] { } ; : , . ! ? ' " # $ % & @ ^ _ ` | ~ \
Edge devices run models close to the cameras and sensors that feed them. Memory is shared
between the CPU and the GPU, so the weights, the KV cache and the draft model all compete for
the same budget. A fleet of devices can differ in memory size, power mode and software version,
and each difference can change which configuration is fastest.
'''


def testbed_dir() -> Path:
    return Path(os.environ.get("JETSON_LLM_TESTBED", "/var/cache/jetson_llm_vllm"))


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


TOKENIZERS = {
    "tokenizer": {"vocab_size": 512},
    "tokenizer-300": {"vocab_size": 300},  # only for draft-badvocab
}

SMALL = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4,
         "num_attention_heads": 4, "num_key_value_heads": 2}
DEEP = {"hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 12,
        "num_attention_heads": 16, "num_key_value_heads": 4}

# The narrow layer of draft-deep-tiny: the target's width and KV-cache shape (4 KV heads of 64, so
# vLLM allocates one KV-cache layout for target and draft), 4 query heads, a 64-wide MLP.
TINY_LAYER = {"num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 64,
              "intermediate_size": 64}

# name -> recipe. kind "random": fresh seeded weights; "copy": the source's files;
# "identity": random, then zero o_proj/down_proj of every layer (each layer adds exactly 0);
# "first-layer": the source's embeddings, layer 0, final norm and lm_head;
# "narrow-layer": the source's embeddings, final norm and lm_head around one fresh identity layer of
# the shape "layer" (exact only for an "identity" source);
# "padded": the source's every tensor, then "extra_layers" identity layers of its shape.
MODELS = {
    "target": {"kind": "random", "tokenizer": "tokenizer", "shape": SMALL, "seed": 1234},
    "draft-perfect": {"kind": "copy", "source": "target"},
    "draft-random": {"kind": "random", "tokenizer": "tokenizer", "shape": SMALL, "seed": 98765},
    "draft-badvocab": {"kind": "random", "tokenizer": "tokenizer-300", "shape": SMALL, "seed": 4321},
    "target-deep": {"kind": "identity", "tokenizer": "tokenizer", "shape": DEEP, "seed": 2024},
    "draft-deep-1layer": {"kind": "first-layer", "source": "target-deep"},
    "draft-deep-tiny": {"kind": "narrow-layer", "source": "target-deep", "layer": TINY_LAYER, "seed": 7},
    "draft-heavy": {"kind": "padded", "source": "target", "extra_layers": 28, "seed": 11},
    "target-mtp": {"kind": "mtp", "tokenizer": "tokenizer", "shape": SMALL, "seed": 2718},
    "draft-dflash": {"kind": "dflash", "source": "target", "seed": 31, "target_layer_ids": [0, 2],
                     "mask_token_id": PAD_ID},
}


def full_recipe(name: str) -> dict:
    """The recipe of a model including everything it depends on (for the idempotence hash)."""
    if name in TOKENIZERS:
        return {"v": RECIPE_VERSION, "tokenizer": TOKENIZERS[name], "corpus": _hash(CORPUS),
                "specials": SPECIALS, "chat_template": CHAT_TEMPLATE}
    spec = dict(MODELS[name])
    out = {"v": RECIPE_VERSION, "spec": spec}
    if "source" in spec:
        out["source"] = full_recipe(spec["source"])
    if "tokenizer" in spec:
        out["tokenizer"] = full_recipe(spec["tokenizer"])
    return out


def up_to_date(path: Path, recipe: dict) -> bool:
    marker = path / ".recipe.json"
    if not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()).get("hash") == _hash(recipe)
    except ValueError:
        return False


def mark(path: Path, recipe: dict) -> None:
    (path / ".recipe.json").write_text(json.dumps({"hash": _hash(recipe), "recipe": recipe},
                                                  indent=1, sort_keys=True))


def build_tokenizer(out: Path, vocab_size: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([CORPUS], trainer=trainer)
    if tok.get_vocab_size() != vocab_size:
        raise SystemExit(f"tokenizer trained to {tok.get_vocab_size()} tokens, expected {vocab_size}: "
                         "the corpus has too few distinct pairs")
    # Llama-like: one BOS in front of every encoded text.
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", BOS_ID)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", model_max_length=4096,
                                   clean_up_tokenization_spaces=False)
    fast.chat_template = CHAT_TEMPLATE
    ids = [fast.convert_tokens_to_ids(t) for t in SPECIALS]
    if ids != [BOS_ID, EOS_ID, PAD_ID]:
        raise SystemExit(f"special token ids {ids}, expected {[BOS_ID, EOS_ID, PAD_ID]}")
    out.mkdir(parents=True)
    fast.save_pretrained(str(out))


def llama_config(shape: dict, vocab_size: int):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab_size, max_position_embeddings=4096,
                       bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
                       tie_word_embeddings=False, torch_dtype="bfloat16", **shape)


def zero_layer_outputs(layers) -> None:
    """Each layer then adds exactly 0 to the residual stream (attention and MLP still run)."""
    import torch

    with torch.no_grad():
        for layer in layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()


def random_model(shape: dict, vocab_size: int, seed: int):
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_config(shape, vocab_size))
    return model.to(torch.bfloat16).eval()


def save_model(model, tokenizer_dir: Path, out: Path) -> None:
    from transformers import AutoTokenizer

    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(tokenizer_dir)).save_pretrained(str(out))


def build_model(name: str, models_dir: Path, out: Path) -> None:
    import torch

    spec = MODELS[name]
    kind = spec["kind"]
    if kind == "copy":
        shutil.copytree(models_dir / spec["source"], out, ignore=shutil.ignore_patterns(".recipe.json"))
        return
    if kind == "first-layer":
        from transformers import LlamaForCausalLM

        src = LlamaForCausalLM.from_pretrained(str(models_dir / spec["source"]), torch_dtype=torch.bfloat16)
        cfg = src.config.to_dict()
        cfg.update(num_hidden_layers=1)
        shape = {k: cfg[k] for k in SMALL}
        draft = random_model(shape, src.config.vocab_size, seed=0)
        state = {k: v for k, v in src.state_dict().items() if not k.startswith("model.layers.")
                 or k.startswith("model.layers.0.")}
        draft.load_state_dict(state, strict=True)  # raises on any missing or extra tensor
        save_model(draft, models_dir / spec["source"], out)
        return
    if kind == "narrow-layer":
        from transformers import LlamaForCausalLM

        src = LlamaForCausalLM.from_pretrained(str(models_dir / spec["source"]), torch_dtype=torch.bfloat16)
        shape = dict(spec["layer"], hidden_size=src.config.hidden_size)
        draft = random_model(shape, src.config.vocab_size, seed=spec["seed"])
        zero_layer_outputs(draft.model.layers)
        shared = {k: v for k, v in src.state_dict().items() if not k.startswith("model.layers.")}
        missing, unexpected = draft.load_state_dict(shared, strict=False)
        if unexpected or any(not k.startswith("model.layers.0.") for k in missing):
            raise SystemExit(f"{name}: tensors that do not fit {spec['source']}: missing {missing}, extra {unexpected}")
        save_model(draft, models_dir / spec["source"], out)
        return
    if kind == "padded":
        from transformers import LlamaForCausalLM

        src = LlamaForCausalLM.from_pretrained(str(models_dir / spec["source"]), torch_dtype=torch.bfloat16)
        depth = src.config.num_hidden_layers
        shape = {k: getattr(src.config, k) for k in SMALL}
        shape["num_hidden_layers"] = depth + spec["extra_layers"]
        draft = random_model(shape, src.config.vocab_size, seed=spec["seed"])
        zero_layer_outputs(draft.model.layers[depth:])
        missing, unexpected = draft.load_state_dict(src.state_dict(), strict=False)
        if unexpected or any(not k.startswith("model.layers.") or int(k.split(".")[2]) < depth for k in missing):
            raise SystemExit(f"{name}: tensors that do not fit {spec['source']}: missing {missing}, extra {unexpected}")
        save_model(draft, models_dir / spec["source"], out)
        return
    if kind == "mtp":
        build_mtp_model(spec, models_dir, out)
        return
    if kind == "dflash":
        build_dflash_model(spec, models_dir, out)
        return
    tok_dir = models_dir / spec["tokenizer"]
    vocab = TOKENIZERS[spec["tokenizer"]]["vocab_size"]
    model = random_model(spec["shape"], vocab, spec["seed"])
    if kind == "identity":
        zero_layer_outputs(model.model.layers)
    elif kind != "random":
        raise SystemExit(f"unknown model kind {kind!r}")
    save_model(model, tok_dir, out)


def build_mtp_model(spec: dict, models_dir: Path, out: Path) -> None:
    """A Qwen2 model plus one MTP layer in the MiMo layout (see the module docstring)."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(spec["seed"])
    vocab = TOKENIZERS[spec["tokenizer"]]["vocab_size"]
    cfg = Qwen2Config(vocab_size=vocab, max_position_embeddings=4096, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                      pad_token_id=PAD_ID, tie_word_embeddings=False, rms_norm_eps=1e-6, **spec["shape"])
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    save_model(model, models_dir / spec["tokenizer"], out)
    weights = out / "model.safetensors"
    state = load_file(str(weights))
    hidden = cfg.hidden_size
    prefix = "model.layers.0."
    mtp = {"model.mtp_layers.0." + k[len(prefix):]: v.clone() for k, v in state.items() if k.startswith(prefix)}
    for norm in ("token_layernorm", "hidden_layernorm", "final_layernorm"):
        mtp["model.mtp_layers.0.%s.weight" % norm] = torch.ones(hidden, dtype=torch.bfloat16)
    mtp["model.mtp_layers.0.input_proj.weight"] = (torch.randn(hidden, 2 * hidden) * 0.02).to(torch.bfloat16)
    state.update(mtp)
    save_file({k: v.contiguous() for k, v in state.items()}, str(weights), metadata={"format": "pt"})
    config = json.loads((out / "config.json").read_text())
    config.update(architectures=["MiMoForCausalLM"], num_nextn_predict_layers=1)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def build_dflash_model(spec: dict, models_dir: Path, out: Path) -> None:
    """A DFlash draft of ``spec["source"]`` in the layout of vLLM's qwen3_dflash.py (see the module docstring): the
    checkpoint's tensors carry no ``model.`` prefix (vLLM adds it), ``fc`` maps the target's hidden states at
    ``target_layer_ids`` (concatenated) to the draft's width, ``hidden_norm`` normalises them."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    source = models_dir / spec["source"]
    target = json.loads((source / "config.json").read_text())
    layers = list(spec["target_layer_ids"])
    if max(layers) + 1 >= target["num_hidden_layers"]:
        raise SystemExit(f"draft-dflash: target_layer_ids {layers} must leave the target's last layer "
                         f"({target['num_hidden_layers']} layers): vLLM reads the output of layer id + 1")
    torch.manual_seed(spec["seed"])
    hidden = target["hidden_size"]
    heads = target["num_attention_heads"]
    cfg = Qwen3Config(vocab_size=target["vocab_size"], hidden_size=hidden, intermediate_size=target["intermediate_size"],
                      num_hidden_layers=1, num_attention_heads=heads,
                      num_key_value_heads=target["num_key_value_heads"], head_dim=hidden // heads,
                      rms_norm_eps=1e-6, max_position_embeddings=4096, tie_word_embeddings=False,
                      bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID)
    draft = Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()
    state = {k[len("model."):]: v.contiguous() for k, v in draft.state_dict().items()
             if k.startswith("model.layers.") or k == "model.norm.weight"}
    shared = load_file(str(source / "model.safetensors"))
    state["embed_tokens.weight"] = shared["model.embed_tokens.weight"].clone()
    state["lm_head.weight"] = shared["lm_head.weight"].clone()
    state["fc.weight"] = (torch.randn(hidden, hidden * len(layers)) * 0.02).to(torch.bfloat16)
    state["hidden_norm.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    out.mkdir(parents=True)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = cfg.to_dict()
    config.pop("torch_dtype", None)
    config.update(architectures=["DFlashDraftModel"], model_type="qwen3", dtype="bfloat16",
                  dflash_config={"mask_token_id": spec["mask_token_id"], "target_layer_ids": layers})
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(str(out))


def describe(path: Path) -> dict:
    cfg = json.loads((path / "config.json").read_text())
    weights = path / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    from safetensors import safe_open

    with safe_open(str(weights), "pt") as f:
        params = sum(_numel(f.get_slice(k).get_shape()) for k in f.keys())
    return {"path": str(path), "vocab_size": cfg["vocab_size"], "layers": cfg["num_hidden_layers"],
            "hidden_size": cfg["hidden_size"], "params": params,
            "bytes": weights.stat().st_size, "sha256": digest}


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def greedy(model_dir: Path, prompt: str, n: int = 16) -> list:
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = LlamaForCausalLM.from_pretrained(str(model_dir), dtype=torch.bfloat16).eval()
    ids = tok(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return out[0, ids.shape[1]:].tolist()


def verify(models_dir: Path) -> None:
    """The pairs must behave as documented: every exact draft (whether it pays or is too slow to) gives
    its target's greedy output, the random draft does not, and the bad-vocabulary draft differs in size."""
    prompt = "User: How do I check which power mode my Jetson is running?"
    for target, draft, same in (("target", "draft-perfect", True), ("target-deep", "draft-deep-1layer", True),
                                ("target-deep", "draft-deep-tiny", True), ("target", "draft-heavy", True),
                                ("target", "draft-random", False)):
        a, b = greedy(models_dir / target, prompt), greedy(models_dir / draft, prompt)
        if (a == b) != same:
            raise SystemExit(f"{target} vs {draft}: greedy outputs {'differ' if same else 'agree'} "
                             f"({a} / {b}); the pair would not do its job in the tests")
        print(f"[models] check: {target} and {draft} greedy outputs {'agree' if same else 'differ'}")
    for target, draft in (("target", "draft-badvocab"),):
        va = json.loads((models_dir / target / "config.json").read_text())["vocab_size"]
        vb = json.loads((models_dir / draft / "config.json").read_text())["vocab_size"]
        if va == vb:
            raise SystemExit(f"{draft} has the same vocabulary size as {target} ({va})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--force", action="store_true", help="regenerate even when up to date")
    parser.add_argument("--verify", action="store_true", help="check the pairs even when nothing changed")
    parser.add_argument("--only", nargs="*", choices=sorted(MODELS), help="only these models (and what they need)")
    args = parser.parse_args(argv)

    models_dir = testbed_dir() / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    wanted = list(MODELS) if not args.only else args.only
    order = []

    def need(name):
        if name in order:
            return
        spec = MODELS.get(name, {})
        for dep in (spec.get("source"), spec.get("tokenizer")):
            if dep:
                need(dep)
        order.append(name)

    if not args.only:
        for tok in TOKENIZERS:
            need(tok)
    for name in wanted:
        need(name)

    t0 = time.time()
    generated = []
    for name in order:
        path = models_dir / name
        recipe = full_recipe(name)
        if not args.force and up_to_date(path, recipe):
            print(f"[models] {name}: up to date")
            continue
        t1 = time.time()
        tmp = models_dir / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        if name in TOKENIZERS:
            build_tokenizer(tmp, TOKENIZERS[name]["vocab_size"])
        else:
            build_model(name, models_dir, tmp)
        mark(tmp, recipe)
        shutil.rmtree(path, ignore_errors=True)
        for f in tmp.rglob("*"):
            f.chmod(0o755 if f.is_dir() else 0o644)  # readable by the unprivileged users of later tests
        tmp.rename(path)
        generated.append(name)
        print(f"[models] {name}: generated in {time.time() - t1:.1f} s")

    if (generated or args.verify) and not args.only:
        verify(models_dir)

    manifest = {"recipe_version": RECIPE_VERSION, "models": {}}
    for name in MODELS:
        if (models_dir / name / "config.json").is_file():
            manifest["models"][name] = describe(models_dir / name)
    (models_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    for name, info in manifest["models"].items():
        print(f"[models] {name:18s} layers={info['layers']:2d} hidden={info['hidden_size']:4d} "
              f"vocab={info['vocab_size']} params={info['params'] / 1e6:.2f} M "
              f"size={info['bytes'] / 2**20:.1f} MiB sha256={info['sha256'][:12]}")
    print(f"[models] done in {time.time() - t0:.1f} s: {models_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
