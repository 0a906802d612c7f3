"""Writes the published folders test_model_tokens reads, in one process (one torch import instead
of two): a tiny SigLIP folder (no class token, texts padded to their positions) and a tiny UForm 3
"large" folder (a class token and 4 register tokens), by the families' own fixture writers.

    /usr/bin/python3 tests/published/tokens_write.py OUT_FOLDER

Writes OUT_FOLDER/siglip and OUT_FOLDER/uform3_large.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import siglip_write  # noqa: E402
import uform3_write  # noqa: E402


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[0]
    siglip_write.main(["siglip", "tiny", os.path.join(out, "siglip")])
    return uform3_write.main(["large", "tiny", os.path.join(out, "uform3_large"), "--format", "safetensors"]) or 0


if __name__ == "__main__":
    sys.exit(main())
