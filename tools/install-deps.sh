#!/usr/bin/env bash
# Installs the Debian packages ActiveSpeaker needs to build, test and run its demo.
# Installs only what is missing, so a second run costs a second. Needs root (or sudo).
set -euo pipefail

packages=(
  pkg-config
  libfftw3-dev     # FFT (single precision)
  libsndfile1-dev  # WAV, FLAC, Ogg Vorbis, Ogg Opus files
  libopus-dev      # Opus packets
  libasound2-dev   # ALSA capture
  libsoxr-dev      # resampling to 16 kHz
  libwebsockets-dev  # HTTP and WebSocket of the room server and client
  libssl-dev       # HMAC-SHA256 of the room tokens (libcrypto); TLS of https/wss (libwebsockets)
  openssl          # test CA and server certificates, made at test time (TLS tests)
  sox              # test signals
  opus-tools       # opusenc, for Ogg Opus test files
  espeak-ng        # synthetic speech in tests
  alsa-utils       # arecord, to try the file-backed capture devices of the tests by hand
  gstreamer1.0-tools         # gst-launch-1.0: RTP sender with RFC 6464 levels (listen tests)
  gstreamer1.0-plugins-base  # decodebin, audioconvert, audioresample, opusenc
  gstreamer1.0-plugins-good  # level (audio-level-meta), rtpopuspay, udpsink
  ffmpeg           # RTP sender without levels (listen tests)
  chromium         # headless browser for the dashboard test
  curl             # HTTP API calls in the ingest test
  python3-prometheus-client  # parses GET /metrics in the metrics test
  libhiredis-dev   # Redis client of the multi-node mode (serve --redis)
  redis-server     # the Redis of the multi-node tests (started by each test on a free port)
  libgstreamer1.0-dev               # GStreamer core (CallWebRTC's webrtcbin pipeline)
  libgstreamer-plugins-base1.0-dev  # appsrc (gstreamer-app-1.0), SDP messages (gstreamer-sdp-1.0)
  libgstreamer-plugins-bad1.0-dev   # the WebRTC library (gstreamer-webrtc-1.0)
  gstreamer1.0-plugins-bad  # webrtcbin, DTLS and SRTP elements
  gstreamer1.0-nice         # libnice's ICE for webrtcbin
  janus            # the SFU of the sidecar's real test (tools/sidecar/janus_trial.py)
  gcc              # builds that test's loopback shim for Janus (tools/sidecar/unloopback.c)
  iproute2         # ip: brings up loopback in that test's network namespace
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    echo "install-deps: swift is at /opt/swift/usr/bin; add it to PATH" >&2
  else
    echo "install-deps: no Swift toolchain found (Swift 6 is needed)" >&2
    exit 1
  fi
fi
