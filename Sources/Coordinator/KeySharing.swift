import Foundation
import Tenancy
import WireProtocol

/// A client request held until the coordinator can decide it: while a
/// split pauses writes, until a coordinator that has just started serving
/// has read the shard map and taken up any split, or until it has read the
/// cluster's API keys.
struct HeldRequest: Sendable {
    var route: [Data]
    var envelope: Envelope

    /// The most requests a coordinator holds for one reason; more are answered `busy`.
    static let limit = 10_000
}

/// The API keys of a cluster with a control plane, which every coordinator
/// of it must know alike (docs/security.md, "Keys across coordinators").
/// This value decides; the service's key loop
/// (`CoordinatorService.followKeys`) reads and writes the control plane.
///
/// - A coordinator that starts serving (each new epoch) holds every client
///   request but `ping` until it has read the keys and written there those
///   only it had (``KeyMerge``): a key made through its predecessor is known
///   before any request is judged by it.
/// - A key made or revoked is answered only once the control plane holds it:
///   a key acknowledged to its maker is not lost with its coordinator.
struct KeySharing {
    /// A key made or revoked, waiting for the control plane to hold it.
    struct Change: Sendable {
        var key: SharedKey
        /// A new key's value, for its maker's answer; nil for a revocation.
        var value: String?
        var client: [Data]
        var requestID: String
    }

    /// The most requests held while the keys are read; more are answered `busy`.
    let holdLimit: Int
    /// The serving epoch the keys were last read for.
    private(set) var readFor: Int?
    private(set) var held: [HeldRequest] = []
    private(set) var queued: [Change] = []

    init(holdLimit: Int = HeldRequest.limit) { self.holdLimit = holdLimit }

    /// Whether client requests wait for the keys to be read for `epoch`.
    func mustRead(epoch: Int) -> Bool { readFor != epoch }

    /// Holds a request until the keys are read; false when too many wait.
    mutating func hold(_ r: HeldRequest) -> Bool {
        guard held.count < holdLimit else { return false }
        held.append(r)
        return true
    }

    /// The keys were read (and merged) for `epoch`: returns the held
    /// requests, to handle now in the order they came.
    mutating func read(epoch: Int) -> [HeldRequest] {
        readFor = epoch
        defer { held = [] }
        return held
    }

    /// The held requests, given up (the coordinator no longer serves).
    mutating func dropHeld() -> [HeldRequest] {
        defer { held = [] }
        return held
    }

    mutating func queue(_ c: Change) { queued.append(c) }

    /// The changes to write, in the order they were asked for.
    mutating func takeQueued() -> [Change] {
        defer { queued = [] }
        return queued
    }
}
