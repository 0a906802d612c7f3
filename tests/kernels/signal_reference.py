"""Reference outputs for tests/kernels/test_signal_*.c, from torch / torchvision / torchaudio.

Run by Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14, torchaudio 0.13, numpy 1.24):

    python3 signal_reference.py DIRECTORY

DIRECTORY/manifest.txt lists one case per line, `OP NAME ARGS...`; the case's input is
DIRECTORY/NAME.in (raw little-endian: uint8 pixels for images, float32 samples for audio), and
this script writes DIRECTORY/NAME.<suffix> outputs as raw float32 / uint8 (and NAME.dims as text
where the output size is decided here). Nothing here reuses the engine's code: each reference is
the PyTorch-family function the engine claims to match.

Ops:
  resize_to  NAME H W OH OW   torchvision resize of the [H, W, 3] image to (OH, OW), antialias=True:
                              NAME.f32 = float result [OH, OW, 3] of the float image (0..255),
                              NAME.u8 = uint8 result of the uint8 image.
  shorter    NAME H W S       the image stem: resize(shorter side to S) of the float image ->
                              NAME.dims "h w", NAME.f32 [h, w, 3]; then center_crop(S), / 255,
                              Normalize(CLIP mean, std) -> NAME.norm [3, S, S].
  stft       NAME L N HOP     |torch.stft(x, N, HOP, hann_window(N), center=True, reflect)|^2
                              -> NAME.f32 [frames, N/2+1].
  logmel     NAME L M         Whisper's log_mel_spectrogram (n_fft 400, hop 160, 16 kHz, M mels)
                              -> NAME.f32 [frames - 1, M]; the same in float64 -> NAME.f64.
  melfilters NAME SR N M      librosa-formula Slaney mel filters in numpy -> NAME.f32 [M, N/2+1].
  resample   NAME L FROM TO   torchaudio.functional.resample(x, FROM, TO) -> NAME.f32.
"""
import math
import os
import sys

import numpy as np
import torch
import torchaudio
import torchvision.transforms.functional as TF

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def image(directory, name, height, width):
    data = np.fromfile(os.path.join(directory, name + ".in"), dtype=np.uint8)
    assert data.size == height * width * 3, (name, data.size)
    return torch.from_numpy(data.reshape(height, width, 3)).permute(2, 0, 1).contiguous()  # [3, H, W]


def save(directory, name, suffix, array):
    np.ascontiguousarray(array).tofile(os.path.join(directory, name + "." + suffix))


# ---- Slaney mel scale, written from librosa's formulas (librosa is not installed here). ----
# librosa.hz_to_mel(htk=False): linear 3 mels per 200 Hz below 1 kHz, then log with step ln(6.4)/27.
def hz_to_mel(hz):
    hz = np.asarray(hz, dtype=np.float64)
    f_sp = 200.0 / 3
    mel = hz / f_sp
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(hz >= min_log_hz, min_log_mel + np.log(np.maximum(hz, 1e-300) / min_log_hz) / logstep, mel)


def mel_to_hz(mel):
    mel = np.asarray(mel, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(mel >= min_log_mel, min_log_hz * np.exp(logstep * (mel - min_log_mel)), f_sp * mel)


def mel_filters(sr, n_fft, n_mels, fmin=0.0, fmax=None):
    """librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False, norm='slaney'), float32."""
    fmax = sr / 2.0 if fmax is None else fmax
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    freqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(edges)
    ramps = np.subtract.outer(edges, freqs)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:n_mels + 2] - edges[:n_mels]))[:, np.newaxis]
    return weights


def check_mel_by_hand():
    """Values derived by hand, so the formula above is checked against something other than itself.
    Slaney scale: 1000 Hz = 15 mel; 8000 Hz = 15 + 27 ln 8 / ln 6.4 = 45.24564 mel. Whisper's 80 filters
    use 82 edges 45.24564/81 = 0.5585881 mel apart; edge 1 = 37.23921 Hz, edge 2 = 74.47841 Hz. Bin 1 is
    40 Hz: min(40/37.23921, (74.47841-40)/37.23921) = 0.925863, times 2/74.47841 = 0.0248626."""
    assert abs(hz_to_mel(1000.0) - 15.0) < 1e-12
    assert abs(hz_to_mel(8000.0) - 45.24564) < 1e-4, hz_to_mel(8000.0)
    assert abs(mel_to_hz(hz_to_mel(3210.0)) - 3210.0) < 1e-9
    w = mel_filters(16000, 400, 80)
    assert abs(w[0, 1] - 0.0248626) < 2e-6, w[0, 1]
    assert w[0, 0] == 0.0 and w[0, 2] == 0.0, (w[0, 0], w[0, 2])
    # Each Slaney triangle integrates to ~1 over Hz: sum(w) * 40 Hz bin spacing ~ 1 for wide filters.
    assert abs(w[79].sum() * 40.0 - 1.0) < 0.02, w[79].sum() * 40.0


def log_mel(audio, n_mels):
    """whisper/audio.py log_mel_spectrogram for 16 kHz audio, with the filters above. A float64 `audio`
    gives the same computation in double, which measures the float32 reference's own error."""
    window = torch.hann_window(400, dtype=audio.dtype)
    stft = torch.stft(audio, 400, 160, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    filters = torch.from_numpy(mel_filters(16000, 400, n_mels)).to(audio.dtype)
    mel_spec = filters @ magnitudes
    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0  # [M, frames - 1]


def main():
    directory = sys.argv[1]
    check_mel_by_hand()
    torch.set_num_threads(1)
    with open(os.path.join(directory, "manifest.txt")) as manifest:
        for line in manifest:
            fields = line.split()
            if not fields:
                continue
            op, name, args = fields[0], fields[1], [int(a) for a in fields[2:]]
            if op == "resize_to":
                h, w, oh, ow = args
                img = image(directory, name, h, w)
                out = TF.resize(img.float(), [oh, ow], antialias=True)
                save(directory, name, "f32", out.permute(1, 2, 0).numpy().astype(np.float32))
                out8 = TF.resize(img, [oh, ow], antialias=True)
                save(directory, name, "u8", out8.permute(1, 2, 0).numpy().astype(np.uint8))
            elif op == "shorter":
                h, w, s = args
                img = image(directory, name, h, w)
                out = TF.resize(img.float(), s, antialias=True)
                with open(os.path.join(directory, name + ".dims"), "w") as dims:
                    dims.write("%d %d\n" % (out.shape[1], out.shape[2]))
                save(directory, name, "f32", out.permute(1, 2, 0).numpy().astype(np.float32))
                crop = TF.center_crop(out, s) / 255.0
                norm = TF.normalize(crop, CLIP_MEAN, CLIP_STD)
                save(directory, name, "norm", norm.numpy().astype(np.float32))
            elif op in ("stft", "logmel", "resample"):
                length = args[0]
                x = torch.from_numpy(np.fromfile(os.path.join(directory, name + ".in"), dtype=np.float32))
                assert x.numel() == length, (name, x.numel())
                if op == "stft":
                    n, hop = args[1], args[2]
                    spec = torch.stft(x, n, hop, window=torch.hann_window(n), center=True, pad_mode="reflect",
                                      return_complex=True)
                    power = spec.real ** 2 + spec.imag ** 2  # [bins, frames]
                    save(directory, name, "f32", power.T.contiguous().numpy().astype(np.float32))
                elif op == "logmel":
                    save(directory, name, "f32", log_mel(x, args[1]).T.contiguous().numpy().astype(np.float32))
                    save(directory, name, "f64", log_mel(x.double(), args[1]).T.contiguous().numpy())
                else:
                    y = torchaudio.functional.resample(x, args[1], args[2])
                    save(directory, name, "f32", y.numpy().astype(np.float32))
            elif op == "melfilters":
                sr, n, m = args
                save(directory, name, "f32", mel_filters(sr, n, m))
            else:
                raise SystemExit("unknown op " + op)


if __name__ == "__main__":
    main()
