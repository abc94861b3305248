import ClusterAuth
import Foundation
import ZeroMQ

/// How a coordinator is set up: docs/design.md's required flags and their defaults.
package struct CoordinatorConfiguration: Sendable {
    /// Where clients connect (a ROUTER socket). Port 0 picks a free port.
    package var listen: String = "tcp://127.0.0.1:7700"
    /// Where indexers and query workers connect (a ROUTER socket).
    package var workers: String = "tcp://127.0.0.1:7701"
    /// Where the sockets' threads and ZeroMQ's I/O thread run: together, on
    /// the CPU the service starts on (see ``ThreadPlacement``).
    package var socketPlacement: ThreadPlacement = .here
    /// HTTP port of the stats endpoint; 0 picks a free port, `nil` serves none.
    package var statsPort: Int? = 7780
    package var statsHost: String = "127.0.0.1"
    /// Fixed when the cluster is created.
    package var shards: Int = 8
    /// How often workers must say they are alive.
    package var heartbeatMs: Int = 1000
    /// A worker silent for this long is taken as dead.
    package var livenessMs: Int = 3000
    /// A query's deadline when the client names none.
    package var defaultDeadlineMs: Int = 30_000
    /// Frames larger than this get a `too_large` error reply.
    package var maxFrameBytes: Int = 32 * 1024 * 1024
    /// Publish batches in flight at once. Past this a batch waits (see
    /// `maxWaitingWrites`); the coordinator keeps reading and answering
    /// other requests meanwhile.
    package var maxPendingWrites: Int = 256
    /// Publish batches that may wait for room, in order; past this a batch is
    /// answered `busy` (send it again later).
    package var maxWaitingWrites: Int = 256
    /// Messages queued by the coordinator towards one peer, on top of what
    /// ZeroMQ's high-water mark holds; past this a peer that does not read
    /// loses its new messages (logged and counted), and no other peer waits.
    package var peerOutboxLimit: Int = 10_000
    /// Messages a socket may queue towards one peer before sends wait.
    package var highWaterMark: Int32 = 10_000
    /// The all-MiniLM-L6-v2 folder that semantic searches' query texts are
    /// embedded with (loaded at the first one); nil refuses them with a clear error.
    package var modelDirectory: String?
    /// Workers must prove they hold this secret to register; nil admits any
    /// worker that can connect (then CURVE's worker allow-list must guard the
    /// socket). See docs/security-transport.md.
    package var clusterSecret: ClusterSecret?
    /// CURVE encryption (and key checks) on the client and worker sockets; nil for none.
    package var curve: CurveServerSettings?
    /// Changes kept per shard for catching up a replica that was away,
    /// counted in items (a delete or an entity operation counts one). A
    /// replica further behind than the log reaches is left out of writes and
    /// queries (`detached` in the stats) until a copy of a fresh replica's
    /// files replaces its own (see `ShardCopies`).
    package var catchUpLogItems: Int = 20_000
    /// How long a coordinator that has numbered no change of a shard yet
    /// (it just started, and the shard has history) waits before numbering
    /// one while a replica it knows of, from a query worker's registration,
    /// has not registered the shard's indexer. Numbering from the replicas at
    /// hand would make the missing one, if it holds changes they lack (it
    /// took writes while another replica was down), a diverged replica, to
    /// be copied over and lose them. Writes meanwhile are answered
    /// `shard_unavailable`, and producers resend them.
    package var replicaWaitMs: Int = 10_000
    /// Replicas of every shard the cluster is meant to have (`limelight up
    /// --replicas`). A restarted coordinator waits (`replicaWaitMs`) until
    /// this many replicas' indexers have reported a shard before numbering
    /// its changes: a replica that registers late may hold acknowledged
    /// changes the others lack, and numbering without it would have it
    /// copied over.
    package var replicas: Int = 1
    /// The API key store (`--keys`), for the stats and logs; the store itself
    /// is opened by whoever starts the service (see `CoordinatorService.init`).
    package var keyStorePath: String?
    /// Refuse requests without a valid key (`--require-keys`); otherwise a
    /// keyless request is served unscoped (the whole store, every app's).
    package var requireKeys = false
    /// The control plane (`etcd://HOST:PORT,…` or `file:///PATH`) through
    /// which coordinators elect the active one; nil: this coordinator is the
    /// cluster's only one and serves at once, with no epoch (as before).
    package var controlPlane: String?
    /// The cluster's name in the control plane (its keys' prefix).
    package var cluster: String = "default"
    /// This coordinator's name in the election (default: HOST-PID).
    package var coordinatorID: String?
    /// The lease an active coordinator holds, in seconds: after a crash, a
    /// standby takes over within about this long.
    package var leaseSeconds: Int = 3
    /// With an etcd control plane: how long an active coordinator that had
    /// live workers may have none before it steps down for a standby the
    /// workers can reach (see ``WorkerAbsence``); nil or 0: never. Not used
    /// with a file control plane, whose coordinators share one host with
    /// their workers.
    package var stepDownWithoutWorkersMs: Int?
    /// How long a replica may leave a write unanswered after another replica
    /// of its shard committed it before it is taken for lost (see
    /// ``WriteTracker/laggards(at:limit:)``); nil or 0: never.
    package var replicaLagMs: Int? = 10_000
    /// How long a shard copy may go without a chunk sent or acknowledged
    /// before it is abandoned (the sweep starts it again). A copy moves one
    /// message at a time, and nothing else notices a message that was lost
    /// on its way or a worker that stopped answering while its heartbeats
    /// go on. The last chunk's answer waits for the copy to be installed.
    package var copyStallMs: Int = 60_000
    /// The endpoints a standby names in `not_active` answers (default: the
    /// bound ones, which suit loopback; give routable ones across hosts).
    package var advertiseClients: String?
    package var advertiseWorkers: String?

    package init() {}
}

/// ZeroMQ spells "any free port" as `*`; the command line spells it 0. ZeroMQ
/// binds to addresses or interface names, so `localhost` is bound as 127.0.0.1.
func zmqEndpoint(_ s: String) -> String {
    var e = s.replacingOccurrences(of: "tcp://localhost:", with: "tcp://127.0.0.1:")
    if e.hasSuffix(":0") { e = String(e.dropLast(2)) + ":*" }
    return e
}
