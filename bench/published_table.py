#!/usr/bin/python3
"""Markdown tables of a bench_published JSON file (bench/results/published.json), for bench/README.md.

    python3 bench/published_table.py [--summary] [bench/results/published.json ...]

Several files (runs) are shown one after the other. Per case (model, batch): every configuration's
median items/s over the rounds, its range, the share of the call before the model ("prep"), CPU
seconds per item and the embeddings' cosine to the engine's F32 ones; then, per CPU class, the
engine's best against each peer's best with the issue's targets. Then the load table. --summary
gives one row per case instead (ratios below a target in bold).
"""

import json
import sys


def case_tables(run):
    lines = []
    for case in run["cases"]:
        loads = ", ".join(f"{value:.1f}" for value in case["load_averages"])
        lines.append(f"**{case['model']}, batch {case['batch']}** ({case['inputs']} inputs, {case['threads']} threads; "
                     f"load average at each round's start: {loads})\n")
        lines.append("| configuration | items/s (median) | range | prep | CPU s/item | cosine to F32 (min) |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
        for config in case["configs"]:
            rounds = [r for r in config["rounds"] if r > 0]
            spread = f"{min(rounds):.2f}–{max(rounds):.2f}" if rounds else "—"
            cosine = config["cosine_to_engine_f32"][0]
            cosine = f"{cosine:.5f}" if cosine >= 0 else "—"
            lines.append(f"| {config['label']} | {config['median_items_per_second']:.2f} | {spread} | "
                         f"{100 * config['prep_share']:.0f}% | {config['cpu_seconds_per_item']:.4f} | {cosine} |")
        lines.append("")
        lines.append("| class | engine best | ÷ PyTorch best (≥ 1.5) | ÷ ORT best (≥ 2) | engine F32 ÷ ORT F32 (≥ 1) |")
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        for ratio in case["ratios"]:
            def mark(value, target):
                return f"{value:.2f}× {'met' if value >= target else '**missed**'}"
            lines.append(f"| {ratio['class']} | {ratio['uform_best']:.2f} | {mark(ratio['vs_torch_best'], 1.5)} | "
                         f"{mark(ratio['vs_ort_best'], 2.0)} | {mark(ratio['f32_vs_ort_f32'], 1.0)} |")
        lines.append(f"\nPeers' best: PyTorch {case['torch_best']:.2f} items/s (float modes {case['torch_best_float']:.2f}), "
                     f"ONNX Runtime {case['ort_best']:.2f} (F32 {case['ort_f32']:.2f}).\n")
    return lines


def summary_table(run):
    """One row per case: the engine's computes under each class, each peer's best mode, the ratios."""
    classes = [ratio["class"] for ratio in run["cases"][0]["ratios"]] if run["cases"] else []
    short = [name.split("_", 1)[-1] for name in classes]
    head = ["case", "batch"] + [f"uform {c} f32 / bf16 / i8" for c in short]
    head += ["PyTorch best (mode)", "ORT best (mode)", "ORT F32"]
    head += [f"{c}: ÷ PyTorch / ÷ ORT / F32 ÷ ORT F32" for c in short]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for case in run["cases"]:
        rates = {config["label"]: config["median_items_per_second"] for config in case["configs"]}
        cells = [case["model"], str(case["batch"])]
        for c in short:
            cells.append(" / ".join(f"{rates.get(f'uform {c} {m}', 0):.1f}" for m in ("f32", "bf16", "i8")))
        for prefix in ("torch", "ort"):
            best = max(((rate, label) for label, rate in rates.items() if label.startswith(prefix)), default=(0, "—"))
            cells.append(f"{best[0]:.1f} ({best[1].split(' ', 1)[-1] if prefix == 'torch' else best[1][3:]})")
        cells.append(f"{case['ort_f32']:.1f}")
        for ratio in case["ratios"]:
            def mark(value, target):
                return f"{value:.2f}" if value >= target else f"**{value:.2f}**"
            cells.append(" / ".join([mark(ratio["vs_torch_best"], 1.5), mark(ratio["vs_ort_best"], 2.0),
                                     mark(ratio["f32_vs_ort_f32"], 1.0)]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def load_table(run):
    lines = ["| folder | compute | load ms (median) | first encode ms | anonymous MiB after load | "
             "file-backed MiB after load | anonymous after the first encode | file-backed after the first encode |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in run["loads"]:
        first = f"{row['first_call_ms']:.0f}" if "first_call_ms" in row else "—"
        lines.append(f"| {row['folder']} | {row['compute']} | {row['load_ms']:.1f} | {first} | {row['anonymous_mib']:.1f} | "
                     f"{row['file_mib']:.1f} | {row['anonymous_after_encode_mib']:.1f} | {row['file_after_encode_mib']:.1f} |")
    return lines


def main(paths):
    summary = "--summary" in paths
    paths = [path for path in paths if path != "--summary"]
    for path in paths or ["bench/results/published.json"]:
        with open(path) as handle:
            run = json.load(handle)
        print(f"Run {path}: detected class {run['detected_class']}, {run['threads']} threads, {run['rounds']} rounds of "
              f"{run['seconds']:.1f} s, load average {run['load_average_start'][0]:.2f} at the start, "
              f"{run['load_average_end'][0]:.2f} at the end.\n")
        print("\n".join(summary_table(run) if summary else case_tables(run)))
        print()
        if run["loads"]:
            print("\n".join(load_table(run)))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
