#ifndef ACTIVESPEAKER_CGSTREAMER_SHIM_H
#define ACTIVESPEAKER_CGSTREAMER_SHIM_H

#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>

// GLib's and GStreamer's variadic calls (g_object_set/get, g_signal_emit_by_name) and macros
// (g_signal_connect) do not import into Swift: one typed wrapper per use.

static inline void cgst_set_string(gpointer object, const char *name, const char *value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgst_set_bool(gpointer object, const char *name, gboolean value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgst_set_int(gpointer object, const char *name, gint value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgst_set_uint(gpointer object, const char *name, guint value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgst_set_uint64(gpointer object, const char *name, guint64 value) {
    g_object_set(object, name, value, NULL);
}
/// Enum-typed properties (GstFormat, GstWebRTCBundlePolicy, GstAppLeakyType, ...).
static inline void cgst_set_enum(gpointer object, const char *name, gint value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgst_set_caps(gpointer object, const char *name, GstCaps *caps) {
    g_object_set(object, name, caps, NULL);
}
static inline gint cgst_get_enum(gpointer object, const char *name) {
    gint value = 0;
    g_object_get(object, name, &value, NULL);
    return value;
}
/// A reference the caller unrefs (g_object_unref), or NULL.
static inline gpointer cgst_get_object(gpointer object, const char *name) {
    gpointer value = NULL;
    g_object_get(object, name, &value, NULL);
    return value;
}

// webrtcbin's action signals.
static inline void cgst_webrtc_set_remote_description(GstElement *webrtc, GstWebRTCSessionDescription *description, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "set-remote-description", description, promise);
}
static inline void cgst_webrtc_set_local_description(GstElement *webrtc, GstWebRTCSessionDescription *description, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "set-local-description", description, promise);
}
static inline void cgst_webrtc_create_answer(GstElement *webrtc, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "create-answer", NULL, promise);
}
static inline void cgst_webrtc_add_ice_candidate(GstElement *webrtc, guint mline, const char *candidate) {
    g_signal_emit_by_name(webrtc, "add-ice-candidate", mline, candidate);
}
/// GstWebRTCNice's "add-local-ip-address": once one is added, libnice gathers on the added addresses only.
static inline gboolean cgst_ice_add_local_ip_address(gpointer ice, const char *address) {
    gboolean added = FALSE;
    g_signal_emit_by_name(ice, "add-local-ip-address", address, &added);
    return added;
}

// Signal handlers.
typedef void (*cgst_ice_candidate_callback)(GstElement *webrtc, guint mline, gchar *candidate, gpointer data);
typedef void (*cgst_pad_callback)(GstElement *element, GstPad *pad, gpointer data);
typedef void (*cgst_notify_callback)(GObject *object, GParamSpec *property, gpointer data);

// Each handler holds `data` until it is disconnected and no emission is running any more: GLib calls
// `release` when the closure is finalized.
static inline gulong cgst_connect_ice_candidate(GstElement *webrtc, cgst_ice_candidate_callback callback, gpointer data, GClosureNotify release) {
    return g_signal_connect_data(webrtc, "on-ice-candidate", G_CALLBACK(callback), data, release, 0);
}
static inline gulong cgst_connect_pad_added(GstElement *element, cgst_pad_callback callback, gpointer data, GClosureNotify release) {
    return g_signal_connect_data(element, "pad-added", G_CALLBACK(callback), data, release, 0);
}
static inline gulong cgst_connect_notify(gpointer object, const char *detailed_signal, cgst_notify_callback callback, gpointer data, GClosureNotify release) {
    return g_signal_connect_data(object, detailed_signal, G_CALLBACK(callback), data, release, 0);
}
/// A bus watch on `context` (gst_bus_add_watch attaches to the calling thread's default context only).
static inline guint cgst_bus_watch(GstBus *bus, GMainContext *context, GstBusFunc callback, gpointer data, GDestroyNotify release) {
    GSource *source = gst_bus_create_watch(bus);
    g_source_set_callback(source, (GSourceFunc)callback, data, release);
    guint id = g_source_attach(source, context);
    g_source_unref(source);
    return id;
}
static inline void cgst_remove_source(GMainContext *context, guint id) {
    GSource *source = g_main_context_find_source_by_id(context, id);
    if (source != NULL) g_source_destroy(source);
}

/// The session description in a promise's reply (field `answer` or `offer`), a new copy, or NULL.
static inline GstWebRTCSessionDescription *cgst_reply_description(const GstStructure *reply, const char *field) {
    GstWebRTCSessionDescription *description = NULL;
    if (reply == NULL || !gst_structure_has_field_typed(reply, field, GST_TYPE_WEBRTC_SESSION_DESCRIPTION)) return NULL;
    gst_structure_get(reply, field, GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &description, NULL);
    return description;
}
/// The message of a GError in a promise's reply (field `error`), a new string to g_free, or NULL.
static inline gchar *cgst_reply_error(const GstStructure *reply) {
    GError *error = NULL;
    if (reply == NULL || !gst_structure_has_field_typed(reply, "error", G_TYPE_ERROR)) return NULL;
    gst_structure_get(reply, "error", G_TYPE_ERROR, &error, NULL);
    if (error == NULL) return NULL;
    gchar *message = g_strdup(error->message);
    g_error_free(error);
    return message;
}

/// Buffer probes see buffers and buffer lists.
static inline GstBuffer *cgst_probe_buffer(GstPadProbeInfo *info) { return GST_PAD_PROBE_INFO_BUFFER(info); }
static inline GstBufferList *cgst_probe_buffer_list(GstPadProbeInfo *info) { return GST_PAD_PROBE_INFO_BUFFER_LIST(info); }

static inline const char *cgst_message_type_name(GstMessage *message) { return GST_MESSAGE_TYPE_NAME(message); }
static inline GstMessageType cgst_message_type(GstMessage *message) { return GST_MESSAGE_TYPE(message); }
static inline const char *cgst_object_name(gpointer object) { return GST_OBJECT_NAME(object); }

#endif
