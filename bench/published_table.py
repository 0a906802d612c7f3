#!/usr/bin/python3
"""Markdown tables of a bench_published JSON file (bench/results/published.json), for bench/README.md.

    python3 bench/published_table.py [bench/results/published.json ...]

Several files (runs) are shown one after the other. Per case (model, batch): every configuration's
median items/s over the rounds, its range, the share of the call before the model ("prep"), CPU
seconds per item and the embeddings' cosine to the engine's F32 ones; then, per CPU class, the
engine's best against each peer's best with the issue's targets. Then the load table.
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


def load_table(run):
    lines = ["| folder | compute | load ms (median) | anonymous MiB after load | file-backed MiB after load | "
             "anonymous after one encode | file-backed after one encode |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in run["loads"]:
        lines.append(f"| {row['folder']} | {row['compute']} | {row['load_ms']:.0f} | {row['anonymous_mib']:.1f} | "
                     f"{row['file_mib']:.1f} | {row['anonymous_after_encode_mib']:.1f} | {row['file_after_encode_mib']:.1f} |")
    return lines


def main(paths):
    for path in paths or ["bench/results/published.json"]:
        with open(path) as handle:
            run = json.load(handle)
        print(f"Run {path}: detected class {run['detected_class']}, {run['threads']} threads, {run['rounds']} rounds of "
              f"{run['seconds']:.1f} s, load average {run['load_average_start'][0]:.2f} at the start, "
              f"{run['load_average_end'][0]:.2f} at the end.\n")
        print("\n".join(case_tables(run)))
        if run["loads"]:
            print("\n".join(load_table(run)))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
