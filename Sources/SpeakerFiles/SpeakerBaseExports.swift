// The shared basics this module's API speaks in (the analysis format, `AudioLevel`, `HopSource`), for
// users that import only SpeakerFiles.
@_exported import SpeakerBase
