// What an app needs to hand the SDK a microphone of its own (`CustomMicrophoneTrack(source:)`): the
// source protocol, what a read returns, the error a source throws, and the file-backed source. They are
// defined in SpeakerIO and SpeakerFiles, which `import CallClient` brings for these types only (issue 32: seed code that
// wrote its own source did not compile with `import CallClient` alone).
@_exported import protocol SpeakerIO.MicrophoneSource
@_exported import enum SpeakerIO.MicrophoneRead
@_exported import struct SpeakerIO.SpeakerIOError
@_exported import class SpeakerFiles.FileMicrophone
