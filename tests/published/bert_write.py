"""Writes random-weight BERT-family model folders in the layouts published on the Hugging Face hub.

    /usr/bin/python3 tests/published/bert_write.py VARIANT SIZE OUT_FOLDER [--seed N]
        [--dtype f32|f16|bf16] [--format safetensors|sharded|bin|bin-legacy]
        [--pooling MODE[+MODE...]] [--hidden-act NAME] [--no-normalize] [--position-ids | --no-position-ids]
        [--tokenizer auto|none|FOLDER]

VARIANT (the folder it imitates; SIZE base gives those dimensions, tiny 2 layers of width 64, 2 heads):
  minilm               sentence-transformers/all-MiniLM-L6-v2: BertModel names, mean pooling, Normalize,
                       max_seq_length 256, the old embeddings.position_ids buffer in the weights
  bert-cls             BAAI/bge-small-en-v1.5: CLS pooling, Normalize (12 x 384)
  bert-base            BAAI/bge-base-en-v1.5, the issue's "BERT-base" folder: CLS pooling (12 x 768)
  dense                a sentence-transformers folder with a Dense module (2_Dense: Tanh, bias) before
                       Normalize, max pooling by default (--pooling mean_sqrt_len_tokens for the other)
  roberta              sentence-transformers/all-distilroberta-v1: RobertaModel (positions from
                       padding_idx + 1, one token-type row, eps 1e-5), byte-level BPE, mean pooling
  xlm-roberta          intfloat/multilingual-e5-base: XLMRobertaModel, SentencePiece Unigram tokenizer
  multilingual-minilm  paraphrase-multilingual-MiniLM-L12-v2: model_type "bert" with an XLM-R tokenizer
                       and an embedding table larger than the tokenizer's vocabulary
  plain                bert-base-uncased: no sentence-transformers files, BertForMaskedLM names
                       ("bert." prefix, legacy LayerNorm.gamma / .beta, the cls.* heads)
(e5-small-v2 is left out: it is minilm's structure with 12 layers.)

FORMAT: safetensors (model.safetensors), sharded (model-00001-of-00002.safetensors + ...-00002 +
model.safetensors.index.json), bin (pytorch_model.bin by torch.save, zip format; a tied decoder
shares the word embeddings' storage), bin-legacy (the same in torch's pre-1.6 non-zip format, as
bert-base-uncased's file is). A Dense module's weights go to 2_Dense/model.safetensors, or
2_Dense/pytorch_model.bin for the bin formats.

Tokenizer files come from tests/text/make_tokenizers.py (bert-uncased, bert-cased, roberta) and
tests/text/sp_make_models.py (xlm-roberta); the vocabulary size and the special tokens' ids are read
from the tokenizer.json they write. --tokenizer FOLDER copies the files of an earlier generator run
instead; --tokenizer none writes no tokenizer and takes a vocabulary of 1,000 (tiny) or the
published size (base), for tests that feed ids directly.

Weights: matrices normal(0, 0.5 / sqrt(fan_in)) (0.025 at width 384, near the 0.02 of BERT's
initialiser), query and key normal(0, sqrt(1.5 / d)) so that attention is peaked (scores of standard
deviation ~1.5: a uniform attention would hide errors in the scaling and in the mask), word
embeddings normal(0, 0.5), position and token-type rows normal(0, 0.2), LayerNorm weights 1 + N(0, 0.1)
and biases N(0, 0.05), so a missing or swapped norm is caught.
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from uform_reference import write_safetensors  # noqa: E402  (a plain struct + json writer)

TEXT_TESTS = os.path.join(HERE, "..", "text")

# layers, hidden, heads, intermediate for SIZE base; tiny is TINY for every variant. Heads of 32
# columns as MiniLM's and bge-small's: √32 is not a power of two, so scaling the queries and
# scaling the scores round differently and the two formulations are not trivially equal.
TINY = (2, 64, 2, 256)

BERT_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
               "mask_token": "[MASK]"}
ROBERTA_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
                  "pad_token": "<pad>", "cls_token": "<s>", "mask_token": "<mask>"}

VARIANTS = {
    "minilm": dict(model_type="bert", base=(6, 384, 12, 1536), max_positions=512, tokenizer=("make_tokenizers", "bert-uncased"),
                   pooling="mean", normalize=True, max_seq_length=256, position_ids=True, published_vocabulary=30522,
                   name="nreimers/MiniLM-L6-H384-uncased", transformers="4.8.2", sentence_transformers="2.0.0"),
    "bert-cls": dict(model_type="bert", base=(12, 384, 12, 1536), max_positions=512, tokenizer=("make_tokenizers", "bert-uncased"),
                     pooling="cls", normalize=True, max_seq_length=512, position_ids=False, published_vocabulary=30522,
                     name="BAAI/bge-small-en-v1.5", transformers="4.30.0", sentence_transformers="2.2.2"),
    "bert-base": dict(model_type="bert", base=(12, 768, 12, 3072), max_positions=512, tokenizer=("make_tokenizers", "bert-uncased"),
                      pooling="cls", normalize=True, max_seq_length=512, position_ids=False, published_vocabulary=30522,
                      name="BAAI/bge-base-en-v1.5", transformers="4.30.0", sentence_transformers="2.2.2"),
    "dense": dict(model_type="bert", base=(12, 768, 12, 3072), max_positions=512, tokenizer=("make_tokenizers", "bert-cased"),
                  pooling="max", normalize=True, max_seq_length=128, position_ids=True, published_vocabulary=28996,
                  dense=(512, 48), name="bert-base-cased", transformers="4.7.0", sentence_transformers="2.0.0"),
    "roberta": dict(model_type="roberta", base=(6, 768, 12, 3072), max_positions=514, tokenizer=("make_tokenizers", "roberta"),
                    pooling="mean", normalize=True, max_seq_length=512, position_ids=True, published_vocabulary=50265,
                    name="distilroberta-base", transformers="4.8.2", sentence_transformers="2.0.0"),
    "xlm-roberta": dict(model_type="xlm-roberta", base=(12, 768, 12, 3072), max_positions=514,
                        tokenizer=("sp_make_models", "xlm-roberta"), pooling="mean", normalize=True, max_seq_length=512,
                        position_ids=False, published_vocabulary=250002, name="intfloat/multilingual-e5-base",
                        transformers="4.29.0", sentence_transformers="2.2.2"),
    "multilingual-minilm": dict(model_type="bert", base=(12, 384, 12, 1536), max_positions=512,
                                tokenizer=("sp_make_models", "xlm-roberta"), pooling="mean", normalize=False,
                                max_seq_length=128, position_ids=True, published_vocabulary=250037, extra_rows=35,
                                name="microsoft/Multilingual-MiniLM-L12-H384", transformers="4.7.0",
                                sentence_transformers="2.0.0"),
    "plain": dict(model_type="bert", base=(12, 768, 12, 3072), max_positions=512, tokenizer=("make_tokenizers", "bert-uncased"),
                  pooling=None, normalize=False, max_seq_length=None, position_ids=True, published_vocabulary=30522,
                  name=None, transformers="4.6.0.dev0", sentence_transformers=None),
}

DTYPES = {"f32": ("F32", torch.float32, "float32"), "f16": ("F16", torch.float16, "float16"),
          "bf16": ("BF16", torch.bfloat16, "bfloat16")}


# ---------------------------------------------------------------------------------------------
# Tokenizer files.

def _tokenizer_vocabulary(path):
    """(size, {token: id}) of a tokenizer.json: the model's vocabulary (an object for WordPiece and
    BPE, a [[piece, score], ...] list for Unigram) and the added tokens; size = largest id + 1."""
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    vocabulary = document.get("model", {}).get("vocab")
    if isinstance(vocabulary, dict):
        ids = dict(vocabulary)
    elif isinstance(vocabulary, list):
        ids = {entry[0]: index for index, entry in enumerate(vocabulary)}
    else:
        raise ValueError(f"{path}: model.vocab is neither an object nor a list")
    for token in document.get("added_tokens", []):
        ids[token["content"]] = token["id"]
    return max(ids.values()) + 1, ids


def write_tokenizer(spec, out, seed):
    """Runs the colleague's generator into `out`; returns (vocabulary size, {token: id})."""
    script, kind = spec
    path = os.path.join(TEXT_TESTS, script + ".py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist (pass --tokenizer none to write no tokenizer)")
    subprocess.run([sys.executable, path, kind, out, "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return _tokenizer_vocabulary(os.path.join(out, "tokenizer.json"))


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def _tokenizer_configs(out, variant, specials, max_length):
    """tokenizer_config.json and special_tokens_map.json as the published folders have them, where
    the generator did not write them."""
    names = BERT_TOKENS if variant["tokenizer"][1].startswith("bert") else ROBERTA_TOKENS
    if not os.path.exists(os.path.join(out, "special_tokens_map.json")):
        write_json(os.path.join(out, "special_tokens_map.json"), dict(names))
    if not os.path.exists(os.path.join(out, "tokenizer_config.json")):
        config = dict(names)
        if names is BERT_TOKENS:
            config.update(do_lower_case=variant["tokenizer"][1] == "bert-uncased", tokenize_chinese_chars=True,
                          strip_accents=None, tokenizer_class="BertTokenizer")
        elif variant["tokenizer"][1] == "roberta":
            config.update(add_prefix_space=False, errors="replace", trim_offsets=True, tokenizer_class="RobertaTokenizer")
        else:
            config.update(tokenizer_class="XLMRobertaTokenizer")
        config["model_max_length"] = max_length
        write_json(os.path.join(out, "tokenizer_config.json"), config)
    missing = [token for token in names.values() if token not in specials]
    if missing:
        raise ValueError(f"the tokenizer has no ids for {missing}")


# ---------------------------------------------------------------------------------------------
# Weights.

def _normal(generator, shape, std):
    """float32 draws (half the memory and time of float64 ones at base size)."""
    return np.float32(std) * generator.standard_normal(shape, dtype=np.float32)


def _norm(generator, d):
    return 1.0 + _normal(generator, d, 0.1), _normal(generator, d, 0.05)


def _linear(generator, rows, columns, std=None):
    std = 0.5 / np.sqrt(columns) if std is None else std
    return _normal(generator, (rows, columns), std), _normal(generator, rows, 0.02)


def encoder_weights(generator, layers, d, inter, vocabulary, positions, token_types):
    """BertModel's state dict (names without a prefix) as float32 numpy arrays, in the order
    transformers' modules register them."""
    w = collections.OrderedDict()
    w["embeddings.word_embeddings.weight"] = _normal(generator, (vocabulary, d), 0.5)
    w["embeddings.position_embeddings.weight"] = _normal(generator, (positions, d), 0.2)
    w["embeddings.token_type_embeddings.weight"] = _normal(generator, (token_types, d), 0.2)
    w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"] = _norm(generator, d)
    peaked = np.sqrt(1.5 / d)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        w[p + "attention.self.query.weight"], w[p + "attention.self.query.bias"] = _linear(generator, d, d, peaked)
        w[p + "attention.self.key.weight"], w[p + "attention.self.key.bias"] = _linear(generator, d, d, peaked)
        w[p + "attention.self.value.weight"], w[p + "attention.self.value.bias"] = _linear(generator, d, d)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = _linear(generator, d, d)
        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"] = _norm(generator, d)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = _linear(generator, inter, d)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = _linear(generator, d, inter)
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = _norm(generator, d)
    w["pooler.dense.weight"], w["pooler.dense.bias"] = _linear(generator, d, d)
    return w


def masked_lm_weights(generator, encoder, d, vocabulary):
    """BertForMaskedLM's layout as bert-base-uncased ships it: "bert." before the encoder's names,
    LayerNorm.gamma / .beta for the norms, and the pre-training heads (cls.predictions with its
    decoder tied to the word embeddings, cls.seq_relationship)."""
    w = collections.OrderedDict()
    for name, array in encoder.items():
        name = "bert." + name
        if ".LayerNorm." in name:
            name = name.replace(".LayerNorm.weight", ".LayerNorm.gamma").replace(".LayerNorm.bias", ".LayerNorm.beta")
        w[name] = array
    w["cls.predictions.bias"] = _normal(generator, vocabulary, 0.02)
    w["cls.predictions.transform.dense.weight"], w["cls.predictions.transform.dense.bias"] = _linear(generator, d, d)
    norm = _norm(generator, d)
    w["cls.predictions.transform.LayerNorm.gamma"], w["cls.predictions.transform.LayerNorm.beta"] = norm
    w["cls.predictions.decoder.weight"] = encoder["embeddings.word_embeddings.weight"]  # tied
    w["cls.seq_relationship.weight"], w["cls.seq_relationship.bias"] = _linear(generator, 2, d)
    return w


def _stored(array, dtype):
    """The tensor as the file stores it (int64 buffers stay int64)."""
    if array.dtype.kind in "iu":
        return torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64))
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)).to(DTYPES[dtype][1])


def _safetensors_entries(tensors, dtype):
    """{name: (safetensors dtype, array)} for write_safetensors, which rounds float32 to F16 and BF16
    to nearest even (as torch's .to(float16 / bfloat16) does)."""
    entries = collections.OrderedDict()
    for name, array in tensors.items():
        if array.dtype.kind in "iu":
            entries[name] = ("I64", array.astype(np.int64))
        else:
            entries[name] = (DTYPES[dtype][0], array.astype(np.float32))
    return entries


def write_weights(folder, tensors, dtype, layout, tied=()):
    """Writes `tensors` ({name: numpy}) in `layout`; `tied` names tensors that are the same array as
    another (a torch.save keeps one storage for both; safetensors files leave the copy out, as
    transformers' save_pretrained does). Returns the file names written."""
    if layout in ("bin", "bin-legacy"):
        state, by_array = collections.OrderedDict(), {}
        for name, array in tensors.items():
            key = id(array)
            state[name] = by_array[key] if key in by_array else _stored(array, dtype)
            by_array[key] = state[name]
        torch.save(state, os.path.join(folder, "pytorch_model.bin"),
                   _use_new_zipfile_serialization=layout == "bin")
        return ["pytorch_model.bin"]
    kept = collections.OrderedDict((n, a) for n, a in tensors.items() if n not in tied)
    metadata = {"format": "pt"}
    if layout == "safetensors":
        write_safetensors(os.path.join(folder, "model.safetensors"), _safetensors_entries(kept, dtype), metadata)
        return ["model.safetensors"]
    if layout != "sharded":
        raise ValueError(f"format {layout!r}")
    # Two shards split near half of the bytes, in the tensors' order, as save_pretrained's
    # max_shard_size splitting does; the index's total_size is the sum of the tensors' bytes.
    entries = _safetensors_entries(kept, dtype)
    sizes = {name: array.size * (8 if kind == "I64" else 4 if kind == "F32" else 2) for name, (kind, array) in entries.items()}
    total, running, first = sum(sizes.values()), 0, collections.OrderedDict()
    for name in entries:
        if running >= total / 2:
            break
        first[name] = entries[name]
        running += sizes[name]
    second = collections.OrderedDict((n, e) for n, e in entries.items() if n not in first)
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {}
    for file, part in zip(files, (first, second)):
        write_safetensors(os.path.join(folder, file), part, metadata)
        weight_map.update({name: file for name in part})
    write_json(os.path.join(folder, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))})
    return files + ["model.safetensors.index.json"]


# ---------------------------------------------------------------------------------------------
# The folder.

def model_config(variant, layers, d, heads, inter, vocabulary, specials, dtype, hidden_act):
    """config.json with the keys and defaults the published files carry."""
    model_type = variant["model_type"]
    roberta = model_type != "bert"
    architectures = {"bert": "BertModel", "roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel"}[model_type]
    if variant is VARIANTS["plain"]:
        architectures = "BertForMaskedLM"
    config = collections.OrderedDict()
    if variant.get("name"):
        config["_name_or_path"] = variant["name"]
    config["architectures"] = [architectures]
    config["attention_probs_dropout_prob"] = 0.1
    if roberta:
        config["bos_token_id"] = specials.get("<s>", 0)
        config["eos_token_id"] = specials.get("</s>", 2)
    config["gradient_checkpointing"] = False
    config["hidden_act"] = hidden_act
    config["hidden_dropout_prob"] = 0.1
    config["hidden_size"] = d
    config["initializer_range"] = 0.02
    config["intermediate_size"] = inter
    config["layer_norm_eps"] = 1e-5 if roberta else 1e-12
    config["max_position_embeddings"] = variant["max_positions"]
    config["model_type"] = model_type
    config["num_attention_heads"] = heads
    config["num_hidden_layers"] = layers
    # BertEmbeddings ignores pad_token_id in the forward pass; RobertaEmbeddings takes its positions
    # from it, so it must be the tokenizer's <pad>.
    config["pad_token_id"] = specials.get("<pad>", 1) if roberta else 0
    config["position_embedding_type"] = "absolute"
    if variant.get("tokenizer", ("", ""))[1] == "xlm-roberta" and not roberta:
        config["tokenizer_class"] = "XLMRobertaTokenizer"
    config["torch_dtype"] = DTYPES[dtype][2]
    config["transformers_version"] = variant["transformers"]
    config["type_vocab_size"] = 1 if roberta else 2
    config["use_cache"] = True
    config["vocab_size"] = vocabulary
    return config


def pooling_config(d, modes):
    config = collections.OrderedDict(word_embedding_dimension=d)
    for mode, key in (("cls", "pooling_mode_cls_token"), ("mean", "pooling_mode_mean_tokens"),
                      ("max", "pooling_mode_max_tokens"), ("mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens"),
                      ("weightedmean", "pooling_mode_weightedmean_tokens"), ("lasttoken", "pooling_mode_lasttoken")):
        config[key] = mode in modes
    return config


def write_folder(variant_name, size, out, seed=0, dtype="f32", layout="safetensors", pooling=None,
                 hidden_act="gelu", normalize=None, position_ids=None, tokenizer="auto"):
    """Writes the folder; returns a summary dict (dimensions, vocabulary, files)."""
    variant = VARIANTS[variant_name]
    layers, d, heads, inter = variant["base"] if size == "base" else TINY
    os.makedirs(out, exist_ok=True)
    generator = np.random.default_rng(seed)
    sentence_transformers = variant["sentence_transformers"] is not None
    max_length = variant["max_positions"] - (2 if variant["model_type"] != "bert" else 0)
    if tokenizer == "auto":
        vocabulary, specials = write_tokenizer(variant["tokenizer"], out, seed)
        _tokenizer_configs(out, variant, specials, max_length)
    elif tokenizer != "none":
        # A folder the generator wrote before (the self-test makes each kind once): its files copied.
        for name in sorted(os.listdir(tokenizer)):
            if os.path.isfile(os.path.join(tokenizer, name)):
                shutil.copyfile(os.path.join(tokenizer, name), os.path.join(out, name))
        vocabulary, specials = _tokenizer_vocabulary(os.path.join(out, "tokenizer.json"))
        _tokenizer_configs(out, variant, specials, max_length)
    else:
        vocabulary = 1000 if size == "tiny" else variant["published_vocabulary"] - variant.get("extra_rows", 0)
        specials = {}
    # Multilingual-MiniLM's embedding table has 35 rows more than its XLM-R tokenizer's 250,002 ids.
    vocabulary += variant.get("extra_rows", 0)
    token_types = 1 if variant["model_type"] != "bert" else 2
    weights = encoder_weights(generator, layers, d, inter, vocabulary, variant["max_positions"], token_types)
    if position_ids if position_ids is not None else variant["position_ids"]:
        # The buffer older transformers versions saved (persistent until 4.31): [1, max_positions]
        # int64 0, 1, ...; a loader must ignore it.
        weights["embeddings.position_ids"] = np.arange(variant["max_positions"], dtype=np.int64)[None, :]
        weights.move_to_end("embeddings.position_ids", last=False)
    tied = ()
    if variant_name == "plain":
        weights = masked_lm_weights(generator, weights, d, vocabulary)
        tied = ("cls.predictions.decoder.weight",)
    config = model_config(variant, layers, d, heads, inter, vocabulary, specials, dtype, hidden_act)
    write_json(os.path.join(out, "config.json"), config)
    files = write_weights(out, weights, dtype, layout, tied)
    summary = {"variant": variant_name, "size": size, "layers": layers, "hidden": d, "heads": heads,
               "intermediate": inter, "vocabulary": vocabulary, "files": files}
    if not sentence_transformers:
        return summary
    modes = (pooling or variant["pooling"]).split("+")
    normalize = variant["normalize"] if normalize is None else normalize
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    write_json(os.path.join(out, "sentence_bert_config.json"),
               {"max_seq_length": variant["max_seq_length"], "do_lower_case": False})
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    write_json(os.path.join(out, "1_Pooling", "config.json"), pooling_config(d, modes))
    if "dense" in variant:
        width = len(modes) * d
        out_features = variant["dense"][0 if size == "base" else 1]
        dense_folder = os.path.join(out, "2_Dense")
        os.makedirs(dense_folder, exist_ok=True)
        write_json(os.path.join(dense_folder, "config.json"),
                   {"in_features": width, "out_features": out_features, "bias": True,
                    "activation_function": "torch.nn.modules.activation.Tanh"})
        # 1 / sqrt(in) keeps the linear's outputs near unit size, where tanh is neither flat nor linear.
        dense = collections.OrderedDict()
        dense["linear.weight"] = _normal(generator, (out_features, width), 1.0 / np.sqrt(width))
        dense["linear.bias"] = _normal(generator, out_features, 0.1)
        write_weights(dense_folder, dense, dtype, "bin" if layout.startswith("bin") else "safetensors")
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
        summary["dense"] = out_features
    if normalize:
        # Normalize has no files: the hub folder has no "N_Normalize" directory at all (git keeps
        # no empty directories), only the modules.json entry.
        modules.append({"idx": len(modules), "name": str(len(modules)), "path": f"{len(modules)}_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    write_json(os.path.join(out, "modules.json"), modules)
    write_json(os.path.join(out, "config_sentence_transformers.json"),
               {"__version__": {"sentence_transformers": variant["sentence_transformers"],
                                "transformers": variant["transformers"], "pytorch": "1.13.0"}})
    summary["pooling"] = modes
    return summary


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("size", choices=("tiny", "base"))
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    parser.add_argument("--format", dest="layout", choices=("safetensors", "sharded", "bin", "bin-legacy"),
                        default="safetensors")
    parser.add_argument("--pooling", help="sentence-transformers pooling modes joined by '+' "
                        "(cls, max, mean, mean_sqrt_len_tokens, weightedmean, lasttoken)")
    parser.add_argument("--hidden-act", default="gelu", help="config.json hidden_act (gelu, gelu_new, relu, ...)")
    parser.add_argument("--no-normalize", dest="normalize", action="store_const", const=False, default=None)
    parser.add_argument("--position-ids", dest="position_ids", action="store_const", const=True, default=None)
    parser.add_argument("--no-position-ids", dest="position_ids", action="store_const", const=False)
    parser.add_argument("--tokenizer", default="auto", help="auto (run the generator), none, or a folder "
                        "whose files (tokenizer.json, ...) are copied")
    args = parser.parse_args(argv)
    if args.pooling:
        unknown = set(args.pooling.split("+")) - {"cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"}
        if unknown:
            parser.error(f"unknown pooling modes {sorted(unknown)}")
    summary = write_folder(args.variant, args.size, args.out, args.seed, args.dtype, args.layout, args.pooling,
                           args.hidden_act, args.normalize, args.position_ids, args.tokenizer)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
