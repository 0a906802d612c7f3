"""`uform serve`'s usage on published folders whose media counts no formula over the description
gives (tools/serve/model.c asks uform_model_tokens): a SigLIP folder (no class token; every text
padded to its max_position_embeddings) and a UForm 3 "large" folder (a class token and
num_reg_tokens register rows). The expected counts are computed here from each folder's
config.json by the published architecture, not asked of the engine: SigLIP (S/p)² per picture and
max_position_embeddings per text; UForm 3 (S/p)² + 1 + num_reg_tokens per picture and
max_position_embeddings for a text longer than that (its processor slices there).

Usage: test_serve_published_usage.py UFORM SIGLIP_FOLDER UFORM3_FOLDER WORK"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server, Tally, data_uri, pictures  # noqa: E402

LONG_TEXT = "a photo of a cat on the mat, " * 40


def config(folder):
    with open(os.path.join(folder, "config.json")) as file:
        return json.load(file)


def check_folder(t, uform, folder, picture, image_tokens, text, text_tokens):
    server = Server(uform, folder)
    try:
        inputs = [{"image": data_uri(picture, "image/png")}, text, {"image": data_uri(picture, "image/png")}]
        status, answer, _ = server.post("/v1/embeddings", {"input": inputs})
        t.check(status == 200, f"{folder}: embeddings answered {status}: {answer if status != 200 else ''}")
        if status == 200:
            tokens = 2 * image_tokens + text_tokens
            t.check(len(answer["data"]) == 3, f"{folder}: {len(answer['data'])} rows for 3 inputs")
            t.check(answer["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens},
                    f"{folder}: usage {answer['usage']}, the architecture runs {tokens}")
    finally:
        code = server.stop()
        t.check(code == 0, f"{folder}: SIGTERM: exit status {code}")


def main(argv):
    uform, siglip, uform3, work = argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t = Tally()
    picture = [p for p in pictures(os.path.join(work, "pictures"), 2, seed=5) if p.endswith(".png")][0]
    vision = config(siglip)["vision_config"]
    side = vision.get("image_size", 224) // vision.get("patch_size", 16)
    check_folder(t, uform, siglip, picture, side * side, "a photo of a cat",
                 config(siglip)["text_config"].get("max_position_embeddings", 64))
    image, text = config(uform3)["image_encoder"], config(uform3)["text_encoder"]
    side = image["image_size"] // image["patch_size"]
    check_folder(t, uform, uform3, picture, side * side + 1 + image.get("num_reg_tokens", 0), LONG_TEXT,
                 text["max_position_embeddings"])
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
