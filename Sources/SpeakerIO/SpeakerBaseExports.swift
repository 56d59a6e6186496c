// The shared basics the audio edge's API speaks in (the analysis format, `AudioLevel`, `HopSource`), for
// users that import only SpeakerIO.
@_exported import SpeakerBase
