"""Python re-implementations of published checkpoints' image preprocessing, for parity tests.

Run by Debian's /usr/bin/python3 (Pillow 9.4, numpy 1.24, torch 1.13, torchvision 0.14). Neither
transformers nor open_clip is installed here, so their processors are re-implemented from their
code, step for step, with the same libraries they call (PIL for resizing, numpy for transformers'
arithmetic, torchvision for open_clip's and UForm 3's); nothing here reads the engine's code.
Importing this module has no side effects. Other parity tests import it: keep the signatures.

Every function takes a PIL image and returns what the Python processor gives for that one image:
a float32 torch.Tensor [3, H, W] (channels first, as `pixel_values[0]` / `transform(image)`).

    clip_image_processor(image, **settings)       transformers' CLIPImageProcessor.preprocess
    clip_from_config(image, config)               the same, settings from preprocessor_config.json
    siglip_image_processor(image, **settings)     transformers' SiglipImageProcessor.preprocess
    siglip_from_config(image, config)
    open_clip_transform(image, **settings)        open_clip.transform.image_transform(is_train=False)
    open_clip_from_config(image, config)          settings from open_clip_config.json
    uform3_image_processor(image, image_size, mean, std)   uform's torch ImageProcessor (UForm 3)
    uform3_from_config(image, config)             settings from the UForm 3 config.json

What each does (the details that decide every value):

CLIP (transformers/models/clip/image_processing_clip.py with image_transforms.py):
  convert_to_rgb (PIL convert("RGB") unless already RGB); to a uint8 HWC array; resize: size
  {"shortest_edge": S} -> get_resize_output_image_size: the shorter side S, the longer
  int(S * long / short) (a square picture's width is the shorter), size {"height", "width"} ->
  exactly that, through PIL Image.resize((w, h), resample) on the uint8 picture; center_crop:
  top = (H - h) // 2, left = (W - w) // 2 (floor division), and when the crop is larger than the
  picture, zero padding of ceil((h - H) / 2) rows before; rescale: astype(float64) * factor, then
  astype(float32); normalize: (x - mean) / std in float32 (mean and std as float32 arrays).
  transformers infers the channel axis of a numpy array, and takes a picture 1 or 3 pixels high
  for a channels-first array; the processors here always treat pixels as channels-last, which is
  what transformers does when told input_data_format="channels_last".

SigLIP (image_processing_siglip.py): resize to size["height"] x size["width"] with PIL (no crop),
  then the same rescale and normalize. do_convert_rgb defaults to None (no conversion).

OpenCLIP (open_clip/transform.py, image_transform with is_train=False), on a PIL image:
  resize_mode "shortest" with a square size: torchvision Resize(S) (torchvision 0.14's
  _compute_resized_output_size: shorter side S, longer int(S * long / short)), which calls PIL's
  resize; "shortest" with a non-square size: ResizeKeepRatio (ratio = min(h / th, w / tw), each side
  round(side / ratio), half to even); then CenterCrop(size): top = int(round((H - h) / 2.0)),
  half to even, zero padding of (h - H) // 2 before when the crop is larger. "longest":
  ResizeKeepRatio with ratio = max(...), then CenterCropOrPad(size, fill=fill_color). "squash":
  Resize((h, w)), no crop. Then convert("RGB") (after the resize), ToTensor (uint8 -> float32,
  div(255)), Normalize (sub_(mean).div_(std) in float32). interpolation "bilinear" is PIL BILINEAR,
  anything else ("bicubic", "random") BICUBIC.

UForm 3 (uform/torch_processors.py ImageProcessor): Resize(S, BICUBIC), convert("RGB"),
  CenterCrop(S), ToTensor, Normalize(normalization_means, normalization_deviations).
"""
import math

import numpy as np
import torch
import torchvision.transforms.functional as TF
from PIL import Image
from torchvision.transforms import InterpolationMode

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
IMAGENET_STANDARD_MEAN = (0.5, 0.5, 0.5)
IMAGENET_STANDARD_STD = (0.5, 0.5, 0.5)

BICUBIC = 3  # PIL.Image.Resampling.BICUBIC, the `resample` of preprocessor_config.json


# ---- transformers ------------------------------------------------------------------------------

def get_size_dict(size, default_to_square):
    """transformers' get_size_dict for the forms configs use: a dict as is, an int as a square
    (default_to_square) or {"shortest_edge": size}, a (height, width) pair."""
    if isinstance(size, dict):
        return dict(size)
    if isinstance(size, int):
        return {"height": size, "width": size} if default_to_square else {"shortest_edge": size}
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return {"height": size[0], "width": size[1]}
    raise ValueError(f"unsupported size {size!r}")


def shortest_edge_size(height, width, size):
    """get_resize_output_image_size(default_to_square=False): (new_height, new_width)."""
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = size, int(size * long / short)
    return (new_long, new_short) if width <= height else (new_short, new_long)


def pil_resize(array, height, width, resample):
    """image_transforms.resize on a uint8 HWC array: PIL Image.resize((width, height), resample)."""
    return np.array(Image.fromarray(array, mode="RGB").resize((width, height), resample=resample))


def transformers_center_crop(array, crop_height, crop_width):
    """image_transforms.center_crop on an HWC array, with its zero padding."""
    orig_height, orig_width = array.shape[:2]
    top = (orig_height - crop_height) // 2
    bottom = top + crop_height
    left = (orig_width - crop_width) // 2
    right = left + crop_width
    if top >= 0 and bottom <= orig_height and left >= 0 and right <= orig_width:
        return array[top:bottom, left:right]
    new_height = max(crop_height, orig_height)
    new_width = max(crop_width, orig_width)
    padded = np.zeros((new_height, new_width) + array.shape[2:], dtype=array.dtype)
    top_pad = math.ceil((new_height - orig_height) / 2)
    left_pad = math.ceil((new_width - orig_width) / 2)
    padded[top_pad:top_pad + orig_height, left_pad:left_pad + orig_width] = array
    top += top_pad
    bottom += top_pad
    left += left_pad
    right += left_pad
    return padded[max(0, top):min(new_height, bottom), max(0, left):min(new_width, right)]


def transformers_rescale(array, scale):
    """image_transforms.rescale: float64 product, then float32."""
    return (array.astype(np.float64) * scale).astype(np.float32)


def transformers_normalize(array, mean, std):
    """image_transforms.normalize on channels-last data: float32 unless already floating."""
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float32)
    mean = np.array(mean, dtype=array.dtype)
    std = np.array(std, dtype=array.dtype)
    return (array - mean) / std


def _channels_first(array):
    return torch.from_numpy(np.ascontiguousarray(np.asarray(array, dtype=np.float32).transpose(2, 0, 1)))


def clip_image_processor(image, size=None, crop_size=None, resample=BICUBIC, do_resize=True, do_center_crop=True,
                         do_rescale=True, rescale_factor=1 / 255, do_normalize=True, image_mean=OPENAI_CLIP_MEAN,
                         image_std=OPENAI_CLIP_STD, do_convert_rgb=True):
    size = get_size_dict({"shortest_edge": 224} if size is None else size, default_to_square=False)
    crop_size = get_size_dict({"height": 224, "width": 224} if crop_size is None else crop_size,
                              default_to_square=True)
    if do_convert_rgb and image.mode != "RGB":
        image = image.convert("RGB")
    array = np.array(image)
    if do_resize:
        if "shortest_edge" in size:
            height, width = shortest_edge_size(array.shape[0], array.shape[1], size["shortest_edge"])
        else:
            height, width = size["height"], size["width"]
        array = pil_resize(array, height, width, resample)
    if do_center_crop:
        array = transformers_center_crop(array, crop_size["height"], crop_size["width"])
    if do_rescale:
        array = transformers_rescale(array, rescale_factor)
    if do_normalize:
        array = transformers_normalize(array, image_mean, image_std)
    return _channels_first(array)


def siglip_image_processor(image, size=None, resample=BICUBIC, do_resize=True, do_rescale=True,
                           rescale_factor=1 / 255, do_normalize=True, image_mean=IMAGENET_STANDARD_MEAN,
                           image_std=IMAGENET_STANDARD_STD, do_convert_rgb=None):
    size = get_size_dict({"height": 224, "width": 224} if size is None else size, default_to_square=True)
    if do_convert_rgb and image.mode != "RGB":
        image = image.convert("RGB")
    array = np.array(image)
    if do_resize:
        array = pil_resize(array, size["height"], size["width"], resample)
    if do_rescale:
        array = transformers_rescale(array, rescale_factor)
    if do_normalize:
        array = transformers_normalize(array, image_mean, image_std)
    return _channels_first(array)


_CLIP_KEYS = ("size", "crop_size", "resample", "do_resize", "do_center_crop", "do_rescale", "rescale_factor",
              "do_normalize", "image_mean", "image_std", "do_convert_rgb")
_SIGLIP_KEYS = ("size", "resample", "do_resize", "do_rescale", "rescale_factor", "do_normalize", "image_mean",
                "image_std", "do_convert_rgb")


def clip_from_config(image, config):
    """CLIPImageProcessor(**preprocessor_config)(image): keys the config lacks keep their defaults."""
    return clip_image_processor(image, **{k: config[k] for k in _CLIP_KEYS if k in config})


def siglip_from_config(image, config):
    return siglip_image_processor(image, **{k: config[k] for k in _SIGLIP_KEYS if k in config})


# ---- open_clip and UForm 3 (torchvision on PIL images) -----------------------------------------

def resize_keep_ratio_size(height, width, target_height, target_width, longest):
    """open_clip's ResizeKeepRatio.get_params without the random parts: [new_height, new_width]."""
    ratio_h = height / target_height
    ratio_w = width / target_width
    ratio = max(ratio_h, ratio_w) * longest + min(ratio_h, ratio_w) * (1. - longest)
    return [round(x * 1. / ratio) for x in (height, width)]


def center_crop_or_pad(image, output_size, fill=0):
    """open_clip's center_crop_or_pad on a PIL image (torchvision's center_crop with a fill)."""
    image_width, image_height = image.size
    crop_height, crop_width = output_size
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [
            (crop_width - image_width) // 2 if crop_width > image_width else 0,
            (crop_height - image_height) // 2 if crop_height > image_height else 0,
            (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
            (crop_height - image_height + 1) // 2 if crop_height > image_height else 0,
        ]
        image = TF.pad(image, padding_ltrb, fill=fill)
        image_width, image_height = image.size
        if crop_width == image_width and crop_height == image_height:
            return image
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return TF.crop(image, crop_top, crop_left, crop_height, crop_width)


def open_clip_transform(image, image_size=224, mean=OPENAI_CLIP_MEAN, std=OPENAI_CLIP_STD, interpolation="bicubic",
                        resize_mode="shortest", fill_color=0):
    mode = InterpolationMode.BILINEAR if interpolation == "bilinear" else InterpolationMode.BICUBIC
    size = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
    if resize_mode == "longest":
        width, height = image.size
        image = TF.resize(image, resize_keep_ratio_size(height, width, size[0], size[1], 1.), mode)
        image = center_crop_or_pad(image, size, fill=fill_color)
    elif resize_mode == "squash":
        image = TF.resize(image, list(size), mode)
    else:
        assert resize_mode == "shortest", resize_mode
        if size[0] == size[1]:
            image = TF.resize(image, size[0], mode)
        else:
            width, height = image.size
            image = TF.resize(image, resize_keep_ratio_size(height, width, size[0], size[1], 0.), mode)
        image = TF.center_crop(image, list(size))
    image = image.convert("RGB")
    return TF.normalize(TF.to_tensor(image), mean=list(mean), std=list(std))


def open_clip_from_config(image, config):
    """open_clip_config.json: preprocess_cfg (size, mean, std, interpolation, resize_mode, fill_color),
    the size falling back to model_cfg.vision_cfg.image_size, the rest to open_clip's defaults."""
    cfg = dict(config.get("preprocess_cfg", {}))
    size = cfg.get("size", config.get("model_cfg", {}).get("vision_cfg", {}).get("image_size", 224))
    return open_clip_transform(image, image_size=size, mean=cfg.get("mean", OPENAI_CLIP_MEAN),
                               std=cfg.get("std", OPENAI_CLIP_STD), interpolation=cfg.get("interpolation", "bicubic"),
                               resize_mode=cfg.get("resize_mode", "shortest"), fill_color=cfg.get("fill_color", 0))


def uform3_image_processor(image, image_size, mean, std):
    image = TF.resize(image, image_size, InterpolationMode.BICUBIC)
    image = image.convert("RGB")
    image = TF.center_crop(image, image_size)
    return TF.normalize(TF.to_tensor(image), mean=list(mean), std=list(std))


def uform3_from_config(image, config):
    """UForm 3's config.json: "image_encoder" (or the top level) with image_size,
    normalization_means, normalization_deviations."""
    config = config.get("image_encoder", config)
    return uform3_image_processor(image, config["image_size"], config["normalization_means"],
                                  config["normalization_deviations"])
