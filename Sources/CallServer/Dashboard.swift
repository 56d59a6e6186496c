/// The dashboard page of a room: one tile per participant (name, mute state, level meter), the
/// active speaker's tile highlighted. Self-contained: no outside scripts, styles or fonts. It watches
/// the room with `observe`: it is not a participant, and nobody sees it join.
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
        :root{--bg:#111418;--panel:#1c2027;--line:#2a303a;--text:#e8eaed;--dim:#9aa0a6;--speak:#2ecc71;--mute:#e5534b}
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
          column-gap:10px;align-items:center;transition:border-color .2s,box-shadow .2s}
        .tile.speaking{border-color:var(--speak);box-shadow:0 0 0 1px var(--speak),0 0 16px rgba(46,204,113,.45)}
        .tile.speaking::after{content:"speaking";position:absolute;top:8px;right:10px;font-size:10px;font-weight:600;
          letter-spacing:.04em;text-transform:uppercase;color:#0b1f12;background:var(--speak);border-radius:999px;padding:1px 7px}
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
          case "participant-joined": tile(m.participant); break;
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
        watch((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/signal?room=" + encodeURIComponent(room));
        </script></body></html>
        """#
}
