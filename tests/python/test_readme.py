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
