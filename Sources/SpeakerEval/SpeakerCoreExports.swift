// Labelled segments and RTTM live in SpeakerCore, so that recording calls (CallServer) writes RTTM
// without depending on evaluation. They are part of evaluation's API too (references, system output):
// `import SpeakerEval` brings them, as it did when they were defined here.
@_exported import enum SpeakerCore.RTTM
@_exported import struct SpeakerCore.Segment

// Replaying recorded streams through the engine (`RoomReplay`, beside `RoomRunner`) lives in SpeakerCore,
// so that `detect` needs no evaluation to run a room of files; evaluation replays with it, and
// `import SpeakerEval` brings it, as it did when it was defined here.
@_exported import class SpeakerCore.RoomReplay
@_exported import struct SpeakerCore.ReplayStream
@_exported import protocol SpeakerCore.ReplaySource
@_exported import struct SpeakerCore.SpeechSegmentRecorder
