#!/usr/bin/env python3
"""Write the small file-format fixtures (Fixtures/formats/) and describe them.

One short speech clip (the Asterisk prompt "Activated.", Allison Smith, CC-BY-SA-3.0,
upsampled 8 -> 16 kHz) is written in several containers, encodings and rates, plus
four bad inputs. Afterwards every file is inspected (WAV headers parsed here, FLAC and
Vorbis through ``sox --i``, Opus by walking its Ogg pages) and a Markdown table of the
exact properties is printed on stdout, ready for Fixtures/README.md.

Usage: python3 tools/corpus/make_format_fixtures.py --out Fixtures/formats
Requires numpy and scipy (pip install numpy scipy), sox and opus-tools (opusenc).
Deterministic: sox runs without dither (-D) and opusenc with a fixed Ogg serial number.
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

import numpy as np
from scipy.io import wavfile

SOURCE = Path("/usr/share/asterisk/sounds/en/activated.wav")
SR = 16_000
WAVE_TAGS = {1: "PCM", 3: "IEEE float", 0xFFFE: "EXTENSIBLE"}


def run(cmd: list[str]) -> str:
    """Run a tool, fail loudly with its stderr, return its stdout."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"make_format_fixtures: {' '.join(cmd)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def speech_clip(work: Path) -> np.ndarray:
    """The source prompt at 16 kHz as int16 samples (sox rate -v, no dither)."""
    tmp = work / "hello-16k.wav"
    run(["sox", "-D", str(SOURCE), "-b", "16", str(tmp), "rate", "-v", str(SR)])
    _, x = wavfile.read(tmp)
    return x


def write_wav_s16(path: Path, x: np.ndarray, rate: int = SR, channels: int = 1) -> None:
    """Plain 44-byte-header PCM WAV from int16 samples (interleaved if 2-D)."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(x, dtype="<i2").tobytes())


def make_all(out: Path, work: Path) -> None:
    """Create every fixture file in ``out``."""
    x = speech_clip(work)
    s16 = out / "speech-s16.wav"
    write_wav_s16(s16, x)
    run(["sox", "-D", str(s16), "-b", "24", str(out / "speech-s24-48k.wav"), "rate", "-v", "48k"])
    run(["sox", "-D", str(s16), "-e", "floating-point", "-b", "32", str(out / "speech-f32-44k.wav"),
         "rate", "-v", "44100"])
    run(["sox", "-D", str(s16), "-e", "signed-integer", "-b", "32", str(out / "speech-s32.wav")])
    run(["sox", "-D", str(s16), "--comment", "", str(out / "speech.flac")])
    run(["sox", "-D", str(s16), "-C", "3", "--comment", "", str(out / "speech.ogg")])
    fix_ogg_serial(out / "speech.ogg")       # sox picks a random Ogg serial number
    run(["opusenc", "--quiet", "--serial", "1", "--bitrate", "24", str(s16), str(out / "speech.opus")])

    # Stereo 48 kHz: channel 1 the speech, channel 2 quiet white noise (-60 dBFS RMS).
    up = work / "speech-48k.wav"
    run(["sox", "-D", str(s16), "-b", "16", str(up), "rate", "-v", "48k"])
    _, speech48 = wavfile.read(up)
    noise = np.random.default_rng(48000).standard_normal(len(speech48)) * 32768 * 10 ** (-60 / 20)
    stereo = np.stack([speech48, np.round(noise).astype(np.int16)], axis=1)
    write_wav_s16(out / "stereo-48k.wav", stereo, rate=48000, channels=2)

    # Bad inputs.
    (out / "empty.wav").write_bytes(b"")
    (out / "not-audio.wav").write_text("This is a text file with a .wav name, not audio.\n")
    full = s16.read_bytes()
    data_bytes = len(x) * 2
    cut = 44 + data_bytes // 2 + 1          # mid data chunk, and mid sample
    (out / "truncated.wav").write_bytes(full[:cut])
    write_wav_s16(out / "header-only.wav", np.zeros(0, dtype=np.int16))


def ogg_crc(page: bytes) -> int:
    """Ogg page checksum: CRC-32, polynomial 0x04C11DB7, no reflection, init 0, no final xor."""
    crc = 0
    for byte in page:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else (crc << 1)
            crc &= 0xFFFFFFFF
    return crc


def fix_ogg_serial(path: Path, serial: int = 1) -> None:
    """Rewrite every page's stream serial number to ``serial`` and recompute its CRC."""
    data, pos, out = path.read_bytes(), 0, bytearray()
    while pos < len(data):
        if data[pos:pos + 4] != b"OggS":
            sys.exit(f"make_format_fixtures: {path}: no Ogg page at byte {pos}")
        nseg = data[pos + 26]
        length = 27 + nseg + sum(data[pos + 27:pos + 27 + nseg])
        page = bytearray(data[pos:pos + length])
        page[14:18] = struct.pack("<I", serial)
        page[22:26] = b"\0\0\0\0"
        page[22:26] = struct.pack("<I", ogg_crc(bytes(page)))
        out += page
        pos += length
    path.write_bytes(bytes(out))


def wav_info(path: Path) -> dict:
    """Parse a RIFF/WAVE header: encoding, rate, channels, declared and present frames."""
    data = path.read_bytes()
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return {"error": "not RIFF/WAVE"}
    pos, fmt, out = 12, None, {}
    while pos + 8 <= len(data):
        tag, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if tag == b"fmt ":
            fmt = struct.unpack("<HHIIHH", body[:16])
            out.update(format_tag=WAVE_TAGS.get(fmt[0], hex(fmt[0])), channels=fmt[1], rate=fmt[2],
                       bits=fmt[5])
        elif tag == b"data" and fmt:
            block = fmt[4]
            out.update(declared_frames=size // block, present_frames=len(body) // block)
        pos += 8 + size + (size & 1)
    return out


def ogg_pages(path: Path) -> list[tuple[int, bytes]]:
    """(granule position, first packet bytes) of each Ogg page."""
    data, pos, pages = path.read_bytes(), 0, []
    while pos + 27 <= len(data) and data[pos:pos + 4] == b"OggS":
        granule = struct.unpack("<q", data[pos + 6:pos + 14])[0]
        nseg = data[pos + 26]
        lacing = data[pos + 27:pos + 27 + nseg]
        start = pos + 27 + nseg
        pages.append((granule, data[start:start + sum(lacing)]))
        pos = start + sum(lacing)
    return pages


def opus_info(path: Path) -> dict:
    """Opus in Ogg: input rate from OpusHead; frames at 48 kHz = last granule - pre-skip."""
    pages = ogg_pages(path)
    head = pages[0][1]
    channels, preskip, input_rate = head[9], struct.unpack("<H", head[10:12])[0], struct.unpack("<I", head[12:16])[0]
    return {"channels": channels, "preskip": preskip, "input_rate": input_rate,
            "frames_48k": pages[-1][0] - preskip}


def describe(out: Path) -> str:
    """Markdown table of the exact properties of every fixture file."""
    rows = ["| file | bytes | container / encoding | rate (Hz) | channels | frames | duration (s) |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for path in sorted(out.iterdir()):
        size = path.stat().st_size
        name = path.name
        if name.endswith(".wav"):
            info = wav_info(path)
            if "error" in info:
                rows.append(f"| {name} | {size} | {'empty file' if size == 0 else 'text, ' + info['error']} | - | - | - | - |")
                continue
            enc = f"WAV {info['format_tag']}, {info['bits']}-bit"
            frames = info["present_frames"]
            if info["declared_frames"] != frames:
                enc += f"; data chunk declares {info['declared_frames']} frames, file holds {frames}"
            rows.append(f"| {name} | {size} | {enc} | {info['rate']} | {info['channels']} | {frames} "
                        f"| {frames / info['rate']:.6f} |")
        elif name.endswith(".opus"):
            info = opus_info(path)
            at_input = info["frames_48k"] * info["input_rate"] // 48000
            rows.append(f"| {name} | {size} | Ogg Opus, pre-skip {info['preskip']}; the codec runs at "
                        f"48000 Hz ({info['frames_48k']} frames) | {info['input_rate']} (OpusHead input "
                        f"rate) | {info['channels']} | {at_input} | {info['frames_48k'] / 48000:.6f} |")
        else:
            rate = int(run(["sox", "--i", "-r", str(path)]))
            channels = int(run(["sox", "--i", "-c", str(path)]))
            frames = int(run(["sox", "--i", "-s", str(path)]))
            enc = run(["sox", "--i", "-e", str(path)])
            bits = run(["sox", "--i", "-b", str(path)])
            kind = "FLAC" if name.endswith(".flac") else f"Ogg {enc}"
            rows.append(f"| {name} | {size} | {kind}{', ' + bits + '-bit' if bits != '0' else ''} "
                        f"| {rate} | {channels} | {frames} | {frames / rate:.6f} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    """Create the fixtures in ``--out`` (replacing its files) and print their table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="output folder, e.g. Fixtures/formats")
    ap.add_argument("--describe-only", action="store_true", help="only print the table")
    args = ap.parse_args(argv)
    if not args.describe_only:
        if not SOURCE.exists():
            sys.exit(f"make_format_fixtures: {SOURCE} missing: apt-get install asterisk-core-sounds-en-wav")
        args.out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="formats-") as work:
            make_all(args.out, Path(work))
    print(describe(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
