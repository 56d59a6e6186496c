// The protocol's types that the SDK's public API uses (stream kinds, message bodies, roles, the
// server's error codes) are defined once, in CallProtocol, which is not a product:
// `import CallClient` brings them, so an app needs no other import.
@_exported import enum CallProtocol.CallErrorCode
@_exported import enum CallProtocol.MessageBody
@_exported import enum CallProtocol.Role
@_exported import enum CallProtocol.StreamKind
