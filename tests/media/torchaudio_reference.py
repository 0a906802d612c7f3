"""torchaudio's decode of every recording fixture, a reference for tests/media/media_audio.c.

torchaudio 0.13 (Debian) loads through libsox, independent of FFmpeg's decoders. For each recording
NAME writes NAME.torchaudio: a line "RATE COUNT\n" and COUNT float32 samples, the channel average
(the mono mix librosa and torchaudio pipelines use), normalised to [-1, 1) as torchaudio.load does.
"""
import os
import sys

import numpy as np
import torchaudio

RECORDINGS = (".wav", ".flac", ".ogg", ".opus", ".mp3", ".m4a")


def main(directory):
    count = 0
    for name in sorted(os.listdir(directory)):
        if not name.endswith(RECORDINGS):
            continue
        waveform, rate = torchaudio.load(os.path.join(directory, name))  # [channels, samples]
        mono = waveform.double().mean(dim=0).numpy().astype(np.float32)
        with open(os.path.join(directory, name + ".torchaudio"), "wb") as out:
            out.write(b"%d %d\n" % (rate, mono.size))
            out.write(mono.tobytes())
        count += 1
    if count == 0:
        print("no recordings in", directory, file=sys.stderr)
        return 1
    print("wrote", count, "torchaudio references")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
