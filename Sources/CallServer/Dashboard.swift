/// The dashboard page of a room: one tile per participant (name, mute state, level meter), the
/// active speaker's tile highlighted. Self-contained: no outside scripts, styles or fonts.
enum Dashboard {
    static func page(room: String) -> String {
        template.replacingOccurrences(of: "__ROOM__", with: room)
    }

    private static let template = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Room __ROOM__</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>
        body{font-family:system-ui,sans-serif;margin:24px;background:#111;color:#eee}
        h1{font-size:18px;font-weight:600} #status{color:#aaa;font-size:13px}
        #tiles{display:flex;flex-wrap:wrap;gap:12px;margin-top:12px}
        .tile{width:180px;height:110px;border-radius:10px;background:#222;padding:10px;box-sizing:border-box;
          border:3px solid transparent;display:flex;flex-direction:column;justify-content:space-between}
        .tile.speaking{border-color:#2ecc71;box-shadow:0 0 12px #2ecc71}
        .name{font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        .state{font-size:12px;color:#bbb} .meter{height:8px;background:#333;border-radius:4px;overflow:hidden}
        .meter>div{height:100%;width:0;background:#2ecc71;transition:width .15s}
        </style></head><body>
        <h1>Room __ROOM__</h1><div id="status">connecting…</div>
        <div id="speaker">Speaking: <span id="speaker-name">nobody</span></div>
        <div id="tiles"></div>
        <ol id="history" hidden></ol>
        <script>
        "use strict";
        const room = "__ROOM__";
        const token = new URLSearchParams(location.search).get("token") || "";
        const tiles = new Map();
        let me = null;
        function tile(p) {
          let t = tiles.get(p.id);
          if (!t) {
            t = document.createElement("div"); t.className = "tile"; t.id = "tile-" + p.id; t.dataset.participant = p.id;
            t.innerHTML = '<div class="name"></div><div class="state"></div><div class="meter"><div></div></div>';
            document.getElementById("tiles").appendChild(t); tiles.set(p.id, t);
          }
          t.querySelector(".name").textContent = p.displayName;
          t.dataset.muted = p.micMuted ? "true" : "false";
          t.querySelector(".state").textContent = (p.micMuted ? "muted" : "mic on") + (p.video ? " · video" : "");
          return t;
        }
        function highlight(id, t) {
          for (const [pid, el] of tiles) el.classList.toggle("speaking", pid === id);
          document.getElementById("speaker-name").textContent = id === null ? "nobody" : (tiles.get(id)?.querySelector(".name").textContent || id);
          const li = document.createElement("li"); li.textContent = (id === null ? "-" : id) + "@" + t;
          document.getElementById("history").appendChild(li);
        }
        const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/signal?room=" + encodeURIComponent(room));
        ws.onopen = () => { ws.send(JSON.stringify({type: "join", token, mic: false})); setInterval(() => ws.send('{"type":"ping"}'), 5000); };
        ws.onclose = () => { document.getElementById("status").textContent = "disconnected"; };
        ws.onmessage = (event) => {
          const m = JSON.parse(event.data);
          switch (m.type) {
          case "joined":
            me = m.participantId; document.getElementById("status").textContent = "connected";
            for (const p of m.participants) if (p.id !== me) tile(p);
            highlight(m.speakerId, 0); break;
          case "participant-joined": if (m.participant.id !== me) tile(m.participant); break;
          case "participant-left": tiles.get(m.participantId)?.remove(); tiles.delete(m.participantId); break;
          case "mic-muted": { const t = tiles.get(m.participantId); if (t) { t.dataset.muted = String(m.muted);
            t.querySelector(".state").textContent = m.muted ? "muted" : "mic on"; } break; }
          case "speaker-changed": highlight(m.participantId, m.t); break;
          case "audio-levels":
            for (const [pid, level] of Object.entries(m.levels)) {
              const bar = tiles.get(pid)?.querySelector(".meter>div");
              if (bar) bar.style.width = Math.max(0, Math.min(100, (level + 60) / 60 * 100)) + "%";
            }
            break;
          case "error": document.getElementById("status").textContent = "error " + m.code + ": " + m.message; break;
          }
        };
        </script></body></html>
        """#
}
