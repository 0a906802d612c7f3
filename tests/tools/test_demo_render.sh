#!/usr/bin/env bash
# The demo's report renders: Debian's chromium, headless, draws report.html to a PNG, and the page is
# not blank (PIL counts the pixels that are not the page's white). scripts/install-deps.sh installs
# chromium; where it is missing the test is skipped (exit 77), and fails under CI=true.
# Usage: test_demo_render.sh DEMO_DIR PYTHON
set -u
dir=$1 python=${2:-/usr/bin/python3}
. "$(dirname "$0")/../common/skip.sh"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || skip_missing "chromium is not installed (it renders the report headless)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# No network here: the background services would only try and fail (and slow the start).
if ! timeout 120 "$browser" --headless --disable-gpu --no-sandbox --hide-scrollbars --window-size=1200,2400 \
     --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync \
     --user-data-dir="$work/profile" --screenshot="$work/report.png" "file://$(realpath "$dir/report.html")" > "$work/log" 2>&1; then
  echo "FAILED: chromium could not render $dir/report.html:" >&2
  tail -5 "$work/log" >&2
  exit 1
fi
"$python" - "$work/report.png" <<'PY'
import sys
from PIL import Image
image = Image.open(sys.argv[1]).convert("RGB")
pixels = list(image.getdata())
inked = sum(1 for p in pixels if min(p) < 200) / len(pixels)
colours = len(set(pixels[::7]))
print(f"rendered {image.width}x{image.height}: {inked:.1%} of the pixels inked, {colours} colours sampled")
# Text, tables, charts and thumbnails ink well over 1% of a 1200x2400 page in many colours.
if inked < 0.01 or colours < 20:
    print(f"FAILED: the page looks blank ({inked:.2%} inked, {colours} colours)", file=sys.stderr)
    sys.exit(1)
PY
