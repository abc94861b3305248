import Foundation
import Tenancy
import WireProtocol

/// Writes serialised per item (``ItemWriteLocks``): a publish or a delete by
/// identifiers holds its items' keys from its admission until it is
/// answered, and a read-modify-write (the REST API's partial update) holds
/// them across its read and its write.
extension CoordinatorCore {
    /// The owner of the read-modify-write the current task runs, if any: the
    /// local requests it makes (``localRequest(_:key:)``) act as that owner,
    /// so its own publishes pass the keys it holds.
    @TaskLocal static var lockOwner: String?

    /// Runs `run` now if the request's items are free, or once they are.
    /// The keys are held until the request is answered (``send(_:_:_:)``),
    /// or, for a read-modify-write's own request, until ``unlockItems(_:)``.
    func serialised(_ route: [Data], _ id: String, keys: [String], _ run: @escaping (isolated CoordinatorCore) -> Void) {
        guard !keys.isEmpty else { return run(self) }
        let owner = localLockOwners[route] ?? Self.lockOwner(route, id)
        if itemLocks.acquire(Set(keys), owner: owner, waiter: run) { run(self) }
    }

    /// A request's own owner name: its route and id.
    static func lockOwner(_ route: [Data], _ id: String) -> String {
        route.map { $0.base64EncodedString() }.joined(separator: ",") + "|" + id
    }

    /// Releases what a request held once its last reply is sent.
    func releaseItems(answered route: [Data], _ id: String, _ body: Body) {
        if case .resultBatch(let b) = body, b.completion == nil { return }
        if !localLockOwners.isEmpty, LocalClients.isLocal(route) { localLockOwners.removeValue(forKey: route) }
        guard !itemLocks.isEmpty else { return }
        unlockItems(Self.lockOwner(route, id))
    }

    /// Takes the keys of these items (unique identifiers as `key`'s app
    /// names them) for a read-modify-write, waiting for the writes that hold
    /// them; the owner returned releases them with ``unlockItems(_:)``.
    func lockItems(_ uids: [String], key: String?) async -> String {
        let scope = (try? Access.resolve(key: key, store: keyStore, requireKeys: false))?.scope ?? .unscoped
        let keys = Set(uids.map { scope.qualify(uid: $0) })
        nextLockOwner += 1
        let owner = "rmw-\(nextLockOwner)"
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if itemLocks.acquire(keys, owner: owner, waiter: { _ in c.resume() }) { c.resume() }
        }
        return owner
    }

    /// Releases an owner's keys and starts the writes waiting for them.
    func unlockItems(_ owner: String) {
        for run in itemLocks.release(owner) { run(self) }
    }
}
