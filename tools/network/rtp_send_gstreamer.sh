#!/usr/bin/env bash
# Sends an audio file as Opus RTP (RFC 7587) with RFC 6464 audio levels (header extension id 1,
# one-byte form), in real time, with GStreamer.
#
#   tools/network/rtp_send_gstreamer.sh FILE HOST PORT [SSRC]
#
# HOST is 127.0.0.1 or ::1 (loopback only in tests). SSRC is decimal or 0x hex (default: random).
# Receive with: activespeaker listen --udp 127.0.0.1:PORT --mode levels --extmap-audio-level 1
# GStreamer 1.22 reports digital silence as level 59 and never sets the V flag.
set -euo pipefail
file=$1 host=$2 port=$3 ssrc=${4:-}
payloader=(rtpopuspay)
[ -n "$ssrc" ] && payloader+=("ssrc=$((ssrc))")
exec gst-launch-1.0 -q \
  filesrc location="$file" ! decodebin ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=1 \
  ! level audio-level-meta=true ! audioconvert ! opusenc frame-size=20 ! "${payloader[@]}" \
  ! 'application/x-rtp,extmap-1=(string)<"",urn:ietf:params:rtp-hdrext:ssrc-audio-level,"vad\=on">' \
  ! udpsink host="$host" port="$port" sync=true
