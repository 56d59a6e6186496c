// Labelled segments live in SpeakerCore, where a replay's events become segments (`RoomReplay`). They are
// part of evaluation's API too (references, system output, RTTM): `import SpeakerEval` brings them.
@_exported import struct SpeakerCore.Segment

// Replaying recorded streams through the engine (`RoomReplay`, beside `RoomRunner`) lives in SpeakerCore,
// so that `detect` needs no evaluation to run a room of files; evaluation replays with it, and
// `import SpeakerEval` brings it, as it did when it was defined here.
@_exported import class SpeakerCore.RoomReplay
@_exported import struct SpeakerCore.ReplayStream
@_exported import protocol SpeakerCore.ReplaySource
@_exported import struct SpeakerCore.SpeechSegmentRecorder
