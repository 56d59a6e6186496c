internal import CGStreamer
import Foundation

/// GStreamer for the whole process: `gst_init` once, and one GLib main loop on a thread of its own
/// (`activespeaker-gst`) on a private main context, where every peer's bus watch runs.
///
/// webrtcbin emits its signals (ICE candidates, pads, state changes) and resolves its promises on its own
/// threads (its task loop, libnice's loop, streaming threads); the main loop carries only bus messages.
final class GStreamerRuntime: Sendable {
    /// The runtime, started on first use; `.failure` if GStreamer or a needed element is missing.
    static let shared: Result<GStreamerRuntime, WebRTCError> = {
        var error: UnsafeMutablePointer<GError>?
        guard gst_init_check(nil, nil, &error) != 0 else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            g_error_free(error)
            return .failure(.pipeline("gst_init failed: \(message)"))
        }
        for element in ["webrtcbin", "appsrc", "fakesink", "nicesrc", "dtlssrtpenc", "srtpenc", "rtpbin"] {
            guard let factory = gst_element_factory_find(element) else {
                return .failure(.pipeline("GStreamer element \(element) is missing: bash tools/install-deps.sh"))
            }
            gst_object_unref(UnsafeMutableRawPointer(factory))
        }
        return .success(GStreamerRuntime())
    }()

    /// The context the loop runs; owned for the process's life.
    nonisolated(unsafe) let context: OpaquePointer

    private init() {
        let context = g_main_context_new()!
        let loop = g_main_loop_new(context, 0)!
        self.context = context
        // Immutable pointers handed to the thread, which runs until the process ends.
        nonisolated(unsafe) let unsafeLoop = loop
        nonisolated(unsafe) let unsafeContext = context
        let thread = Thread {
            g_main_context_push_thread_default(unsafeContext)
            g_main_loop_run(unsafeLoop)
        }
        thread.name = "activespeaker-gst"
        thread.start()
    }
}
