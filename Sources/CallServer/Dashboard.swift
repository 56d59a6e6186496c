/// The meeting page of a room: one tile per participant (name, mute state, level meter), the active
/// speaker's tile highlighted (blue border), "nobody" when nobody speaks. Self-contained: no outside
/// scripts, styles or fonts. It watches the room with `observe`: until "Join" it is not a participant,
/// and nobody sees it. "Join" takes part over WebRTC (docs/call.md, Browsers): a second WebSocket
/// joins with the page's token, offers an `RTCPeerConnection` with the chosen microphone
/// (getUserMedia; listen-only for a subscriber token), plays the room's audio, and mutes, unmutes and
/// leaves. `window.meeting` holds the call's state for tests.
enum Dashboard {
    static func page(room: String) -> String {
        template.replacingOccurrences(of: "__ROOM__", with: room)
    }

    /// The server's rooms (id, participants), each a link to its dashboard with the same token.
    /// Room ids and tokens are of URL- and HTML-safe characters (`AccessToken.idRule`, base64url).
    static func index(rooms: [(String, Int)], token: String) -> String {
        let items = rooms.map { room, count in
            #"<li><a href="/rooms/\#(room)?token=\#(token)">\#(room)</a> (\#(count) participant\#(count == 1 ? "" : "s"))</li>"#
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Rooms</title>
            <style>body{font-family:system-ui,sans-serif;margin:20px 24px;background:#111418;color:#e8eaed}a{color:#8ab4f8}</style>
            </head><body><h1>Rooms</h1>
            \(rooms.isEmpty ? "<p>No rooms.</p>" : "<ul id=\"rooms\">" + items.joined() + "</ul>")
            </body></html>
            """
    }

    private static let template = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Room __ROOM__</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>
        :root{--bg:#111418;--panel:#1c2027;--line:#2a303a;--text:#e8eaed;--dim:#9aa0a6;--speak:#2ecc71;--mute:#e5534b;--speaker:#3b82f6}
        *{box-sizing:border-box}
        body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:20px 24px;background:var(--bg);color:var(--text)}
        header{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
        h1{font-size:18px;font-weight:600;margin:0}
        #status{font-size:12px;color:var(--dim);border:1px solid var(--line);border-radius:999px;padding:2px 10px 2px 20px;position:relative}
        #status::before{content:"";position:absolute;left:8px;top:50%;width:7px;height:7px;margin-top:-3.5px;border-radius:50%;background:var(--dim)}
        body[data-state=connected] #status::before{background:var(--speak)}
        body[data-state=closed] #status::before{background:var(--mute)}
        #speaker{margin:14px 0 4px;font-size:15px;color:var(--dim)}
        #speaker-name{color:var(--text);font-weight:600}
        body.active #speaker-name{color:var(--speak)}
        #tiles{display:flex;flex-wrap:wrap;gap:12px;margin-top:10px}
        body[data-state=connected] #tiles:empty::before{content:"Nobody has joined yet.";color:var(--dim);font-size:14px}
        .tile{position:relative;width:200px;height:116px;border-radius:12px;background:var(--panel);padding:12px;
          border:2px solid var(--line);display:grid;grid-template-columns:40px 1fr;grid-template-rows:40px 1fr auto;
          column-gap:10px;align-items:center}
        .tile.speaking{border-color:var(--speaker);box-shadow:0 0 0 1px var(--speaker),0 0 16px rgba(59,130,246,.5)}
        .tile.speaking::after{content:"speaking";position:absolute;top:8px;right:10px;font-size:10px;font-weight:600;
          letter-spacing:.04em;text-transform:uppercase;color:#fff;background:var(--speaker);border-radius:999px;padding:1px 7px}
        .tile.me .name::after{content:" (you)";color:var(--dim);font-weight:400}
        #controls{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin-top:12px}
        #controls button,#controls select{font:inherit;font-size:13px;color:var(--text);background:var(--panel);
          border:1px solid var(--line);border-radius:8px;padding:5px 12px}
        #controls button{cursor:pointer} #controls button:disabled{opacity:.5;cursor:default}
        #join{background:var(--speaker);border-color:var(--speaker)} #leave{border-color:var(--mute);color:#ffb4ae}
        #call-status{font-size:12px;color:var(--dim)}
        .avatar{width:40px;height:40px;border-radius:50%;display:flex;align-items:center;justify-content:center;
          font-weight:700;font-size:15px;color:#fff;background:hsl(var(--hue,210),45%,38%)}
        .name{font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding-right:58px}
        .tile:not(.speaking) .name{padding-right:0}
        .state{grid-column:1/3;font-size:12px;color:var(--dim)}
        .state::before{content:"\25CF  ";color:var(--speak)}
        .tile[data-muted=true] .state{color:var(--mute)} .tile[data-muted=true] .state::before{color:var(--mute)}
        .meter{grid-column:1/3;height:8px;background:#2a2f38;border-radius:4px;overflow:hidden}
        .meter>div{height:100%;width:0;border-radius:4px;background:linear-gradient(90deg,#27ae60,#2ecc71 60%,#f1c40f 85%,#e74c3c);
          background-size:172px 100%;transition:width .15s}
        .tile[data-muted=true] .meter>div{background:#555}
        </style></head><body data-state="connecting">
        <header><h1>Room __ROOM__</h1><div id="status">connecting…</div></header>
        <div id="controls"><label for="mic" hidden id="mic-label">Microphone</label><select id="mic" title="Microphone"></select>
        <button id="join">Join</button><button id="mute" hidden>Mute</button><button id="leave" hidden>Leave</button>
        <span id="call-status"></span><audio id="remote" autoplay></audio></div>
        <div id="speaker">Speaking: <span id="speaker-name">nobody</span></div>
        <div id="tiles"></div>
        <ol id="history" hidden></ol>
        <script>
        "use strict";
        const room = "__ROOM__";
        const token = new URLSearchParams(location.search).get("token") || "";
        const tiles = new Map();
        function setStatus(text, state) {
          document.getElementById("status").textContent = text;
          if (state) document.body.dataset.state = state;
        }
        function describe(t) {
          t.querySelector(".state").textContent = (t.dataset.muted === "true" ? "muted" : "mic on") + (t.dataset.video === "true" ? " · video" : "");
        }
        function tile(p) {
          let t = tiles.get(p.id);
          if (!t) {
            t = document.createElement("div"); t.className = "tile"; t.id = "tile-" + p.id; t.dataset.participant = p.id;
            t.innerHTML = '<div class="avatar"></div><div class="name"></div><div class="state"></div><div class="meter"><div></div></div>';
            let hue = 0; for (const c of p.id) hue = (hue * 37 + c.charCodeAt(0)) % 360;
            t.style.setProperty("--hue", hue);
            document.getElementById("tiles").appendChild(t); tiles.set(p.id, t);
          }
          const name = p.displayName || p.id;
          t.querySelector(".name").textContent = name; t.title = name;
          t.querySelector(".avatar").textContent = name.split(/\s+/).filter(Boolean).slice(0, 2).map((w) => w[0].toUpperCase()).join("");
          t.dataset.muted = p.micMuted ? "true" : "false"; t.dataset.video = p.video ? "true" : "false";
          describe(t);
          return t;
        }
        function highlight(id, t) {
          for (const [pid, el] of tiles) el.classList.toggle("speaking", pid === id);
          document.body.classList.toggle("active", id !== null);
          document.getElementById("speaker-name").textContent = id === null ? "nobody" : (tiles.get(id)?.querySelector(".name").textContent || id);
          const li = document.createElement("li"); li.textContent = (id === null ? "-" : id) + "@" + t;
          document.getElementById("history").appendChild(li);
        }
        let failed = false, pinger = null, redirected = 0;
        // Several nodes: the room may live on another node, which a `redirect` names.
        function watch(url) {
        const ws = new WebSocket(url);
        ws.onopen = () => { ws.send(JSON.stringify({type: "observe", token})); pinger = setInterval(() => ws.send('{"type":"ping"}'), 5000); };
        // An error message stays: the server closes the connection right after it.
        ws.onclose = () => { clearInterval(pinger); if (redirected > 0 && ws.followed) return; if (!failed) setStatus("disconnected", "closed"); else document.body.dataset.state = "closed"; };
        ws.onmessage = (event) => {
          const m = JSON.parse(event.data);
          switch (m.type) {
          case "redirect":
            if (redirected++ < 5) { ws.followed = true; clearInterval(pinger); watch(m.url); }
            break;
          case "observing":
            setStatus("connected", "connected");
            for (const p of m.participants) tile(p);
            highlight(m.speakerId, 0); break;
          case "participant-joined": tile(m.participant).classList.toggle("me", m.participant.id === window.meeting?.participantId); break;
          case "participant-left": tiles.get(m.participantId)?.remove(); tiles.delete(m.participantId); break;
          case "mic-muted": { const t = tiles.get(m.participantId); if (t) { t.dataset.muted = String(m.muted); describe(t); } break; }
          case "stream-enabled": case "stream-disabled": {
            const t = tiles.get(m.participantId);
            if (t && m.kind === "video") { t.dataset.video = String(m.type === "stream-enabled"); describe(t); }
            break; }
          case "speaker-changed": highlight(m.participantId, m.t); break;
          case "audio-levels":
            for (const [pid, level] of Object.entries(m.levels)) {
              const bar = tiles.get(pid)?.querySelector(".meter>div");
              if (bar) bar.style.width = Math.max(0, Math.min(100, (level + 60) / 60 * 100)) + "%";
            }
            break;
          case "error": failed = true; setStatus("error " + m.code + ": " + m.message, "closed"); break;
          }
        };
        }
        const signalURL = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/signal?room=" + encodeURIComponent(room);
        watch(signalURL);

        // Taking part: a participant's own signalling connection and a WebRTC peer connection to the server.
        const claims = (() => { try { return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))); } catch (e) { return {}; } })();
        const listenOnly = claims.role === "subscriber";
        const meeting = window.meeting = {state: "idle", participantId: null, muted: false, pc: null, ws: null, errors: [], joinedAt: 0};
        const $ = (id) => document.getElementById(id);
        function callStatus(text) { $("call-status").textContent = text; }
        function controls() {
          const inCall = meeting.state !== "idle";
          $("join").hidden = inCall; $("mic").hidden = inCall || listenOnly; $("leave").hidden = !inCall;
          $("mute").hidden = !inCall || listenOnly; $("mute").textContent = meeting.muted ? "Unmute" : "Mute";
          $("join").textContent = listenOnly ? "Join (listen only)" : "Join";
        }
        async function listDevices() {
          if (!navigator.mediaDevices || listenOnly) return;
          const chosen = $("mic").value;
          const inputs = (await navigator.mediaDevices.enumerateDevices()).filter((d) => d.kind === "audioinput");
          $("mic").replaceChildren(...inputs.map((d, i) => { const o = document.createElement("option"); o.value = d.deviceId; o.textContent = d.label || "Microphone " + (i + 1); return o; }));
          if (chosen) $("mic").value = chosen;
        }
        function signal(message) { if (meeting.ws && meeting.ws.readyState === 1) meeting.ws.send(JSON.stringify(message)); }
        function setMuted(muted) {
          meeting.muted = muted;
          for (const sender of meeting.pc ? meeting.pc.getSenders() : []) if (sender.track) sender.track.enabled = !muted;
          controls();
        }
        function hangUp(why) {
          if (meeting.state === "idle") return;
          meeting.state = "idle"; clearInterval(meeting.pinger);
          if (meeting.pc) { meeting.pc.close(); meeting.closedState = meeting.pc.connectionState; }
          if (meeting.stream) meeting.stream.getTracks().forEach((t) => t.stop());
          if (meeting.ws && meeting.ws.readyState <= 1) meeting.ws.close();
          tiles.get(meeting.participantId)?.classList.remove("me");
          meeting.ws = null; meeting.stream = null; meeting.muted = false;
          callStatus(why); controls();
        }
        async function join() {
          if (meeting.state !== "idle") return;
          meeting.state = "joining"; meeting.errors = []; meeting.held = []; meeting.joinedAt = performance.now(); controls();
          callStatus(listenOnly ? "joining (listen only)…" : "opening the microphone…");
          try {
            const pc = meeting.pc = new RTCPeerConnection({iceServers: []});
            if (listenOnly) {
              pc.addTransceiver("audio", {direction: "sendrecv"});
            } else {
              const device = $("mic").value;
              meeting.stream = await navigator.mediaDevices.getUserMedia({audio: device ? {deviceId: {exact: device}} : true, video: false});
              for (const track of meeting.stream.getAudioTracks()) pc.addTrack(track, meeting.stream);
              listDevices();
            }
            pc.ontrack = (event) => { const remote = $("remote"); remote.srcObject = event.streams[0] || new MediaStream([event.track]); remote.play().catch(() => {}); };
            pc.onicecandidate = (event) => {
              if (event.candidate && event.candidate.candidate) signal({type: "ice-candidate", candidate: event.candidate.candidate, sdpMLineIndex: event.candidate.sdpMLineIndex ?? 0, sdpMid: event.candidate.sdpMid});
            };
            pc.onconnectionstatechange = () => {
              if (pc !== meeting.pc) return;
              if (pc.connectionState === "connected") { meeting.state = "connected"; callStatus(listenOnly ? "in the call (listening)" : "in the call"); }
              if (pc.connectionState === "failed") hangUp("the connection failed");
            };
            const ws = meeting.ws = new WebSocket(signalURL);
            ws.onopen = () => { ws.send(JSON.stringify({type: "join", token, mic: !listenOnly})); meeting.pinger = setInterval(() => signal({type: "ping"}), 5000); };
            ws.onclose = () => { if (ws === meeting.ws) hangUp(meeting.errors.length ? "left: " + meeting.errors[meeting.errors.length - 1].message : "left the call"); };
            ws.onmessage = async (event) => {
              const m = JSON.parse(event.data);
              switch (m.type) {
              case "joined":
                meeting.participantId = m.participantId; tiles.get(m.participantId)?.classList.add("me");
                await pc.setLocalDescription(await pc.createOffer());
                signal({type: "offer", sdp: pc.localDescription.sdp});
                callStatus("connecting…"); break;
              case "answer":
                await pc.setRemoteDescription({type: "answer", sdp: m.sdp});
                for (const c of meeting.held.splice(0)) await pc.addIceCandidate(c);
                break;
              case "ice-candidate": {
                const c = {candidate: m.candidate, sdpMLineIndex: m.sdpMLineIndex};
                if (pc.remoteDescription) await pc.addIceCandidate(c); else meeting.held.push(c);
                break; }
              case "mic-muted": if (m.participantId === meeting.participantId) setMuted(m.muted); break;
              case "error": meeting.errors.push(m); callStatus("error " + m.code + ": " + m.message); break;
              }
            };
          } catch (error) {
            meeting.errors.push({code: 0, message: String(error)});
            hangUp("cannot join: " + error);
          }
        }
        $("join").onclick = join;
        $("leave").onclick = () => { signal({type: "leave"}); hangUp("left the call"); };
        $("mute").onclick = () => { const muted = !meeting.muted; signal({type: muted ? "mute-mic" : "unmute-mic"}); if (muted) setMuted(true); };
        controls(); listDevices().catch(() => {});
        </script></body></html>
        """#
}
