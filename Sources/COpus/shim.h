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
