#!/usr/bin/env python3
"""Sends many real-time Opus RTP streams to one UDP address on loopback, for throughput measurements
of `activespeaker listen`.

  tools/network/rtp_blast.py HOST PORT STREAMS SECONDS [PACKETS_FILE]

The packets are those of a real GStreamer sender (Opus, 20 ms, RFC 6464 level as one-byte extension
id 1): recorded once from tools/network/rtp_send_gstreamer.sh speaking a sentence (with espeak-ng), or read
from PACKETS_FILE (records of a 2-byte little-endian length and the datagram). Each stream replays
them in a loop with its own SSRC, sequence numbers and timestamps, starting at a different point of
the recording, one packet per 20 ms per stream (sent in bursts every 20 ms). Only loopback addresses
are accepted. Prints the packets sent.
"""
import os, socket, struct, subprocess, sys, tempfile, threading, time

host, port, streams, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if host not in ("127.0.0.1", "::1", "localhost"):
    sys.exit("rtp_blast: loopback addresses only")
tools = os.path.dirname(os.path.abspath(__file__))


def record():
    work = tempfile.mkdtemp(prefix="rtp-blast-")
    wav = os.path.join(work, "speech.wav")
    subprocess.run(["espeak-ng", "-w", wav, "good morning everyone, the numbers for this week look good, "
                    "and we should talk about the plan for the next quarter"], check=True)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(2)
    packets = []

    def take():
        try:
            while True:
                packets.append(receiver.recv(2048))
        except socket.timeout:
            pass

    thread = threading.Thread(target=take)
    thread.start()
    subprocess.run(["bash", os.path.join(tools, "rtp_send_gstreamer.sh"), wav, "127.0.0.1", str(receiver.getsockname()[1])], check=True)
    thread.join()
    return packets


if len(sys.argv) > 5:
    data = open(sys.argv[5], "rb").read()
    packets, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from("<H", data, offset)
        packets.append(data[offset + 2:offset + 2 + length])
        offset += 2 + length
else:
    packets = record()

family = socket.AF_INET6 if ":" in host else socket.AF_INET
sender = socket.socket(family, socket.SOCK_DGRAM)
sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
address = (host, port)
count = len(packets)
sent = 0
start = time.monotonic()
tick = 0
while tick * 0.02 < seconds:
    for stream in range(streams):
        index = (tick + stream * 37) % count
        packet = bytearray(packets[index])
        sequence = (tick + stream * 1000) & 0xFFFF
        timestamp = (tick * 960 + stream * 12345) & 0xFFFFFFFF
        struct.pack_into(">HII", packet, 2, sequence, timestamp, 0x10000 + stream)
        sender.sendto(packet, address)
        sent += 1
    tick += 1
    pause = start + tick * 0.02 - time.monotonic()
    if pause > 0:
        time.sleep(pause)
print(sent, "packets sent")
