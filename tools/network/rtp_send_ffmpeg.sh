#!/usr/bin/env bash
# Sends an audio file as Opus RTP (RFC 7587, no header extensions), in real time, with ffmpeg.
#
#   tools/network/rtp_send_ffmpeg.sh FILE HOST PORT [SSRC]
#
# HOST is 127.0.0.1 or ::1 (loopback only in tests). SSRC is decimal (default: random).
# ffmpeg writes the SDP of the stream to standard output (not needed by activespeaker listen).
set -euo pipefail
file=$1 host=$2 port=$3 ssrc=${4:-}
case $host in *:*) url="rtp://[$host]:$port" ;; *) url="rtp://$host:$port" ;; esac
options=()
[ -n "$ssrc" ] && options+=(-ssrc "$((ssrc))")
exec ffmpeg -hide_banner -loglevel error -nostdin -re -i "$file" -ac 1 -ar 48000 -c:a libopus -b:a 32k \
  -frame_duration 20 "${options[@]}" -f rtp "$url" >/dev/null
