// The types the client's API speaks in, so that an app that depends on the
// `LimelightClient` product needs no other import: items and JSON values
// (`Items`) and the messages' bodies (`WireProtocol`).
@_exported import Items
@_exported import WireProtocol
