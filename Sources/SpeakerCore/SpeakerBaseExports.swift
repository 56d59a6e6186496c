// The analysis format, levels and shared kernels live in SpeakerBase, beneath SpeakerCore and
// SpeakerIO; SpeakerCore's users see them as before.
@_exported import SpeakerBase
