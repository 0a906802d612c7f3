"""PIL's decode of every image fixture, the reference for tests/media/media_image.c.

For each image NAME in the fixture directory writes NAME.pil: a line "WIDTH HEIGHT\n" and then
WIDTH*HEIGHT*3 bytes of RGB8, after ImageOps.exif_transpose and, for images with alpha,
compositing over white as media.h defines it: rgb = round((c*a + 255*(255-a)) / 255).
"""
import os
import sys

import numpy as np
from PIL import Image, ImageOps

IMAGES = (".jpg", ".png", ".webp", ".bmp", ".gif")


def reference(path):
    with Image.open(path) as image:
        image = ImageOps.exif_transpose(image)
        rgba = np.asarray(image.convert("RGBA"), dtype=np.int64)
    colour, alpha = rgba[..., :3], rgba[..., 3:4]
    # (c*a + 255*(255-a) + 127) // 255 is round-half-up of the exact quotient, which is never a tie.
    return ((colour * alpha + 255 * (255 - alpha) + 127) // 255).astype(np.uint8)


def main(directory):
    count = 0
    for name in sorted(os.listdir(directory)):
        if not name.endswith(IMAGES):
            continue
        pixels = reference(os.path.join(directory, name))
        height, width, _ = pixels.shape
        with open(os.path.join(directory, name + ".pil"), "wb") as out:
            out.write(b"%d %d\n" % (width, height))
            out.write(pixels.tobytes())
        count += 1
    if count == 0:
        print("no image fixtures in", directory, file=sys.stderr)
        return 1
    print("wrote", count, "PIL references")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
