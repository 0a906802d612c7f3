"""Shards for the streaming-memory test: SAMPLES samples of about 1 MiB each in shards of 100, each
sample a 32x32 JPEG carrying 16 comment segments of 64 KiB (the decoder passes over them, so each
sample's bytes flow through the loader whole) and its caption.

Usage: make_big_shards.py OUT SAMPLES
"""
import io
import os
import sys
import tarfile

from PIL import Image


def padded_jpeg(index):
    out = io.BytesIO()
    Image.new("RGB", (32, 32), ((index * 37) % 256, (index * 91) % 256, 128)).save(out, format="JPEG", quality=80)
    jpeg = out.getvalue()
    comment = b"\xff\xfe" + (65535).to_bytes(2, "big") + bytes([index % 251]) * 65533
    return jpeg[:2] + comment * 16 + jpeg[2:]  # after SOI, before the frame


def main(out, samples):
    os.makedirs(out, exist_ok=True)
    for shard in range((samples + 99) // 100):
        with tarfile.open(os.path.join(out, f"{shard:05d}.tar"), "w") as tar:
            for index in range(shard * 100, min(samples, shard * 100 + 100)):
                for name, data in ((f"{index:07d}.jpg", padded_jpeg(index)), (f"{index:07d}.txt", f"sample {index}".encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
