"""Checks the engine's dump of a CLIP folder in the transformers layout (config.json model_type
"clip", model.safetensors / sharded / pytorch_model.bin) against clip_reference.py.

    /usr/bin/python3 tests/published/clip_compare.py DUMP [--tolerance f32|bf16|i8]
                     [--self-check-negative [KIND[,KIND]]] [--reference-dtype f64|f32] [--threads N]

DUMP (the engine's): meta.json {"folder", "compute", "texts", "images"}, text_ids.json (the ids
the engine fed, without padding), text_embeddings.npy [N, E] and image_embeddings.npy [M, E]
(L2-normalised), text_states.npy / image_states.npy with *_offsets.npy [N + 1].

The reference reads the folder with its own readers, runs the texts from text_ids.json (padded
to the longest with the tokenizer's pad id and masked, as transformers runs a padded batch; the
causal mask makes the padding irrelevant to the rows compared) and the image FILES through
CLIPImageProcessor's preprocessing (tests/reference/published_processors.py), and compares:
- embeddings: get_text_features / get_image_features, L2-normalised, per row;
- text states: every row after final_layer_norm (row k of text i against the reference's row k);
- image states: post_layernorm applied to every row (class row first, then the patches).
Bounds per row: cosine >= 0.99999 and max|a - b| / max|b| <= 1e-4 (f32); 0.999 and 1e-2 (bf16);
cosine >= 0.99 (i8). The worst row and the first values of both are printed on a failure.
--self-check-negative runs the reference with a deliberate mistake (clip_reference.PERTURBATIONS:
activation, final-norm, pre-norm, causal, pooling, last-layer) and requires that each comparison
fails. Exit status 0 when everything holds.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_common as C  # noqa: E402
import clip_reference  # noqa: E402

if __name__ == "__main__":
    sys.exit(C.run_compare(clip_reference, sys.argv[1:], __doc__))
