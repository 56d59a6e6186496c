#!/usr/bin/env python3
"""Measures the capture-to-event delay of `activespeaker live` on a device paced like real hardware.

Method. The device is an alsa-lib `type file` PCM whose infile is a FIFO. This script writes the
audio into the FIFO in 10 ms chunks on a wall-clock schedule, each chunk at the moment its last
sample is due (as a sound card completes a 10 ms period), and notes when each chunk was written.
`activespeaker live` reads the device, and the script timestamps every line it prints (stdout is a
pipe, and live flushes at the end of every tick that produced a line). For an event with decision
time t (the end of the hop that completed the evidence) and onset `since`:

  pipeline delay  = arrival of the line - wall time the chunk ending at t was written
                    (capture read, conversion, queue, engine tick, output: what this program adds)
  decision delay  = t - since  (how much speech the engine needs before it decides; no wall clock)
  onset-to-event  = arrival - wall time the first speech sample of the utterance was written
                    + the sample's wait for its period to complete (half a period on average)

Usage: tools/evaluation/measure_live_delay.py [BINARY] [ROUNDS] [RATE]
       (default .build/release/activespeaker, 5 rounds, a 16000 Hz device; 48000 adds resampling)
Needs espeak-ng and sox (tools/install-deps.sh). Loopback only: no network at all.
"""
import os, statistics, subprocess, sys, tempfile, threading, time, json, wave, array

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/activespeaker"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
rate = int(sys.argv[3]) if len(sys.argv) > 3 else 16000
chunk = rate // 100

work = tempfile.mkdtemp(prefix="live-delay-")
speech_wav = os.path.join(work, "speech.wav")
subprocess.run(["espeak-ng", "-w", os.path.join(work, "raw.wav"), "good morning everyone, shall we begin"], check=True)
subprocess.run(["sox", "-D", os.path.join(work, "raw.wav"), "-r", str(rate), "-c", "1", "-b", "16", speech_wav], check=True)
with wave.open(speech_wav) as w:
    clip = array.array("h", w.readframes(w.getnframes()))
onset_in_clip = next(i for i, x in enumerate(clip) if abs(x) > 328)  # first sample above -40 dBFS
# Engine times are at 16 kHz; the device runs at `rate`.
gap = array.array("h", [0] * (rate * 3 // 2))
audio = array.array("h")
onsets = []
for _ in range(rounds):
    audio += gap
    onsets.append(len(audio) + onset_in_clip)
    audio += clip
audio += gap

fifo = os.path.join(work, "device.fifo")
os.mkfifo(fifo)
config = os.path.join(work, "asoundrc")
with open(config, "w") as f:
    f.write('pcm.paced {\n type file\n slave.pcm "null"\n file "/dev/null"\n infile "%s"\n format "raw"\n}\n' % fifo)

written = []  # wall time at which chunk k was written


def writer():
    with open(fifo, "wb", buffering=0) as out:
        start = time.monotonic()
        for k in range(len(audio) // chunk):
            due = start + (k + 1) * 0.01
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            out.write(audio[k * chunk:(k + 1) * chunk].tobytes())
            written.append(time.monotonic())


live = subprocess.Popen(
    [binary, "live", "--alsa-config", config, "--device", "paced", "--device-poll", "0", "--rate", str(rate),
     "--duration", "%.2f" % (len(audio) / rate)],
    stdout=subprocess.PIPE, text=True)
thread = threading.Thread(target=writer)
thread.start()
lines = []
for line in live.stdout:
    lines.append((time.monotonic(), json.loads(line)))
live.wait()
thread.join()

pipeline, decision, onset_to_event = [], [], []
for arrival, event in lines:
    if event.get("type") != "speech" or not event["active"]:
        continue
    hop = round(event["t"] * 100) - 1  # chunk k holds the device's samples of hop k
    pipeline.append(arrival - written[hop])
    decision.append(event["t"] - event["since"])
    first = min(onsets, key=lambda o: abs(o / rate - event["since"]))
    onset_to_event.append(arrival - written[first // chunk] + 0.005)


def summary(name, values):
    values = [1000 * v for v in values]
    print("%-15s n=%d  median %.1f ms  min %.1f ms  max %.1f ms" % (name, len(values), statistics.median(values), min(values), max(values)))


summary("pipeline", pipeline)
summary("decision", decision)
summary("onset-to-event", onset_to_event)
