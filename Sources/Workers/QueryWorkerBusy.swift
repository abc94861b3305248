import WireProtocol

extension QueryWorkerService {
    /// Answers a shard query that found the job queue full: `busy`, at once,
    /// so the coordinator can try another replica of the shard or name the
    /// shard in the completion, instead of the query waiting behind a queue
    /// that grows without bound.
    func refuseBusy(_ key: String, shard: Int) {
        running.remove(key, shard: shard)
        tally.finished(failed: true)
        logger.notice("query refused: the job queue is full", metadata: ["query.id": "\(key)", "shard": "\(shard)",
                                                                          "queue.limit": "\(configuration.maxQueued)"])
        link.sendNow(key, .shardDone(Body.ShardDone(shard: shard, count: 0, error: WireError(
            code: "busy", message: "query worker \(configuration.workerID) is overloaded: \(configuration.maxQueued) shard queries already wait; try again later"))))
    }
}
