import Foundation

/// The coordinators a worker or a client may talk to (`--coordinator A,B,…`,
/// `--endpoint A,B,…`) and the one it is connected to: its decisions, as a
/// value.
///
/// A worker (or client) keeps one connection. When its coordinator is silent for the
/// liveness period it moves to the next in the list; when a standby answers
/// `not_active` naming the active one, it moves there — unless that is the
/// one it just left for silence (a dead coordinator is named until its lease
/// lapses), in which case it stays and asks again at the next heartbeat.
public struct CoordinatorEndpoints: Sendable, Equatable {
    public private(set) var endpoints: [String]
    public private(set) var index = 0
    /// The coordinator left last for its silence.
    public private(set) var leftSilent: String?

    public struct Move: Sendable, Equatable {
        public var from: String
        public var to: String
        public init(from: String, to: String) {
            self.from = from
            self.to = to
        }
    }

    /// `list`: one endpoint, or several separated by commas.
    public init(_ list: String) {
        let endpoints = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        self.endpoints = endpoints.isEmpty ? [list] : endpoints
    }

    public var current: String { endpoints[index] }

    /// The current coordinator is silent: the next one, if there is another.
    public mutating func silent() -> Move? {
        guard endpoints.count > 1 else { return nil }
        let from = current
        leftSilent = from
        index = (index + 1) % endpoints.count
        return Move(from: from, to: current)
    }

    /// Registered where it is: a coordinator left for silence may be named again.
    public mutating func registered() { leftSilent = nil }

    /// A standby named `active` as the active coordinator.
    public mutating func redirected(to active: String) -> Move? {
        guard active != current, active != leftSilent else { return nil }
        let from = current
        if let i = endpoints.firstIndex(of: active) {
            index = i
        } else {
            endpoints.append(active)
            index = endpoints.count - 1
        }
        return Move(from: from, to: current)
    }
}
