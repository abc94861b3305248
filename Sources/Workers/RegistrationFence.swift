import Foundation
import Synchronization

/// Which numbered changes an indexer may apply, as its registrations allow.
///
/// A registration reports how far each shard is, and the coordinator that
/// accepts it numbers on from there. A change received earlier from another
/// coordinator, still waiting in the worker when it registers, must not be
/// applied after the report: the new coordinator would give its number to a
/// change of its own, which the shard would then skip as applied — an
/// acknowledged write lost, or a split's mark never made.
///
/// So from a registration sent until one is accepted, numbered changes wait
/// (``Verdict/wait``): the report and the shard stay as one. Once a
/// coordinator of epoch E has accepted it, a change of a lower epoch is
/// refused as stale (``Verdict/stale(epoch:)``); one of the same coordinator
/// that was on its way is applied after, as before (the coordinator catches
/// the worker up from the reported numbers and skips what it applied).
/// Without epochs (a coordinator without a control plane) only the wait holds.
struct RegistrationFence: Sendable, Equatable {
    enum Verdict: Sendable, Equatable {
        case apply
        /// A registration is unanswered: try again once it is.
        case wait
        /// From a coordinator below the epoch of the one registered with.
        case stale(epoch: Int)
    }

    /// A registration is on its way, unanswered.
    private(set) var registering = false
    /// The highest epoch of a coordinator that accepted a registration.
    private(set) var epoch: Int?

    /// A registration is sent (call before reading the numbers it reports).
    mutating func sent() { registering = true }

    /// A coordinator accepted the registration.
    mutating func accepted(epoch accepting: Int?) {
        registering = false
        if let accepting { epoch = max(epoch ?? accepting, accepting) }
    }

    func verdict(changeEpoch: Int?) -> Verdict {
        if registering { return .wait }
        if let epoch, let changeEpoch, changeEpoch < epoch { return .stale(epoch: epoch) }
        return .apply
    }
}

/// The link's ``RegistrationFence``, shared by the socket's thread (which
/// sees `registered` as it arrives: the link's loop may itself be waiting on
/// a change the fence holds) and the shards' threads, which ask it inside the
/// closure that applies a change, so that a registration's numbers, read on
/// the same threads, count exactly the changes applied before them.
final class RegistrationGate: Sendable {
    private let state = Mutex(RegistrationFence())

    var fence: RegistrationFence { state.withLock { $0 } }

    func sent() { state.withLock { $0.sent() } }

    func accepted(epoch: Int?) { state.withLock { $0.accepted(epoch: epoch) } }

    /// Returns once no registration is unanswered, or the task is cancelled
    /// (the worker stopping). It looks every 10 ms: it waits only while a
    /// worker registers again, and a look-and-sleep leaves no waiter behind
    /// when the task is cancelled.
    func settled() async {
        while fence.registering, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// Whether a received message may be `registered`, read without decoding
    /// it: the answer is small and names its type, while most messages an
    /// indexer receives are writes too large to look through.
    static func mayBeRegistered(_ payload: Data) -> Bool {
        payload.count <= 4096 && payload.range(of: Data("\"registered\"".utf8)) != nil
    }
}
