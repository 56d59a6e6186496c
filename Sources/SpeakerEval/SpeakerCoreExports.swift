// Labelled segments and RTTM live in SpeakerCore, so that recording calls (CallServer) writes RTTM
// without depending on evaluation. They are part of evaluation's API too (references, system output):
// `import SpeakerEval` brings them, as it did when they were defined here.
@_exported import enum SpeakerCore.RTTM
@_exported import struct SpeakerCore.Segment
