"""PyTorch peer of bench_index: files -> embeddings the way a PyTorch user writes it.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/index_torch.py CHECKPOINT FOLDER BATCH THREADS WORKERS [--bf16]

A Dataset opens each image with PIL (convert("RGB")), applies torchvision's Resize(S, antialias=True),
CenterCrop(S), ToTensor and Normalize (the CLIP preprocessing docs/preprocessing.md specifies), a DataLoader
batches it with WORKERS worker processes, and the image encoder of bench/encode_torch.py (the same
weights, nn.Linear blocks) runs under torch.inference_mode and, with --bf16, CPU BF16 autocast.
The timed part is one pass over every file, decode to embeddings, after a warm-up batch; model
construction is not timed. The CPU time of the pass (this process and its DataLoader workers) is
reported too: on a shared machine, items per CPU-second compare fairly where wall-clock cannot.
Prints one JSON line.
"""

import argparse
import json
import os
import resource
import sys
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import encode_torch  # noqa: E402
import uform_reference as R  # noqa: E402


class Files(Dataset):
    def __init__(self, paths, transform):
        self.paths, self.transform = paths, transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        with Image.open(self.paths[index]) as image:
            return self.transform(image.convert("RGB"))


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("folder")
    parser.add_argument("batch", type=int)
    parser.add_argument("threads", type=int)
    parser.add_argument("workers", type=int)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config, tensors = R.load(args.checkpoint, torch.float32)
    model = encode_torch.Encoder(config, tensors, "image").eval()
    size = config["image"]["size"]
    mean = config["image"].get("mean", [0.48145466, 0.4578275, 0.40821073])
    std = config["image"].get("std", [0.26862954, 0.26130258, 0.27577711])
    transform = transforms.Compose([transforms.Resize(size, antialias=True), transforms.CenterCrop(size),
                                    transforms.ToTensor(), transforms.Normalize(mean, std)])
    paths = sorted(os.path.join(args.folder, name) for name in os.listdir(args.folder))
    loader = DataLoader(Files(paths, transform), batch_size=args.batch, num_workers=args.workers,
                        persistent_workers=False)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16 else None
    with torch.inference_mode():
        if autocast:
            autocast.__enter__()
        model(torch.stack([transform(Image.open(paths[0]).convert("RGB"))] * args.batch))  # warm-up
        start = time.perf_counter()
        cpu_start = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        count = 0
        for batch in loader:
            _, embeddings = model(batch)
            embeddings.float().numpy()
            count += batch.shape[0]
        seconds = time.perf_counter() - start
        del loader  # its workers exit and are reaped, so their CPU time counts below
        cpu_end = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = sum(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in zip(cpu_start, cpu_end))
        if autocast:
            autocast.__exit__(None, None, None)
    print(json.dumps({"items": count, "seconds": seconds, "items_per_second": count / seconds, "cpu_seconds": cpu,
                      "items_per_cpu_second": count / cpu if cpu > 0 else 0, "workers": args.workers,
                      "threads": args.threads, "batch": args.batch, "mode": "bf16" if args.bf16 else "f32",
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main(sys.argv[1:])
