"""The demo's report.html, read back: well-formed (parsed as XML, so every element is closed);
every picture, clip and recording it references inline as a data: URI whose bytes are a file of the
type it claims, or a file that exists; the loss chart has one point per logged step of train.csv
and the recall chart one point per evaluation in eval.jsonl, per modality and set; the recall table
shows the last evaluation's numbers; and each search shows at most five results per modality.

Usage: python3 test_demo_report.py DEMO_DIR   (a folder scripts/demo.sh wrote)
"""
import base64
import json
import csv
import os
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
MAGIC = {
    "image/png": [b"\x89PNG"],
    "image/jpeg": [b"\xff\xd8\xff"],
    "video/mp4": [b"ftyp"],  # at offset 4
    "video/webm": [b"\x1a\x45\xdf\xa3"],
    "audio/wav": [b"RIFF"],
    "audio/flac": [b"fLaC"],
}

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAILED:", message, file=sys.stderr)


def local(tag):
    return tag.split("}", 1)[-1]


def main(folder):
    path = os.path.join(folder, "report.html")
    text = open(path, encoding="utf-8").read()
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        check(False, f"{path} is not well-formed: {error}")
        return
    check(local(root.tag) == "html", f"the root element is <{local(root.tag)}>, expected <html>")

    # Media: inline data URIs of the claimed type, or files that exist.
    media = [e for e in root.iter() if local(e.tag) in ("img", "video", "audio")]
    inline = 0
    for element in media:
        source = element.get("src", "")
        match = re.match(r"data:([\w/+-]+);base64,(.*)$", source, re.S)
        if match:
            kind, payload = match.groups()
            try:
                data = base64.b64decode(payload, validate=True)
            except Exception as error:  # binascii.Error
                check(False, f"<{local(element.tag)}> holds invalid base64: {error}")
                continue
            head = data[4:8] if kind == "video/mp4" else data[:4]
            check(any(head.startswith(m) for m in MAGIC.get(kind, [b""])),
                  f"<{local(element.tag)}> claims {kind} but starts with {data[:8]!r}")
            check(len(data) > 100, f"<{local(element.tag)}> {kind} of only {len(data)} bytes")
            inline += 1
        else:
            target = source if os.path.isabs(source) else os.path.join(folder, source)
            check(bool(source) and os.path.exists(target), f"<{local(element.tag)}> references a missing file: {source!r}")

    # Charts: one polyline point per logged step and per evaluation.
    with open(os.path.join(folder, "train.csv")) as log:
        steps = sum(1 for row in csv.reader(log) if row and row[0] != "step")
    evaluations = {}
    last = {}
    for line in open(os.path.join(folder, "eval.jsonl")):
        row = json.loads(line)
        novel = "novel" in row["set"]
        key = (row["modality"], novel)
        evaluations[key] = evaluations.get(key, 0) + 1
        if not novel:
            last[row["modality"]] = row
    series = {p.get("data-series"): len(p.get("points", "").split()) for p in root.iter(SVG + "polyline")}
    check(series.get("loss per step") == steps, f"the loss chart has {series.get('loss per step')} points, train.csv {steps} steps")
    names = {"image": "image", "video": "video", "audio": "speech"}
    for (modality, novel), count in evaluations.items():
        name = names[modality] + (", compositional" if novel else "")
        check(series.get(name) == count, f"the recall chart's '{name}' has {series.get(name)} points, eval.jsonl {count} evaluations")
    check(bool(evaluations), "eval.jsonl holds no evaluation")

    # The recall table shows the last held-out evaluation of each modality.
    rows = {}
    for row in root.iter():
        if local(row.tag) != "tr":
            continue
        cells = ["".join(cell.itertext()).strip() for cell in row]
        if cells and cells[0] in ("image", "video", "speech"):
            rows[cells[0]] = cells
    for modality, row in last.items():
        cells = rows.get(names[modality])
        check(cells is not None, f"the recall table has no row for {names[modality]}")
        if cells:
            check(cells[1] == str(row["pairs"]), f"{modality}: the table shows {cells[1]} pairs, eval.jsonl {row['pairs']}")
            expected = [f"{row['text_to_media']['1']:.3f}", f"{row['text_to_media']['5']:.3f}",
                        f"{row['media_to_text']['1']:.3f}", f"{row['media_to_text']['5']:.3f}"]
            check(cells[2:6] == expected, f"{modality}: the table shows {cells[2:6]}, the last evaluation {expected}")

    # The demo always indexes and searches: a report without its searches fails.
    sections = [s for s in root.iter() if local(s.tag) == "section"]
    searches = os.path.join(folder, "searches.tsv")
    check(os.path.exists(searches), f"{searches} is missing: the demo did not search")
    queries = [line for line in open(searches) if line.strip()] if os.path.exists(searches) else []
    check(len(queries) >= 2, f"{len(queries)} searches in searches.tsv, expected at least a text and a media query")
    check(len(sections) == len(queries), f"{len(sections)} search sections for {len(queries)} searches")
    for section in sections:
        rows = [g for g in section.iter() if local(g.tag) == "div" and g.get("class") == "hits"]
        check(bool(rows), "a search section shows no results")
        for group in rows:
            hits = [h for h in group if h.get("class") == "hit"]
            check(1 <= len(hits) <= 5, f"a result row shows {len(hits)} results")

    print(f"{path}: {len(media)} media elements ({inline} inline), {steps} loss points, "
          f"{sum(evaluations.values())} evaluations, {len(sections)} searches; {len(failures)} failures")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
    sys.exit(1 if failures else 0)
