#!/usr/bin/python3
"""ONNX graphs of the benchmark's published folders for the ONNX Runtime peer (bench/published_ort.mjs).

    /usr/bin/python3 bench/published_export.py KIND FOLDER OUT_DIR [--opset 17] [--no-int8] [--keep]

KIND image exports the vision tower of a CLIP folder: pixel_values [batch, 3, S, S] F32 ->
embeddings [batch, E] (post-norm CLS, visual projection, L2-normalised). KIND text exports a
sentence-transformers BERT folder: input_ids and attention_mask [batch, sequence] int64 ->
embeddings [batch, E] (the folder's pooling over the masked tokens, L2-normalised). The batch and
sequence axes are dynamic. The graph is traced by torch.onnx.export (Debian's PyTorch 1.13) from the
modules formulation of bench/published_torch.py — transformers' own layer code spelled out with the
same ops in the same order (separate q / k / v MatMuls, Reshape + Transpose heads, scores scaled,
the extended mask added, Softmax), which is the graph optimum's exporter gives ONNX Runtime to fuse;
weights read from the folder. Opset 17 (LayerNormalization is one op there; ORT 1.21 runs opsets
up to 21).

OUT_DIR/model.onnx is that F32 graph. OUT_DIR/model_int8.onnx (unless --no-int8) is the same graph
quantized the way onnxruntime.quantization.quantize_dynamic does by default, written here with
Debian's python3-onnx because ORT's Python tool is not installed: every MatMul whose second input
is a 2-D F32 initializer becomes
    DynamicQuantizeLinear(A) -> A_q (uint8), A_scale, A_zero_point
    MatMulInteger(A_q, W_q, A_zero_point, 0) -> int32;  Cast -> F32;  Mul by A_scale * W_scale
with W_q = round(W / W_scale) in int8, W_scale = max|W| / 127 per tensor (symmetric, zero point 0).
ORT's level-all optimizer fuses that chain into DynamicQuantizeMatMul (MLAS's U8S8 GEMM, VNNI on
AVX-512 parts). The patch convolution, the Gemm of the final projection, attention's activation
products and the norms stay F32, as quantize_dynamic leaves them by default for these graphs.
Prints one JSON line: the files, their node counts and how many MatMuls were quantized.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import published_torch as P  # noqa: E402


class TextGraph(nn.Module):
    """P.Bert (modules formulation) behind transformers' int64 attention_mask."""

    def __init__(self, folder):
        super().__init__()
        self.bert = P.Bert(folder, fused=False)

    def forward(self, input_ids, attention_mask):
        bert = self.bert
        t = input_ids.shape[1]
        h = bert.ln(bert.words[input_ids] + bert.positions[:t] + bert.type0)
        mask = attention_mask.to(h.dtype)
        extended = (1.0 - mask[:, None, None, :]) * torch.finfo(h.dtype).min
        for layer in bert.layers:
            h = layer(h, extended)
        if bert.mean:
            weights = mask[:, :, None]
            pooled = (h * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        else:
            pooled = h[:, 0]
        return pooled / pooled.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def export(kind, folder, path, opset):
    if kind == "image":
        model = P.ClipVision(folder, fused=False).eval()
        size = P.read_json(folder, "config.json")["vision_config"]["image_size"]
        inputs = (torch.randn(2, 3, size, size),)
        names, axes = ["pixel_values"], {"pixel_values": {0: "batch"}, "embeddings": {0: "batch"}}
    else:
        model = TextGraph(folder).eval()
        inputs = (torch.randint(1000, 2000, (2, 9)), torch.ones(2, 9, dtype=torch.int64))
        names = ["input_ids", "attention_mask"]
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "embeddings": {0: "batch"}}
    with torch.no_grad():
        torch.onnx.export(model, inputs, path, input_names=names, output_names=["embeddings"], dynamic_axes=axes,
                          opset_version=opset, do_constant_folding=True)


def quantize(source, target):
    """The dynamic INT8 graph described above; answers how many MatMuls it quantized."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto

    model = onnx.load(source)
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    nodes, quantized, added = [], 0, []
    for node in graph.node:
        weight = initializers.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or weight.data_type != TensorProto.FLOAT or len(weight.dims) != 2:
            nodes.append(node)
            continue
        values = numpy_helper.to_array(weight).astype(np.float32)
        scale = np.float32(max(float(np.abs(values).max()), 1e-12) / 127.0)
        q = np.clip(np.rint(values / scale), -127, 127).astype(np.int8)
        stem = f"{node.name or node.output[0]}_q".replace("/", "_")
        added += [numpy_helper.from_array(q, stem + "_W"), numpy_helper.from_array(np.array(scale, np.float32), stem + "_Ws"),
                  numpy_helper.from_array(np.array(0, np.int8), stem + "_Wz")]
        a, out = node.input[0], node.output[0]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [a], [stem + "_A", stem + "_As", stem + "_Az"], name=stem + "_dql"),
            helper.make_node("Mul", [stem + "_As", stem + "_Ws"], [stem + "_S"], name=stem + "_scale"),
            helper.make_node("MatMulInteger", [stem + "_A", stem + "_W", stem + "_Az", stem + "_Wz"], [stem + "_I"],
                             name=stem + "_mmi"),
            helper.make_node("Cast", [stem + "_I"], [stem + "_F"], to=TensorProto.FLOAT, name=stem + "_cast"),
            helper.make_node("Mul", [stem + "_F", stem + "_S"], [out], name=stem + "_mul"),
        ]
        quantized += 1
    used = {name for node in nodes for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    onnx.checker.check_model(model)
    onnx.save(model, target)
    return quantized


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["image", "text"])
    parser.add_argument("folder")
    parser.add_argument("out")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--no-int8", action="store_true")
    parser.add_argument("--keep", action="store_true", help="do nothing when the graphs are newer than the folder's weights")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    f32 = os.path.join(args.out, "model.onnx")
    wanted = [f32] + ([] if args.no_int8 else [os.path.join(args.out, "model_int8.onnx")])
    weights = os.path.getmtime(os.path.join(args.folder, "model.safetensors"))
    if args.keep and all(os.path.exists(path) and os.path.getmtime(path) > weights for path in wanted):
        print(json.dumps({"kept": wanted}))
        return
    export(args.kind, args.folder, f32, args.opset)
    summary = {"f32": f32}
    if not args.no_int8:
        int8 = os.path.join(args.out, "model_int8.onnx")
        summary.update(int8=int8, quantized_matmuls=quantize(f32, int8))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
