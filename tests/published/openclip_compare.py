"""Checks the engine's dump of an OpenCLIP folder (open_clip_config.json with
open_clip_model.safetensors or open_clip_pytorch_model.bin) against openclip_reference.py.

    /usr/bin/python3 tests/published/openclip_compare.py DUMP [--tolerance f32|bf16|i8]
                     [--self-check-negative [KIND[,KIND]]] [--reference-dtype f64|f32] [--threads N]

DUMP: the engine's (format in clip_compare.py). The reference reads the OpenCLIP files with its
own readers, pads each text's ids with 0 to context_length as OpenCLIP's tokenizer does, runs the
image FILES through OpenCLIP's image_transform (Resize + CenterCrop, bicubic, via
tests/reference/published_processors.py) and compares:
- embeddings: encode_text / encode_image, L2-normalised, per row;
- text states: every row after ln_final; image states: every row after ln_post (class row first).
Bounds as clip_compare.py. --self-check-negative: openclip_reference.PERTURBATIONS (activation,
final-norm, pre-norm, causal, pooling, last-layer, layer-scale where the folder has LayerScale).
A folder holding both layouts (laion's) is checked by clip_compare.py or by this script,
whichever layout the engine loaded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402
import openclip_reference  # noqa: E402

if __name__ == "__main__":
    sys.exit(C.run_compare(openclip_reference, sys.argv[1:], __doc__))
