"""Pictures and expected outputs for tests/kernels/test_signal_pil.c, from Pillow and the processors.

Run by Debian's /usr/bin/python3 (Pillow 9.4, numpy 1.24, torch 1.13, torchvision 0.14):

    python3 pil_reference.py DIRECTORY SEED

Generates pictures from a numpy generator seeded with SEED (random noise, smooth gradients with
noise, sharp edges: stripes, a checkerboard and a disk at full contrast), writes each as
DIRECTORY/PICTURE.in (uint8 [H, W, 3]), the expected output of each case as DIRECTORY/NAME.out,
and lists the cases in DIRECTORY/manifest.txt, one a line:

  resize NAME PICTURE H W OH OW FILTER
      NAME.out = np.array(Image.fromarray(picture).resize((OW, OH), FILTER)), uint8 [OH, OW, 3], where
      the picture is PICTURE.in, H × W.
  style NAME PICTURE H W STYLE FILTER DO_RESIZE DO_CROP DO_RESCALE DO_NORMALIZE SHORTEST HEIGHT WIDTH
        CROP_H CROP_W FACTOR MODE FILL MEAN0 MEAN1 MEAN2 STD0 STD1 STD2 OUT_H OUT_W
      NAME.out = the processor's float32 [3, OUT_H, OUT_W] from tests/reference/published_processors.py,
      STYLE 0 CLIP, 1 SigLIP, 2 OpenCLIP, 3 UForm 3 (the numbering of uform__signal_pil_style_t),
      MODE 0 shortest, 1 longest, 2 squash; floats written with repr (exact round trip).

Nothing here reuses the engine's code: the expected values are Pillow's and the processors'.
"""
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import published_processors as pp  # noqa: E402

NEAREST, LANCZOS, BILINEAR, BICUBIC, BOX, HAMMING = 0, 1, 2, 3, 4, 5
SIGLIP_MEAN = (0.5, 0.5, 0.5)

# Sizes the brief asks for: degenerate, one off from 224 either way, landscape and portrait,
# extreme aspect ratios, and upsampling.
PICTURE_SIZES = [(1, 1), (1, 57), (3, 500), (223, 224), (224, 223), (225, 225), (480, 640), (640, 480), (1000, 37),
                 (17, 23), (2, 3), (37, 300)]


def picture(generator, height, width, kind):
    if kind == "noise":
        return generator.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    y = np.arange(height)[:, None, None]
    x = np.arange(width)[None, :, None]
    if kind == "gradient":
        base = (y * 255 // max(height, 1) + x * 97 // max(width, 1) + np.array([0, 85, 170])) % 256
        return ((base + generator.integers(0, 16, size=(height, width, 3))) % 256).astype(np.uint8)
    # Sharp edges at full contrast: vertical stripes 1..4 px wide in red, a checkerboard in green, a
    # disk in blue, so every filter's negative lobes overshoot and the clipping matters.
    stripes = ((x // (1 + (y % 4))) % 2) * 255
    checker = (((x // 3) + (y // 5)) % 2) * 255
    disk = (((y - height / 2) ** 2 + (x - width / 3) ** 2) < (min(height, width) / 3 + 1) ** 2) * 255
    planes = [np.broadcast_to(p[..., 0], (height, width)) for p in (stripes, checker, disk)]
    return np.stack(planes, axis=-1).astype(np.uint8)


def main():
    directory, seed = sys.argv[1], int(sys.argv[2], 0)
    generator = np.random.default_rng(seed)
    manifest = []
    kinds = ["noise", "gradient", "edges"]

    pictures = []

    def new_picture(height, width, kind):
        pixels = picture(generator, height, width, kind)
        name = f"picture{len(pictures)}"
        pixels.tofile(os.path.join(directory, name + ".in"))
        pictures.append(name)
        return name, pixels

    def save(name, expected):
        np.ascontiguousarray(expected).tofile(os.path.join(directory, name + ".out"))

    # ---- Pillow's resize: every picture to the CLIP size, to a square, down hard, up. ----
    filters = [BICUBIC, BILINEAR, LANCZOS, BOX, HAMMING]
    count = 0
    for index, (height, width) in enumerate(PICTURE_SIZES):
        small = height * width <= 60000
        for kind_index, kind in enumerate(kinds if small else ["noise", "edges"]):
            source, pixels = new_picture(height, width, kind)
            # The CLIP size, unless it makes a huge picture (3 x 500 -> 224 x 37,333): then 32.
            short = pp.shortest_edge_size(height, width, 224)
            if short[0] * short[1] > 1 << 20:
                short = pp.shortest_edge_size(height, width, 32)
            # Up (three times, or a little on one axis and down on the other for big pictures), and
            # one axis only, so that Pillow skips the other pass.
            up = (height * 3, width + 1) if small else (height + 5, max(1, width * 2 // 3))
            targets = [short, (224, 224), (max(1, height // 7), max(1, width // 5)), up,
                       (height, max(1, width // 2)), (max(1, height // 2), width)]
            for target_index, (out_height, out_width) in enumerate(targets):
                # BICUBIC (what every processor uses) everywhere; the other filters in turn.
                chosen = [BICUBIC, filters[1 + (index + kind_index + target_index) % 4]]
                for resample in chosen:
                    name = f"resize{count}"
                    count += 1
                    out = np.array(Image.fromarray(pixels, mode="RGB").resize((out_width, out_height),
                                                                              resample=resample))
                    save(name, out)
                    manifest.append(f"resize {name} {source} {height} {width} {out_height} {out_width} {resample}")

    # ---- The four processor styles. ----
    # (style, filter, do_resize, do_crop, do_rescale, do_normalize, shortest, height, width, crop_h, crop_w,
    #  factor, mode, fill, mean, std)
    clip = pp.OPENAI_CLIP_MEAN, pp.OPENAI_CLIP_STD
    configs = [
        (0, BICUBIC, 1, 1, 1, 1, 224, 0, 0, 224, 224, 1 / 255, 0, 0) + clip,        # openai/clip-vit-*-patch*
        (0, BICUBIC, 1, 1, 1, 1, 336, 0, 0, 336, 336, 0.00392156862745098, 0, 0) + clip,
        (0, BILINEAR, 1, 1, 1, 1, 200, 0, 0, 256, 240, 1 / 255, 0, 0) + clip,       # crop larger: zero padding
        (0, BICUBIC, 0, 1, 1, 1, 0, 0, 0, 112, 96, 1 / 255, 0, 0) + clip,           # no resize, crop (or pad)
        (0, BICUBIC, 1, 0, 1, 0, 0, 64, 96, 0, 0, 1 / 255, 0, 0) + clip,            # {height, width}, no normalize
        (0, LANCZOS, 1, 1, 0, 1, 96, 0, 0, 96, 96, 1 / 255, 0, 0) + clip,           # normalize without rescale
        (1, BICUBIC, 1, 0, 1, 1, 0, 224, 224, 0, 0, 1 / 255, 0, 0, SIGLIP_MEAN, SIGLIP_MEAN),  # google/siglip-*-224
        (1, BILINEAR, 1, 0, 1, 1, 0, 384, 256, 0, 0, 1 / 255, 0, 0, SIGLIP_MEAN, SIGLIP_MEAN),
        (1, BICUBIC, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1 / 255, 0, 0, (0.48, 0.45, 0.4), (0.26, 0.26, 0.27)),
        (2, BICUBIC, 1, 1, 1, 1, 0, 224, 224, 0, 0, 0, 0, 0) + clip,                # open_clip shortest
        (2, BICUBIC, 1, 1, 1, 1, 0, 224, 256, 0, 0, 0, 0, 0) + clip,                # shortest, non-square
        (2, BICUBIC, 1, 1, 1, 1, 0, 224, 224, 0, 0, 0, 1, 128) + clip,              # longest, fill 128
        (2, BILINEAR, 1, 1, 1, 1, 0, 160, 192, 0, 0, 0, 1, 7) + clip,               # longest, non-square
        (2, BICUBIC, 1, 1, 1, 1, 0, 224, 224, 0, 0, 0, 2, 0, SIGLIP_MEAN, SIGLIP_MEAN),  # squash
        (3, BICUBIC, 1, 1, 1, 1, 0, 224, 224, 0, 0, 0, 0, 0) + clip,                # UForm 3
        (3, BICUBIC, 1, 1, 1, 1, 0, 336, 336, 0, 0, 0, 0, 0, (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)),
    ]
    count = 0
    for config_index, config in enumerate(configs):
        (style, resample, do_resize, do_crop, do_rescale, do_normalize, shortest, height_cfg, width_cfg, crop_h,
         crop_w, factor, mode, fill, mean, std) = config
        for size_index, (height, width) in enumerate(PICTURE_SIZES):
            # Each configuration takes every other size (by turns), so each size meets half the configurations.
            if (config_index + size_index) % 2:
                continue
            kind = kinds[(config_index + size_index // 2) % 3]
            source, pixels = new_picture(height, width, kind)
            image = Image.fromarray(pixels, mode="RGB")
            if style == 0:
                size = {"shortest_edge": shortest} if shortest else {"height": height_cfg, "width": width_cfg}
                out = pp.clip_from_config(image, {
                    "do_resize": bool(do_resize), "size": size, "resample": resample,
                    "do_center_crop": bool(do_crop), "crop_size": {"height": crop_h, "width": crop_w},
                    "do_rescale": bool(do_rescale), "rescale_factor": factor, "do_normalize": bool(do_normalize),
                    "image_mean": list(mean), "image_std": list(std)})
            elif style == 1:
                out = pp.siglip_from_config(image, {
                    "do_resize": bool(do_resize), "size": {"height": height_cfg, "width": width_cfg},
                    "resample": resample, "do_rescale": bool(do_rescale), "rescale_factor": factor,
                    "do_normalize": bool(do_normalize), "image_mean": list(mean), "image_std": list(std)})
            elif style == 2:
                size = height_cfg if height_cfg == width_cfg else [height_cfg, width_cfg]
                out = pp.open_clip_from_config(image, {"preprocess_cfg": {
                    "size": size, "mean": list(mean), "std": list(std),
                    "interpolation": "bilinear" if resample == BILINEAR else "bicubic",
                    "resize_mode": ["shortest", "longest", "squash"][mode], "fill_color": fill}})
            else:
                out = pp.uform3_from_config(image, {"image_encoder": {
                    "image_size": height_cfg, "normalization_means": list(mean),
                    "normalization_deviations": list(std)}})
            out = out.numpy().astype(np.float32)
            name = f"style{count}"
            count += 1
            save(name, out)
            numbers = [style, resample, do_resize, do_crop, do_rescale, do_normalize, shortest, height_cfg, width_cfg,
                       crop_h, crop_w]
            manifest.append(" ".join(["style", name, source, str(height), str(width)] + [str(n) for n in numbers] +
                                     [repr(float(factor)), str(mode), str(fill)] +
                                     [repr(float(v)) for v in list(mean) + list(std)] +
                                     [str(out.shape[1]), str(out.shape[2])]))

    with open(os.path.join(directory, "manifest.txt"), "w") as file:
        file.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
