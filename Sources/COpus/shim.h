#include <opus/opus.h>

// opus_*_ctl are variadic macros that Swift cannot call: one inline wrapper per ctl we use.
static inline int as_opus_decoder_reset(OpusDecoder *decoder) {
    return opus_decoder_ctl(decoder, OPUS_RESET_STATE);
}
static inline int as_opus_decoder_last_packet_duration(OpusDecoder *decoder, opus_int32 *samples) {
    return opus_decoder_ctl(decoder, OPUS_GET_LAST_PACKET_DURATION(samples));
}
static inline int as_opus_encoder_set_bitrate(OpusEncoder *encoder, opus_int32 bitrate) {
    return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitrate));
}
static inline int as_opus_encoder_get_lookahead(OpusEncoder *encoder, opus_int32 *samples) {
    return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(samples));
}
static inline int as_opus_encoder_set_inband_fec(OpusEncoder *encoder, opus_int32 enabled) {
    return opus_encoder_ctl(encoder, OPUS_SET_INBAND_FEC(enabled));
}
static inline int as_opus_encoder_set_packet_loss_perc(OpusEncoder *encoder, opus_int32 percent) {
    return opus_encoder_ctl(encoder, OPUS_SET_PACKET_LOSS_PERC(percent));
}
// The first frame of an Opus packet (what in-band FEC is read from): its offset and size in bytes, by
// opus_packet_parse. Returns the packet's frame count, or a negative libopus error.
static inline int as_opus_first_frame(const unsigned char *data, opus_int32 length, opus_int32 *offset, opus_int32 *size) {
    const unsigned char *frames[48];
    opus_int16 sizes[48];
    unsigned char toc;
    int count = opus_packet_parse(data, length, &toc, frames, sizes, 0);
    if (count <= 0) return count < 0 ? count : OPUS_INVALID_PACKET;
    *offset = (opus_int32)(frames[0] - data);
    *size = sizes[0];
    return count;
}
