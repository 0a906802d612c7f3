"""The README's Python quickstart runs, from a folder of its own, as a user would run it."""

import os
import re
import subprocess
import sys

from conftest import required


def test_readme_python_block(checkpoint, tmp_path):
    text = open(required("UFORM_PYTEST_README"), encoding="utf-8").read()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    assert blocks, "README.md has no ```python block"
    script = tmp_path / "quickstart.py"
    script.write_text(blocks[0])
    done = subprocess.run([sys.executable, str(script), os.path.abspath(checkpoint)], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ))
    assert done.returncode == 0, f"the README's Python block failed:\n{done.stdout}\n{done.stderr}"
    assert "-dimensional embeddings, cosine" in done.stdout, done.stdout
    assert "next byte: 'o'" in done.stdout, done.stdout
    assert "UForm: format [uform_image_encode]: images[0]" in done.stdout, done.stdout
    assert "step 1: loss " in done.stdout, done.stdout


def test_readme_python_data_block(tmp_path):
    """The second block (datasets, fit, index) on a small `uform synth --shards 8` of its own."""
    text = open(required("UFORM_PYTEST_README"), encoding="utf-8").read()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    assert len(blocks) >= 2, "README.md has no second ```python block (datasets, fit, index)"
    data = tmp_path / "data"
    synth = subprocess.run([required("UFORM_PYTEST_CLI"), "synth", str(data), "--pairs", "300", "--heldout", "30",
                            "--modalities", "image", "--shards", "8", "--threads", "2", "--quiet"], capture_output=True, text=True)
    assert synth.returncode == 0, synth.stderr
    script = tmp_path / "data_quickstart.py"
    script.write_text(blocks[1])
    done = subprocess.run([sys.executable, str(script), str(data)], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ))
    assert done.returncode == 0, f"the README's second Python block failed:\n{done.stdout}\n{done.stderr}"
    assert re.search(r"held-out image: text->image R@1 [01]\.\d\d \(30 pairs\)", done.stdout), done.stdout
    assert "indexed 30 items, 0 bad" in done.stdout, done.stdout
    assert len(re.findall(r"^  [-0-9.]+  ", done.stdout, flags=re.M)) == 3, done.stdout
    assert (tmp_path / "model.safetensors").exists() and (tmp_path / "heldout.index").exists()
