import Foundation
import WireProtocol
import ZeroMQ

/// Where the core's messages leave the coordinator: one ROUTER socket and its
/// peers' bounded queues (``PeerOutboxes``).
///
/// ``send(_:)`` never suspends, so the ``CoordinatorCore`` actor calls it in
/// line. The message joins its peer's queue; a peer's queue is worked off
/// one message at a time, each encoded and handed to the socket with
/// ``AsyncSocket/submit(_:accepted:)`` when ZeroMQ has accepted the one
/// before (the socket's thread calls back, and encodes the next). A peer
/// that reads slowly holds back only its own queue, and a message passes
/// through no stream, draining task, sender task or continuation on its way
/// out: each would be a thread wake-up, together about a millisecond of the
/// coordinator's CPU per query on a loaded machine.
final class Outlet: Sendable {
    let socket: AsyncSocket
    let outboxes: PeerOutboxes
    /// Told, on the socket's thread, of a message ZeroMQ could not take (its
    /// peer is gone: ROUTER_MANDATORY) or that the closing socket refused.
    let undeliverable: @Sendable (Outgoing, any Error) -> Void

    init(socket: AsyncSocket, limit: Int, undeliverable: @escaping @Sendable (Outgoing, any Error) -> Void) {
        self.socket = socket
        self.outboxes = PeerOutboxes(limit: limit)
        self.undeliverable = undeliverable
    }

    /// Queues `o` for its peer and starts the peer's queue moving if it was
    /// idle. Returns what the queue made of it (``PeerOutboxes/Admission``):
    /// `.dropped` when the peer has `limit` messages waiting already.
    func send(_ o: Outgoing) -> PeerOutboxes.Admission {
        let route = o.to.route
        let admission = outboxes.enqueue(route: route) { Queued(outgoing: o) }
        if admission == .startSender { next(route) }
        return admission
    }

    /// Hands the peer's next message to the socket; the socket's callback
    /// comes back here for the one after. Ends when the queue is empty.
    private func next(_ route: [Data]) {
        while let q = outboxes.next(route: route) {
            let refused = socket.submit(route + [q.outgoing.envelope.encoded()]) { [self] error in
                if let error { undeliverable(q.outgoing, error) }
                next(route)
            }
            guard let refused else { return }
            // Closed: every later message of the peer is refused too.
            undeliverable(q.outgoing, refused)
        }
    }

    /// A message waiting for its peer. Encoded only when it is handed to
    /// the socket, so the backlog of a peer that does not read costs no
    /// encoding (and what it drops, none at all).
    struct Queued: Sendable {
        let outgoing: Outgoing
    }
}

extension Peer {
    /// The ROUTER routing frames that address the peer.
    var route: [Data] {
        switch self {
        case .client(let r), .worker(let r): r
        }
    }
}
