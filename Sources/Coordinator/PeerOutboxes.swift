import Foundation
import Synchronization

/// One bounded queue of outgoing messages per peer, so that a peer that
/// reads slowly (or not at all) holds back only its own messages.
///
/// Sending every reply from one loop, awaiting each send in turn, would let
/// one client whose ZeroMQ pipe is full stop the replies to every other
/// client. Instead each peer's messages go out in order, one at a time (``Outlet`` hands the next to the socket when ZeroMQ has accepted the
/// one before), started when its queue gets its first message and stopped
/// when the queue is empty. A queue holds at most `limit` messages beyond
/// what ZeroMQ's high-water mark already holds for that peer; past that the
/// peer is not keeping up, and its new messages are dropped, counted and
/// logged (once per episode) rather than buffered without bound.
final class PeerOutboxes: Sendable {
    struct Queue {
        var items: [Outlet.Queued] = []
        var head = 0
        var count: Int { items.count - head }

        mutating func append(_ o: Outlet.Queued) { items.append(o) }

        mutating func popFirst() -> Outlet.Queued? {
            guard head < items.count else { return nil }
            let o = items[head]
            head += 1
            if head > 64, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return o
        }
    }

    struct State {
        var queues: [[Data]: Queue] = [:]
        /// Messages dropped per peer in the current overflow episode.
        var dropped: [[Data]: Int] = [:]
        var droppedTotal = 0
    }

    enum Admission: Equatable {
        /// Queued behind earlier messages, which are moving already.
        case queued
        /// The peer's queue was idle: the caller starts moving it.
        case startSender
        /// The queue is full: dropped. `first` for the first drop of an episode.
        case dropped(first: Bool)
    }

    let limit: Int
    let state = Mutex(State())

    init(limit: Int) {
        precondition(limit > 0, "an outbox holds at least one message")
        self.limit = limit
    }

    /// Queues the message `make` builds, unless the peer's queue is full:
    /// then `make` is never called.
    func enqueue(route: [Data], _ make: () -> Outlet.Queued) -> Admission {
        state.withLock { s in
            if var q = s.queues[route] {
                guard q.count < limit else {
                    let n = s.dropped[route, default: 0]
                    s.dropped[route] = n + 1
                    s.droppedTotal += 1
                    return .dropped(first: n == 0)
                }
                q.append(make())
                s.queues[route] = q
                return .queued
            }
            // An idle peer: this message goes first.
            var q = Queue()
            q.append(make())
            s.queues[route] = q
            return .startSender
        }
    }

    /// The peer's next message, or nil when its queue is empty — the peer's
    /// queue and drop count are then forgotten.
    func next(route: [Data]) -> Outlet.Queued? {
        state.withLock { s in
            guard var q = s.queues[route], let o = q.popFirst() else {
                s.queues.removeValue(forKey: route)
                s.dropped.removeValue(forKey: route)
                return nil
            }
            s.queues[route] = q
            return o
        }
    }

    /// Messages waiting for a peer (for tests and stats).
    func depth(of route: [Data]) -> Int { state.withLock { $0.queues[route]?.count ?? 0 } }
    var peersWaiting: Int { state.withLock { $0.queues.count } }
    var droppedTotal: Int { state.withLock { $0.droppedTotal } }
}
