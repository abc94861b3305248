import ControlPlane
import Foundation
import Tenancy

extension CoordinatorService {
    /// Keeps this coordinator's API keys and the control plane's in
    /// agreement (``KeySharing``): once it serves, reads the keys there,
    /// takes those it lacks and writes those the control plane lacks, then
    /// lets the requests it held be judged; writes each key made or revoked
    /// before it is answered. A standby reads the keys every
    /// `standbyEvery`, so that its view is warm when it takes over.
    func followKeys(_ store: any ControlPlaneStore, sealKey: [UInt8], standbyEvery: Duration = .seconds(2)) async {
        let keys = ClusterKeys(cluster: configuration.cluster)
        let clock = ContinuousClock()
        var standbyRead: ContinuousClock.Instant?
        var failures = 0
        while !Task.isCancelled {
            do {
                if let epoch = await core.keysToRead {
                    let publish = await core.mergeSharedKeys(try await Self.sharedKeys(store, keys, sealKey: sealKey))
                    for k in publish { try await store.put(keys.apiKey(id: k.record.id), try k.encoded(sealKey: sealKey)) }
                    await core.keysRead(epoch: epoch)
                    failures = 0
                }
                for change in await core.takeKeyChanges() {
                    var failure: String?
                    do { try await store.put(keys.apiKey(id: change.key.record.id), try change.key.encoded(sealKey: sealKey)) } catch {
                        failure = "\(error)"
                    }
                    await core.keyChanged(change, failure: failure)
                }
                if election?.servingEpoch() == nil, standbyRead.map({ clock.now - $0 >= standbyEvery }) ?? true {
                    standbyRead = clock.now
                    _ = await core.mergeSharedKeys(try await Self.sharedKeys(store, keys, sealKey: sealKey))
                }
            } catch {
                failures += 1
                // Every failure while requests wait for the keys is worth a line; a standby's, the first of a run.
                let awaited = await core.keysToRead != nil
                if failures == 1 || awaited {
                    logger.warning("could not read or write the cluster's API keys in the control plane", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .milliseconds(200))
            }
            await core.keysWork.wait(upTo: .milliseconds(250))
        }
    }

    /// The keys the control plane holds. One that cannot be read fails the
    /// whole read: taking the others and writing this coordinator's over it
    /// would replace a key that other coordinators read well.
    static func sharedKeys(_ store: any ControlPlaneStore, _ keys: ClusterKeys, sealKey: [UInt8]) async throws -> [SharedKey] {
        try await store.range(keys.apiKeys, prefix: true).values.map { kv throws(TenancyError) in
            try SharedKey(decoding: kv.value, sealKey: sealKey)
        }
    }
}
