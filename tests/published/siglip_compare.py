"""Checks the engine's dump of a SigLIP folder in the transformers layout (config.json model_type
"siglip") against siglip_reference.py.

    /usr/bin/python3 tests/published/siglip_compare.py DUMP [--tolerance f32|bf16|i8]
                     [--self-check-negative [KIND[,KIND]]] [--reference-dtype f64|f32] [--threads N]

DUMP: the engine's (format in clip_compare.py); for SigLIP text_ids.json holds the ids WITH the
padding to 64 (SigLIP attends to its padding: no attention mask). The reference runs each text's
ids as given without a mask, pooled at the last row, and the image FILES through
SiglipImageProcessor's preprocessing (tests/reference/published_processors.py), and compares:
- embeddings: get_text_features (head of the last row) / get_image_features (the MAP head's
  output), L2-normalised, per row;
- text states: every row after final_layer_norm; image states: every patch row after
  post_layernorm (no class row).
Bounds as clip_compare.py. --self-check-negative: siglip_reference.PERTURBATIONS (activation:
GELU's tanh form replaced by the exact one, final-norm, head, pooling, padding-mask: the padding
masked out as BERT-style models would, last-layer).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402
import siglip_reference  # noqa: E402

if __name__ == "__main__":
    sys.exit(C.run_compare(siglip_reference, sys.argv[1:], __doc__))
