#!/usr/bin/python3
"""Writes the inputs of the published-checkpoint benchmark (bench/bench_published.c) into one folder.

    /usr/bin/python3 bench/published_data.py OUT [--writers DIR] [--images N] [--texts N] [--seed S]

OUT receives:
  folders/clip-vit-b32   `clip_write.py clip base`: openai/clip-vit-base-patch32's layout, ViT-B/32
  folders/minilm-l6      `bert_write.py minilm base`: sentence-transformers/all-MiniLM-L6-v2's layout
  folders/bert-base      `bert_write.py bert-base base`: BAAI/bge-base-en-v1.5's layout (BERT-base, CLS)
  images/NN.jpg          N JPEG files of 640 x 480 (quality 90, 4:2:0), smooth scenes with edges and
                         sensor-like noise, so that the decoder works as hard as on a photograph
                         (a noise-only picture would be far larger, a flat one far smaller)
  texts.txt              N English sentences of 10 to 40 words, one a line
  inputs.json            what was written (sizes, word counts), for the report
Random weights and random inputs, all from fixed seeds: the same OUT is written every time. A folder
already complete (its config.json present) is kept, so a second run costs seconds.

--writers: the folder holding clip_write.py and bert_write.py (default: tests/published beside this
file's repository root).
"""

import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

HERE = os.path.dirname(os.path.abspath(__file__))

FOLDERS = {
    "clip-vit-b32": ("clip_write.py", ["clip", "base"]),
    "minilm-l6": ("bert_write.py", ["minilm", "base"]),
    "bert-base": ("bert_write.py", ["bert-base", "base"]),
}

# Sentence parts: a subject, what it does, and up to three further clauses. Captions, reviews and
# search queries are what these encoders embed; the parts mix their styles.
SUBJECTS = [
    "A young woman", "The old fisherman", "Two small children", "A brown dog with a red collar",
    "The city council", "Our research team", "A group of tourists from the north", "The new science teacher",
    "My grandfather", "A tall man in a blue coat", "The little girl next door", "Three students",
    "The woman who runs the bakery", "A black and white cat", "The football team", "Several farmers",
    "A famous singer", "The children in the back row", "An elderly couple", "The ship's captain",
]
PREDICATES = [
    "walks along the river every morning", "is reading a long book about the history of the city",
    "opened a small shop near the train station", "painted the front door a bright shade of green",
    "carried a heavy box up the stairs", "answered every question on the test",
    "planted four new trees in the park", "listened to music on the way home",
    "found an old map in the attic", "built a wooden boat in the garden",
    "watched the horses run across the field", "wrote a letter to a friend in another country",
    "learned to play the piano last year", "cooked dinner for the whole family",
    "took a picture of the mountain at sunrise", "sold fresh fish at the market",
    "forgot the keys on the kitchen table", "decided to study music at a school in the capital",
    "is waiting for the bus in the rain", "climbed to the top of the hill to see the sea",
]
CLAUSES = [
    "while the sun sets behind the mountains", "because the roads were closed after the storm",
    "before the first snow of the winter", "and everyone in the room began to laugh",
    "during the first week of the school year", "although nobody believed it was possible",
    "so that the neighbours could hear the music", "after a long day of hard work",
    "with a cup of hot coffee in one hand", "as the lights of the town came on one by one",
    "without saying a single word to anyone", "even though the water was very cold",
    "next to a field full of yellow flowers", "on a quiet street near the old church",
    "under a clear blue sky", "while the dog slept by the fire",
    "when the weather finally turned warm", "in front of a large and noisy crowd",
]


def sentences(count, rng):
    """`count` distinct sentences of 10 to 40 words: subject, predicate, then 0-3 clauses."""
    out, seen = [], set()
    while len(out) < count:
        words = [rng.choice(SUBJECTS), rng.choice(PREDICATES)]
        words += rng.sample(CLAUSES, rng.choice([0, 1, 1, 2, 2, 3]))
        text = " ".join(words)
        text = text[0].upper() + text[1:] + rng.choice([".", ".", ".", "!", "?"])
        length = len(text.split())
        if 10 <= length <= 40 and text not in seen:
            seen.add(text)
            out.append(text)
    return out


def picture(index, seed):
    """A 640 x 480 scene: a vertical sky gradient, a ground band, blurred ellipses and polygons of
    random colours, then Gaussian noise of sigma 9 (a camera's at high ISO, standing in for texture: ~90 KB a file)."""
    rng = np.random.default_rng(seed * 1000 + index)
    width, height = 640, 480
    top, bottom = rng.integers(60, 255, 3), rng.integers(0, 200, 3)
    ramp = np.linspace(0.0, 1.0, height)[:, None, None]
    sky = (top[None, None, :] * (1 - ramp) + bottom[None, None, :] * ramp).repeat(width, axis=1)
    image = Image.fromarray(sky.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    horizon = int(rng.integers(240, 400))
    draw.rectangle([0, horizon, width, height], fill=tuple(int(v) for v in rng.integers(20, 160, 3)))
    for _ in range(int(rng.integers(6, 14))):
        x, y = int(rng.integers(-80, width)), int(rng.integers(-60, height))
        w, h = int(rng.integers(30, 260)), int(rng.integers(30, 200))
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            draw.ellipse([x, y, x + w, y + h], fill=colour)
        else:
            points = [(x + int(rng.integers(0, w)), y + int(rng.integers(0, h))) for _ in range(int(rng.integers(3, 7)))]
            draw.polygon(points, fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.6, 1.6))))
    noisy = np.asarray(image, dtype=np.float32) + rng.normal(0.0, 9.0, (height, width, 3))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8), "RGB")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--writers", default=os.path.join(HERE, "..", "tests", "published"))
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--only", choices=sorted(FOLDERS), action="append", help="write only these folders")
    args = parser.parse_args(argv)

    os.makedirs(os.path.join(args.out, "folders"), exist_ok=True)
    for name, (writer, arguments) in FOLDERS.items():
        folder = os.path.join(args.out, "folders", name)
        if args.only and name not in args.only:
            continue
        if os.path.exists(os.path.join(folder, "config.json")):
            continue
        command = [sys.executable, os.path.join(args.writers, writer), *arguments, folder, "--seed", str(args.seed)]
        print("writing", folder, flush=True)
        subprocess.run(command, check=True)

    images = os.path.join(args.out, "images")
    os.makedirs(images, exist_ok=True)
    sizes = []
    for i in range(args.images):
        path = os.path.join(images, f"{i:02d}.jpg")
        if not os.path.exists(path):
            picture(i, args.seed).save(path, "JPEG", quality=90, subsampling="4:2:0")
        sizes.append(os.path.getsize(path))

    texts = sentences(args.texts, random.Random(args.seed))
    with open(os.path.join(args.out, "texts.txt"), "w", encoding="utf-8") as handle:
        handle.write("".join(text + "\n" for text in texts))
    words = [len(text.split()) for text in texts]
    summary = {"images": args.images, "image_size": [640, 480], "jpeg_bytes_mean": sum(sizes) / len(sizes),
               "texts": len(texts), "words_min": min(words), "words_max": max(words),
               "words_mean": sum(words) / len(words), "folders": sorted(FOLDERS)}
    with open(os.path.join(args.out, "inputs.json"), "w") as handle:
        json.dump(summary, handle, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
