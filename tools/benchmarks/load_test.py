#!/usr/bin/env python3
"""Load test of the room server: ROOMS rooms x CLIENTS file-backed `join` clients for SECONDS.

Every client publishes a looped espeak-ng file in which its participant talks in its own slot of a
cycle (slot i of CLIENTS, SLOT seconds each: speech, then a pause), so each room has a turn every
SLOT seconds. The script starts `activespeaker serve` on loopback (free ports), creates the rooms
through the HTTP API, starts all clients at once, waits, stops them and checks:

  - every client of a room received the same speaker-changed sequence, which is the sequence the
    server logged for that room (nothing lost, nothing reordered), after the room's last join; a
    client that leaves stops reading at once, so it may miss the changes at the end that the server
    sent as it left (no earlier than LEAVE_MARGIN before its `left`, on the client's clock);
  - every client received forwarded packets from each other client of its room;
  - the named speakers follow the script's rotation (each change names the slot's speaker).

It reports the server's CPU time per participant (user + system, from /proc, over the whole run)
and writes a JSON summary with --json FILE. Exit status 0 when every
check passes, 1 otherwise.

With --nodes N (N > 1) it starts a redis-server on a free port and N `serve` nodes joined through it
(docs/call.md, "Several nodes"); the rooms are created through the first node's API (each placed on
the least-loaded node), every client connects to node (client number mod N) with the others as
fallbacks, so most are redirected to their room's node, and the CPU figures are given per node.

With --kill-after SECONDS (and --nodes > 1) the node hosting the most rooms is killed with SIGKILL
that long into the run: its clients must reconnect (the time from their `reconnecting` to their
`reconnected` line is reported) and name speakers again from the node that claimed the room; every
other client must notice nothing (no `reconnecting`) and see its room's sequence in full.

Usage: tools/benchmarks/load_test.py [--rooms 10] [--clients 5] [--seconds 180] [--slot 4] [--nodes 1]
                          [--kill-after SECONDS] [--binary .build/release/activespeaker] [--json FILE]
                          [--config KEY=VALUE ...] [--record DIR] [--levels-only] [--media-priority realtime|normal]
                          [--media-workers N]
Loopback only; needs espeak-ng and sox (tools/install-deps.sh), and redis-server for --nodes.
"""
import argparse, json, os, signal, socket, subprocess, sys, tempfile, time, urllib.request

VOICES = ["en-us", "en-gb+f3", "en+m3", "en-gb+f4", "en+m7", "en-us+f2", "en+m1", "en-gb+f1"]
LINES = [
    "the quarterly numbers look better than we expected",
    "i think we should ship the release next tuesday",
    "could you send me the notes from the design review",
    "the customer asked about the pricing for large teams",
    "let us move the planning meeting to thursday morning",
    "the new build fixes the crash on older machines",
    "we still need a decision on the hiring budget",
    "the test results came back clean this time",
]
SECRET = "load-test-secret-0123456789"
# Seconds before a client's `left` from which a change the server sent may not have reached it.
LEAVE_MARGIN = 0.5


def run(*command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def make_files(work, clients, slot):
    """One file per participant: speech in its slot of the cycle, silence elsewhere (16 kHz)."""
    cycle = clients * slot
    paths = []
    for index in range(clients):
        raw, speech, path = (os.path.join(work, f"{name}{index}.wav") for name in ("raw", "speech", "p"))
        run("espeak-ng", "-v", VOICES[index % len(VOICES)], "-s", "165", "-w", raw, LINES[index % len(LINES)])
        # At most slot - 1 s of speech, then silence to the end of the slot, placed at the slot's start.
        run("sox", raw, "-r", "16000", "-c", "1", "-b", "16", speech, "trim", "0", str(slot - 1))
        before, after = index * slot + 0.5, None
        length = float(run("soxi", "-D", speech).stdout)
        after = cycle - before - length
        run("sox", speech, path, "pad", f"{before}", f"{max(after, 0)}")
        paths.append(path)
    return paths, cycle


def api(port, method, path, token, body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status, answer.read().decode()


def cpu_seconds(pid):
    """User + system seconds of a process (clock ticks from /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_listening(output, deadline):
    """The `listening` line of a `serve` (its HTTP port, its media thread's priority), or None by the deadline."""
    while time.time() < deadline:
        output.seek(0)
        for line in output:
            if '"listening"' in line:
                return json.loads(line)
        time.sleep(0.05)
    return None


def saw_sequence(seen, expected, left_at):
    """Whether a client that saw `seen` ([(participant, client time)]) saw the server's `expected`
    ([(participant, room time)]) in order and in one piece, or all of it up to changes sent as it left
    (`left_at`, client time): on the client's clock (the offset of the last change both have) no
    earlier than LEAVE_MARGIN before it left."""
    names = [name for name, _ in seen]
    wanted = [name for name, _ in expected]
    if any(names[i:i + len(wanted)] == wanted for i in range(len(names) - len(wanted) + 1)):
        return True
    if left_at is None:
        return False
    for cut in range(len(wanted) - 1, 0, -1):
        # The first `cut` changes are the last the client saw; the rest came as it left.
        if names[len(names) - cut:] == wanted[:cut] and len(names) >= cut:
            offset = seen[-1][1] - expected[cut - 1][1]
            return expected[cut][1] + offset >= left_at - LEAVE_MARGIN
    return False


def collapse(names):
    out = []
    for name in names:
        if name is not None and (not out or out[-1] != name):
            out.append(name)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=10)
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--slot", type=float, default=4)
    parser.add_argument("--binary", default=".build/release/activespeaker")
    parser.add_argument("--nodes", type=int, default=1, help="serve nodes joined through Redis (default 1: no Redis)")
    parser.add_argument("--kill-after", type=float, default=None,
                        help="with --nodes: kill -9 the node hosting the most rooms this many seconds in")
    parser.add_argument("--json")
    parser.add_argument("--record", metavar="DIR", help="serve --record DIR: each room as the engine heard it")
    parser.add_argument("--levels-only", action="store_true",
                        help="serve --levels-only: the engine hears the packets' RFC 6464 levels, nothing is decoded")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="engine setting passed to every serve node (repeatable), e.g. vad.resumeGate=false")
    parser.add_argument("--media-workers", type=int,
                        help="serve --media-workers N for every node: engine threads, decoding included (default: serve's, 1)")
    parser.add_argument("--media-priority", choices=["realtime", "normal"],
                        help="serve --media-priority for every node (default: serve's, realtime)")
    parser.add_argument("--min-turns", type=int, default=None,
                        help="turns each room must name (default: half the slots, at least 2)")
    options = parser.parse_args()
    if not os.access(options.binary, os.X_OK):
        sys.exit(f"load_test: {options.binary} not found; build it (swift build -c release)")

    work = tempfile.mkdtemp(prefix="load-test-")
    files, cycle = make_files(work, options.clients, options.slot)
    redis = None
    cluster = []
    if options.nodes > 1:
        redis_port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while subprocess.run(["redis-cli", "-p", str(redis_port), "ping"], capture_output=True).stdout.strip() != b"PONG":
            if time.time() > deadline:
                sys.exit("load_test: redis-server did not start")
            time.sleep(0.05)
        cluster = ["--redis", f"redis://127.0.0.1:{redis_port}"]
    servers, server_outs, ports, priorities = [], [], [], []
    clients = []
    try:
        for node in range(options.nodes):
            server_out = open(os.path.join(work, f"server{node + 1}.jsonl"), "w+")
            server_outs.append(server_out)
            servers.append(subprocess.Popen(
                [options.binary, "serve", "--listen", "127.0.0.1:0", "--secret", SECRET,
                 "--max-participants", str(options.clients + 1),
                 # every client connects from 127.0.0.1: lift the per-address limit above their number
                 "--max-connections-per-address", str(max(64, options.rooms * options.clients + 16))]
                + (cluster + ["--node-id", f"n{node + 1}"] if cluster else [])
                + [argument for setting in options.config for argument in ("--config", setting)]
                + (["--media-priority", options.media_priority] if options.media_priority else [])
                + (["--levels-only"] if options.levels_only else [])
                + (["--media-workers", str(options.media_workers)] if options.media_workers else [])
                + (["--record", os.path.join(options.record, f"n{node + 1}")] if options.record else []),
                stdout=server_out, stderr=subprocess.DEVNULL))
            listening = wait_for_listening(server_out, time.time() + 20)
            if listening is None:
                sys.exit(f"load_test: serve (node {node + 1}) did not start")
            ports.append(listening["http"])
            priorities.append(listening.get("mediaPriority"))
            if listening.get("realtimeRefused"):
                print(f"load_test: node {node + 1}'s media thread runs at normal priority: {listening['realtimeRefused']}",
                      file=sys.stderr)
        if cluster:
            # Every node has seen the others' records (their heartbeat), so placement sees them all.
            deadline = time.time() + 10
            while time.time() < deadline:
                health = json.load(urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/v1/health"))
                if len(health["cluster"]["nodes"]) == options.nodes:
                    break
                time.sleep(0.1)
        port = ports[0]

        def token(room, participant, role="publisher"):
            return run(options.binary, "token", "--secret", SECRET, "--room", room, "--participant", participant,
                       "--role", role).stdout.strip()

        admin = token("*", "admin", "moderator")
        rooms = [f"load{index}" for index in range(options.rooms)]
        placement = {}
        for room in rooms:
            status, answer = api(port, "POST", "/v1/rooms", admin, {"roomId": room})
            assert status == 201, status
            placement[room] = json.loads(answer).get("node", "n1")
        tokens = {(room, index): token(room, f"p{index}") for room in rooms for index in range(options.clients)}
        print(f"load_test: {options.rooms} rooms x {options.clients} clients for {options.seconds:.0f} s "
              f"(turn every {options.slot:g} s)", file=sys.stderr)
        cpu_start = [cpu_seconds(server.pid) for server in servers]
        started = time.time()
        for room_index, room in enumerate(rooms):
            for index in range(options.clients):
                out = open(os.path.join(work, f"{room}-p{index}.jsonl"), "w")
                first = (room_index * options.clients + index) % len(ports)
                urls = [f"ws://127.0.0.1:{ports[(first + k) % len(ports)]}" for k in range(len(ports))]
                clients.append((room, index, out, subprocess.Popen(
                    [options.binary, "join", "--room", room,
                     "--token", tokens[(room, index)], "--mic", files[index], "--loop",
                     "--duration", str(options.seconds)] + [a for url in urls for a in ("--server", url)],
                    stdout=out, stderr=subprocess.STDOUT)))
        last_progress = 0
        killed = None
        node_cpu = [0.0] * len(servers)
        while any(process.poll() is None for *_, process in clients):
            elapsed = time.time() - started
            if options.kill_after is not None and killed is None and elapsed >= options.kill_after and len(servers) > 1:
                counts = [sum(1 for room in rooms if placement[room] == f"n{node + 1}") for node in range(len(servers))]
                killed = counts.index(max(counts))
                node_cpu[killed] = cpu_seconds(servers[killed].pid) - cpu_start[killed]
                servers[killed].kill()
                print(f"load_test: killed node n{killed + 1} ({counts[killed]} rooms) at {elapsed:.1f} s", file=sys.stderr)
            if sys.stderr.isatty() and elapsed - last_progress >= 1:
                print(f"\rload_test: {elapsed:5.0f} / {options.seconds:.0f} s", end="", file=sys.stderr)
                last_progress = elapsed
            if elapsed > options.seconds + 30:
                break
            time.sleep(0.2)
        if sys.stderr.isatty():
            print(file=sys.stderr)
        wall = time.time() - started
        for node, (server, start) in enumerate(zip(servers, cpu_start)):
            if node != killed:
                node_cpu[node] = cpu_seconds(server.pid) - start
        server_cpu = sum(node_cpu)
    finally:
        for *_, process in clients:
            if process.poll() is None:
                process.kill()
        for server in servers:
            server.send_signal(signal.SIGINT)
        for server in servers:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        if redis is not None:
            # SIGKILL: a redis-server started by a process that blocks SIGTERM (a test runner's thread)
            # inherits the mask and never sees SIGTERM; it keeps nothing worth a clean shutdown.
            redis.kill()
            redis.wait(timeout=10)

    node_events = []
    for server_out in server_outs:
        server_out.seek(0)
        node_events.append([json.loads(line) for line in server_out if line.startswith("{")])
    server_events = [event for events in node_events for event in events]
    failures = []
    per_room = {}
    failovers = []
    moved = {room for room in rooms if killed is not None and placement[room] == f"n{killed + 1}"}
    for room in rooms:
        # The room's log on the node hosting it last (for a room of the killed node: the node that
        # claimed it), in order; the changes every client must have seen are those after the last join
        # and before the first leave.
        hosts = [events for events in node_events
                 if any(e.get("type") == "room-opened" and e.get("room") == room for e in events)]
        if room in moved:
            hosts = [events for node, events in enumerate(node_events) if node != killed and events in hosts]
        log = [e for e in (hosts[-1] if hosts else []) if e.get("room") == room]
        joined_at = max((i for i, e in enumerate(log) if e.get("type") == "participant-joined"), default=-1)
        left_at = min((i for i, e in enumerate(log) if e.get("type") == "participant-left"), default=len(log))
        logged = [e.get("participant") for e in log if e.get("type") == "speaker-changed"]
        expected_timed = [(e.get("participant"), e.get("t", 0.0)) for e in log[joined_at + 1:left_at]
                          if e.get("type") == "speaker-changed"]
        expected = [name for name, _ in expected_timed]
        for (client_room, index, out, process) in clients:
            if client_room != room:
                continue
            out.close()
            events = [json.loads(line) for line in open(out.name) if line.startswith("{")]
            if process.returncode != 0:
                failures.append(f"{room}/p{index}: exit status {process.returncode}")
            left = next((e for e in events if e.get("type") == "left"), None)
            others = {f"p{other}" for other in range(options.clients) if other != index}
            if left is None or set(left.get("packets", {})) != others or min(left["packets"].values() or [0]) < 100:
                failures.append(f"{room}/p{index}: forwarded packets {left and left.get('packets')}")
            reconnecting = next((e["t"] for e in events if e.get("type") == "reconnecting"), None)
            reconnected = next((e["t"] for e in events if e.get("type") == "reconnected"), None)
            if room in moved:
                if reconnecting is None or reconnected is None:
                    failures.append(f"{room}/p{index}: its node was killed and it did not reconnect")
                    continue
                failovers.append(reconnected - reconnecting)
            elif reconnecting is not None:
                failures.append(f"{room}/p{index}: lost its connection at {reconnecting} s, its node was not killed")
            seen_timed = [(e.get("participant"), e.get("t", 0.0)) for e in events if e.get("type") == "speaker-changed"]
            seen = [name for name, _ in seen_timed]
            if not saw_sequence(seen_timed, expected_timed, left and left.get("t")):
                failures.append(f"{room}/p{index}: saw {collapse(seen)[:10]}..., the server sent {collapse(expected)[:10]}...")
        named = collapse(expected)
        rotation_breaks = sum(1 for a, b in zip(named, named[1:]) if int(b[1:]) != (int(a[1:]) + 1) % options.clients)
        per_room[room] = {"changes": len(logged), "checkedChanges": len(expected), "turns": len(named),
                          "rotationBreaks": rotation_breaks}
        if len(named) < (options.min_turns if options.min_turns is not None
                         else max(2, int(options.seconds / options.slot) // 2)):
            failures.append(f"{room}: only {len(named)} turns named in {options.seconds:.0f} s")
    participants = options.rooms * options.clients
    stats_lines = [e for e in server_events if e.get("type") == "stats"]
    stats = {key: sum(e.get(key, 0) for e in stats_lines) for key in (stats_lines[0] if stats_lines else {}) if key != "type"}
    per_node = {}
    for node, cpu in enumerate(node_cpu):
        name = f"n{node + 1}"
        node_participants = options.clients * sum(1 for room in rooms if placement[room] == name)
        per_node[name] = {
            "rooms": sum(1 for room in rooms if placement[room] == name), "participants": node_participants,
            "cpuSeconds": round(cpu, 2), "cpuPercentOfOneCore": round(100 * cpu / wall, 1),
            "cpuPerParticipantPercent": round(100 * cpu / wall / node_participants, 3) if node_participants else None,
            "mediaPriority": priorities[node],
        }
    summary = {
        "rooms": options.rooms, "clientsPerRoom": options.clients, "nodes": options.nodes, "seconds": round(wall, 1),
        "levelsOnly": options.levels_only,
        "mediaWorkers": options.media_workers or 1,
        "serverCPUSeconds": round(server_cpu, 2),
        "serverCPUPerParticipantPercent": round(100 * server_cpu / wall / participants, 3),
        "serverCPUPercentOfOneCore": round(100 * server_cpu / wall, 1),
        "perNode": per_node, "mediaStats": stats, "perRoom": per_room, "failures": failures,
    }
    if killed is not None:
        ordered = sorted(failovers)
        summary["killedNode"] = f"n{killed + 1}"
        summary["failoverSeconds"] = {
            "clients": len(ordered), "median": round(ordered[len(ordered) // 2], 3) if ordered else None,
            "max": round(ordered[-1], 3) if ordered else None}
    print(f"load_test: server CPU {server_cpu:.1f} s over {wall:.0f} s = {100 * server_cpu / wall:.1f} % of one core, "
          f"{summary['serverCPUPerParticipantPercent']:.3f} % per participant ({participants} participants); "
          f"packets accepted {stats.get('accepted')}, forwarded {stats.get('forwarded')}")
    if options.nodes > 1:
        for name, node in per_node.items():
            print(f"load_test: node {name}: {node['rooms']} rooms, {node['participants']} participants, "
                  f"CPU {node['cpuPercentOfOneCore']:.1f} % of one core, "
                  f"{node['cpuPerParticipantPercent'] or 0:.3f} % per participant")
    if killed is not None:
        failover = summary["failoverSeconds"]
        print(f"load_test: node n{killed + 1} killed: {failover['clients']} clients back in their rooms, "
              f"reconnecting to reconnected median {failover['median']} s, max {failover['max']} s")
    turns = sum(r["turns"] for r in per_room.values())
    breaks = sum(r["rotationBreaks"] for r in per_room.values())
    print(f"load_test: {turns} turns named across rooms, {breaks} out of the script's rotation; "
          f"{len(failures)} failures")
    for failure in failures[:20]:
        print("  " + failure)
    if options.json:
        with open(options.json, "w") as out:
            json.dump(summary, out, indent=1)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
