#!/usr/bin/env python3
"""The sidecar's real trial: Janus (Debian's janus) with three headless Chromium publishers whose fake
microphones play a meeting's files, `activespeaker serve --janus` mirroring Janus's rooms, and the
sidecar's speaker sequence compared with `activespeaker detect` on the same files.

Everything runs in a network namespace with only loopback (`unshare --net`, so root): Janus skips loopback
interfaces when gathering ICE candidates, so it runs with unloopback.so (LD_PRELOAD) that clears the flag,
and Chromium with --allow-loopback-in-peer-connection. Nothing leaves the namespace.

Scenarios (--scenario):
  turns            the meeting once; the last turn's talker leaves mid-turn (a VideoRoom "leave"): the sequence,
                   the delay of each change over detect, and how long after the leave the room says nobody.
  restart-sidecar  the sidecar is stopped mid-meeting and started again: how long until every publisher is
                   forwarded to it again, and whether any forwarder is left that it does not use.
  restart-janus    Janus is stopped mid-meeting and started again; the pages publish again: how long from
                   Janus answering until every publisher is forwarded to the sidecar again.

Prints one JSON object per run, and with --json writes {"runs": [...]} to a file.

  sudo python3 tools/sidecar/janus_trial.py --binary .build/release/activespeaker \\
      --meeting Fixtures/meetings/m1-clean --scenario turns --runs 5
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
JANUS_HTTP = "http://127.0.0.1:8088/janus"
ROOM = 1234
ROOM_SECRET = "trial-room-secret"
RTP_PORT = 5004
EVENTS = "127.0.0.1:8089"
PAGES_PORT = 8090


def log(message):
    print(f"janus_trial: {message}", file=sys.stderr, flush=True)


def reexec_in_namespace():
    """Runs this script again in a new network namespace (only loopback), unless it already is in one."""
    if os.environ.get("JANUS_TRIAL_NETNS") == "1":
        return
    if os.geteuid() != 0:
        sys.exit("janus_trial: needs root (unshare --net)")
    env = dict(os.environ, JANUS_TRIAL_NETNS="1")
    os.execvpe("unshare", ["unshare", "--net", sys.executable] + sys.argv, env)


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


class Reports:
    """What the publisher pages post (joined, capturing, left, ...), with the wall time they posted it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def add(self, item):
        with self.lock:
            self.items.append(item)

    def first(self, display, step):
        with self.lock:
            return next((r for r in self.items if r["display"] == display and r["step"] == step), None)

    def all(self, display, step):
        with self.lock:
            return [r for r in self.items if r["display"] == display and r["step"] == step]


def serve_pages(reports):
    """Serves publisher.html and takes the pages' reports, on 127.0.0.1:PAGES_PORT."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=HERE, **kwargs)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                report = json.loads(body)
                report["received"] = time.time()
                reports.add(report)
            except ValueError:
                pass
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    socketserver.TCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", PAGES_PORT), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Sidecar:
    """`activespeaker serve --janus`, its JSON lines kept with the wall time each arrived."""

    def __init__(self, binary, workdir, levels, record=False):
        self.lines = []
        self.lock = threading.Lock()
        command = [
            binary, "serve", "--listen", "127.0.0.1:8080", "--rtp", f"127.0.0.1:{RTP_PORT}", "--secret", "janus-trial-secret-0123",
            "--janus", JANUS_HTTP, "--janus-credentials", os.path.join(workdir, "credentials.json"), "--janus-events", EVENTS,
            "--media-priority", "normal",
        ]
        if levels:
            command.append("--levels-only")
        if record:
            command += ["--record", os.path.join(workdir, "recording")]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=open(os.path.join(workdir, "serve.err"), "a"), text=True)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            now = time.time()
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event["wall"] = now
            with self.lock:
                self.lines.append(event)

    def events(self, kind):
        with self.lock:
            return [e for e in self.lines if e.get("type") == kind]

    def wait_for(self, predicate, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                found = next((e for e in self.lines if predicate(e)), None)
            if found:
                return found
            time.sleep(0.02)
        return None

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def write_janus_config(directory, events_url):
    os.makedirs(directory, exist_ok=True)
    lib = "/usr/lib/x86_64-linux-gnu/janus"
    plugins = ["audiobridge", "duktape", "echotest", "lua", "nosip", "recordplay", "sip", "streaming", "textroom", "videocall", "voicemail"]
    with open(os.path.join(directory, "janus.jcfg"), "w") as f:
        f.write(f"""general: {{
  configs_folder = "{directory}"
  plugins_folder = "{lib}/plugins"
  transports_folder = "{lib}/transports"
  events_folder = "{lib}/events"
  loggers_folder = "{lib}/loggers"
  debug_level = 3
  session_timeout = 60
}}
media: {{ rtp_port_range = "20000-40000" }}
nat: {{ nice_debug = false }}
plugins: {{ disable = "{','.join(f'libjanus_{p}.so' for p in plugins)}" }}
transports: {{ disable = "libjanus_websockets.so,libjanus_pfunix.so,libjanus_mqtt.so,libjanus_nanomsg.so,libjanus_rabbitmq.so" }}
loggers: {{ disable = "libjanus_jsonlog.so" }}
events: {{
  broadcast = true
  disable = "libjanus_gelfevh.so,libjanus_mqttevh.so,libjanus_nanomsgevh.so,libjanus_rabbitmqevh.so,libjanus_wsevh.so"
}}
""")
    with open(os.path.join(directory, "janus.transport.http.jcfg"), "w") as f:
        f.write('general: { json = "compact" base_path = "/janus" http = true port = 8088 https = false }\nadmin: { admin_http = false }\ncors: { }\n')
    with open(os.path.join(directory, "janus.plugin.videoroom.jcfg"), "w") as f:
        f.write(f'general: {{ }}\nroom-{ROOM}: {{ description = "Trial" secret = "{ROOM_SECRET}" publishers = 6 audiocodec = "opus" }}\n')
    with open(os.path.join(directory, "janus.eventhandler.sampleevh.jcfg"), "w") as f:
        f.write(f'general: {{ enabled = true events = "plugins" grouping = true json = "compact" backend = "{events_url}" }}\n')


class Janus:
    def __init__(self, workdir, shim):
        self.workdir = workdir
        self.shim = shim
        self.process = None

    def start(self):
        config = os.path.join(self.workdir, "janus")
        env = dict(os.environ, LD_PRELOAD=self.shim)
        log_file = open(os.path.join(self.workdir, "janus.log"), "a")
        self.process = subprocess.Popen(["janus", "-F", config, "-C", os.path.join(config, "janus.jcfg")], env=env, stdout=log_file, stderr=log_file)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                urllib.request.urlopen(JANUS_HTTP + "/info", timeout=1).read()
                return time.time()
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("Janus did not answer within 15 s (see janus.log)")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def janus_request(body):
    """One VideoRoom request on a fresh session (the harness's own view of Janus)."""

    def post(path, payload):
        payload = dict(payload, transaction=str(time.time()))
        request = urllib.request.Request(JANUS_HTTP + path, data=json.dumps(payload).encode(), method="POST")
        return json.loads(urllib.request.urlopen(request, timeout=5).read())

    session = post("", {"janus": "create"})["data"]["id"]
    handle = post(f"/{session}", {"janus": "attach", "plugin": "janus.plugin.videoroom"})["data"]["id"]
    answer = post(f"/{session}/{handle}", {"janus": "message", "body": body})
    post(f"/{session}", {"janus": "destroy"})
    return answer["plugindata"]["data"]


def forwarders_to_sidecar():
    data = janus_request({"request": "listforwarders", "room": ROOM, "secret": ROOM_SECRET})
    return [
        (publisher["publisher_id"], forwarder.get("ssrc"))
        for publisher in data.get("publishers", [])
        for forwarder in publisher.get("forwarders", [])
        if forwarder.get("port") == RTP_PORT
    ]


def start_browser(workdir, name, wav, extra_query="", processing=False):
    profile = os.path.join(workdir, f"profile-{name}")
    url = (
        f"http://127.0.0.1:{PAGES_PORT}/publisher.html?janus={JANUS_HTTP}&room={ROOM}&display={name}"
        f"&report=http://127.0.0.1:{PAGES_PORT}/report{extra_query}{'&processing=1' if processing else ''}"
    )
    command = [
        "chromium", "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--no-first-run",
        "--no-default-browser-check", "--disable-background-networking", "--disable-dev-shm-usage",
        "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={wav}",
        "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required", url,
    ]
    log_file = open(os.path.join(workdir, f"chromium-{name}.log"), "w")
    return subprocess.Popen(command, stdout=log_file, stderr=log_file)


def reference(binary, files):
    """`detect` on the files: the floor's changes as (seconds, name or None)."""
    output = run([binary, "detect"] + files).stdout
    changes = []
    for line in output.splitlines():
        event = json.loads(line)
        if event.get("type") == "dominant":
            changes.append((event["t"], event["stream"]))
    return changes


def leaving_moment(meeting, changes):
    """The last turn's talker, and a moment inside that turn (0.5 s in from either end) as far as can be from
    anyone else's speech (the meeting's speech.rttm), for that talker to leave at."""
    speakers = [c for c in changes if c[1] is not None]
    start, leaver = speakers[-1]
    end = next((t for t, _ in changes if t > start), max(t for t, _ in changes))
    others = []
    rttm = os.path.join(meeting, "speech.rttm")
    if os.path.exists(rttm):
        for line in open(rttm):
            fields = line.split()
            if len(fields) >= 8 and fields[7] != leaver:
                others.append((float(fields[3]), float(fields[3]) + float(fields[4])))

    def distance(t):
        return min([0 if a <= t <= b else min(abs(t - a), abs(t - b)) for a, b in others] or [10])

    candidates = [start + 0.5 + 0.1 * i for i in range(max(1, int((end - start - 1.0) / 0.1)))]
    return leaver, round(max(candidates, key=distance), 2)


def named(changes):
    """The names in order, nobody and repeats left out."""
    sequence = []
    for _, name in changes:
        if name is not None and (not sequence or sequence[-1] != name):
            sequence.append(name)
    return sequence


def one_run(args, index, workdir):
    reports = Reports()
    pages = serve_pages(reports)
    names = sorted(os.path.splitext(f)[0] for f in os.listdir(args.meeting) if f.endswith(".flac"))
    flacs = [os.path.join(args.meeting, f"{n}.flac") for n in names]
    wavs = {}
    for name, flac in zip(names, flacs):
        wavs[name] = os.path.join(workdir, f"{name}.wav")
        run(["ffmpeg", "-loglevel", "error", "-y", "-i", flac, "-ar", "48000", wavs[name]])
    changes = reference(args.binary, flacs)
    meeting_seconds = max(t for t, _ in changes)
    speakers = [c for c in changes if c[1] is not None]
    expected = named(changes)
    with open(os.path.join(workdir, "credentials.json"), "w") as f:
        json.dump({"roomSecret": ROOM_SECRET}, f)
    shim = os.path.join(workdir, "unloopback.so")
    run(["cc", "-shared", "-fPIC", "-O2", "-o", shim, os.path.join(HERE, "unloopback.c"), "-ldl"])
    write_janus_config(os.path.join(workdir, "janus"), f"http://{EVENTS}/janus/events")
    result = {"run": index, "scenario": args.scenario, "mode": "levels" if args.levels else "decode", "expected": expected}
    sidecar = Sidecar(args.binary, workdir, args.levels, args.record)
    janus = Janus(workdir, shim)
    browsers = []
    try:
        if not sidecar.wait_for(lambda e: e.get("type") == "listening", 15):
            raise RuntimeError("the sidecar did not start (see serve.err)")
        janus.start()
        # The last turn's talker leaves during it, where nobody else speaks (turns scenario).
        leaver, leave_at = leaving_moment(args.meeting, changes)
        result["leaveAt"] = leave_at
        # The pages open their microphones together (each its file from the start), --stagger ms apart.
        start_at = int((time.time() + 6) * 1000)
        for position, name in enumerate(names):
            extra = f"&leaveAt={leave_at:.2f}" if args.scenario == "turns" and name == leaver else ""
            extra += f"&startAt={start_at + position * args.stagger}"
            browsers.append(start_browser(workdir, name, wavs[name], extra, args.browser_processing))
        deadline = time.time() + 40
        while time.time() < deadline and not all(reports.first(n, "capturing") for n in names):
            time.sleep(0.05)
        capture = {n: (reports.first(n, "capturing") or {}).get("time", 0) / 1000 for n in names}
        if not all(capture.values()):
            raise RuntimeError(f"not every page captured: {[n for n in names if not capture[n]]}")
        result["captureSpread"] = round(max(capture.values()) - min(capture.values()), 3)
        start = min(capture.values())
        # The meeting as the pages played it: each file from its own capture start. Its floor is what a listener
        # of the same audio at the same moments hears; the aligned files' floor can differ where a turn and a
        # backchannel overlap by less than the spread.
        played = []
        os.makedirs(os.path.join(workdir, "played"), exist_ok=True)
        for name in names:
            shifted = os.path.join(workdir, "played", f"{name}.flac")
            delay = int(round((capture[name] - start) * 1000))
            run(["ffmpeg", "-loglevel", "error", "-y", "-i", wavs[name], "-af", f"adelay={delay}", "-ar", "16000", shifted])
            played.append(shifted)
        played_changes = reference(args.binary, played)
        result["expectedAsPlayed"] = named(played_changes)
        if args.scenario == "restart-sidecar":
            wait_until(start + 8)
            sidecar.stop()
            stopped = time.time()
            sidecar = Sidecar(args.binary, workdir, args.levels)
            listening = sidecar.wait_for(lambda e: e.get("type") == "listening", 15)
            recovered = wait_forwarded(sidecar, names, after=stopped, timeout=20)
            result["recoverySeconds"] = round(recovered - listening["wall"], 3) if recovered and listening else None
            wait_until(time.time() + 1)
            left = forwarders_to_sidecar()
            ours = {e["participant"]: e["ssrc"] for e in sidecar.events("janus-forwarding") if e["wall"] >= stopped}
            result["forwarders"] = len(left)
            result["staleForwarders"] = len([f for f in left if f[1] not in ours.values()])
        elif args.scenario == "restart-janus":
            wait_until(start + 8)
            janus.stop()
            stopped = time.time()
            answering = janus.start()
            recovered = wait_forwarded(sidecar, names, after=stopped, timeout=30)
            result["recoverySeconds"] = round(recovered - answering, 3) if recovered else None
            wait_until(time.time() + 1)
            result["forwarders"] = len(forwarders_to_sidecar())
        else:
            wait_until(start + meeting_seconds + 1.5)
            # Participants are named by their Janus ids; the forwarding lines give each one's display name. The
            # pages' files loop: what comes after the meeting's first pass is not compared.
            display = {e["participant"]: e.get("display") for e in sidecar.events("janus-forwarding") if e.get("display")}
            heard = [
                (e["wall"], display.get(e["participant"], e["participant"]) if e["participant"] else None)
                for e in sidecar.events("speaker-changed")
                if e["wall"] <= start + meeting_seconds + 1.0
            ]
            result["sequence"] = named(heard)
            result["sameSequence"] = result["sequence"] == expected
            result["sameSequenceAsPlayed"] = result["sequence"] == result["expectedAsPlayed"]
            # Every turn of the reference named in order, with other changes between (a backchannel or a leak the
            # live engine took for a turn: issue 28's streams apart, not the forwarding).
            remaining = iter(result["sequence"])
            result["turnsInOrder"] = all(name in remaining for name in result["expectedAsPlayed"])
            result["extraChanges"] = len(result["sequence"]) - len(result["expectedAsPlayed"])
            # Each named change against detect's on the files as played: the wall time of the sidecar's change
            # minus (the first capture's start + detect's time of the change).
            delays = []
            position = 0
            for t, name in [c for c in played_changes if c[1] is not None]:
                match = next((i for i in range(position, len(heard)) if heard[i][1] == name), None)
                if match is None:
                    break
                delays.append(heard[match][0] - (start + t))
                position = match + 1
            result["delays"] = [round(d, 3) for d in delays]
            result["medianDelay"] = round(statistics.median(delays), 3) if delays else None
            left = reports.first(leaver, "leaving")
            gone = [e for e in heard if left and e[0] >= left["time"] / 1000]
            nobody = next((e for e in sidecar.events("speaker-changed") if left and e["wall"] >= left["time"] / 1000 and e["participant"] is None), None)
            result["leaver"] = leaver
            result["nobodyAfterLeave"] = round(nobody["wall"] - left["time"] / 1000, 3) if nobody and left else None
            wait_until(time.time() + 1)
            result["forwardersAfterLeave"] = len([f for f in forwarders_to_sidecar()])
            result["publishersAfterLeave"] = len(names) - 1
            del gone
    finally:
        with open(os.path.join(workdir, "serve.jsonl"), "w") as f:
            for event in sidecar.lines:
                f.write(json.dumps(event) + "\n")
        with open(os.path.join(workdir, "reports.jsonl"), "w") as f:
            for report in reports.items:
                f.write(json.dumps(report) + "\n")
        for browser in browsers:
            browser.terminate()
        for browser in browsers:
            try:
                browser.wait(timeout=10)
            except subprocess.TimeoutExpired:
                browser.kill()
        sidecar.stop()
        janus.stop()
        pages.shutdown()
        pages.server_close()
    return result


def wait_until(moment):
    while time.time() < moment:
        time.sleep(min(0.05, max(0, moment - time.time())))


def wait_forwarded(sidecar, names, after, timeout):
    """The wall time by which every publisher had a `janus-forwarding` line after `after`; None if not in time."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        lines = [e for e in sidecar.events("janus-forwarding") if e["wall"] >= after]
        displays = {e.get("display") for e in lines}
        if all(n in displays for n in names):
            return max(next(e["wall"] for e in lines if e.get("display") == n) for n in names)
        time.sleep(0.05)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True, help="the activespeaker binary")
    parser.add_argument("--meeting", required=True, help="a folder of one FLAC per participant (Fixtures/meetings/m1-clean)")
    parser.add_argument("--scenario", choices=["turns", "restart-sidecar", "restart-janus"], default="turns")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--levels", action="store_true", help="the sidecar hears RFC 6464 levels only (serve --levels-only)")
    parser.add_argument("--json", help="write {\"runs\": [...]} here")
    parser.add_argument("--browser-processing", action="store_true",
                        help="the pages keep getUserMedia's echo cancellation, noise suppression and gain control on")
    parser.add_argument("--stagger", type=int, default=0,
                        help="milliseconds between the pages' microphone starts, in name order (default 0: together)")
    parser.add_argument("--record", action="store_true", help="the sidecar records what it heard (serve --record), kept with --keep")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder (logs) and print where")
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary)
    args.meeting = os.path.abspath(args.meeting)
    for tool in ["janus", "chromium", "ffmpeg", "cc", "ip"]:
        if shutil.which(tool) is None:
            sys.exit(f"janus_trial: {tool} is missing (bash tools/install-deps.sh)")
    reexec_in_namespace()
    # A stop (SIGTERM from a test's timeout, or Ctrl-C) unwinds through each run's cleanup: no Janus, Chromium
    # or sidecar is left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run(["ip", "link", "set", "lo", "up"])
    results = []
    for index in range(1, args.runs + 1):
        workdir = tempfile.mkdtemp(prefix="janus-trial-")
        try:
            result = one_run(args, index, workdir)
        except Exception as error:  # a failed run is reported, and the others still run
            result = {"run": index, "scenario": args.scenario, "error": str(error)}
        if args.keep:
            result["folder"] = workdir
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
