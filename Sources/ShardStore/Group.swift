import SQLite

/// Why a group of changes (``ShardStore/group(_:)``) committed none of them.
package struct GroupError: Error, Sendable, CustomStringConvertible {
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        let raw: String
        private init(_ raw: String) { self.raw = raw }
        package var description: String { raw }

        /// SQLite ended the group's transaction itself while a change failed
        /// (a full disk, an I/O error, memory): the changes before it are
        /// gone with it.
        package static let transactionLost = Code("transaction_lost")
        /// The transaction could not begin or commit.
        package static let commitFailed = Code("commit_failed")
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}

extension ShardStore {
    /// Runs `changes` in order in one write transaction, each in a savepoint
    /// of its own, and commits them together: one commit, so the pages that
    /// several changes touch (the value indexes' above all) are written to
    /// the log and checkpointed once rather than once a change.
    ///
    /// Each change keeps its own outcome: one that throws is rolled back to
    /// its savepoint and its error is its result, and the others still
    /// commit; a change sees those before it in the group, as it would have
    /// seen them committed. Nothing of the group is in the file until this
    /// returns, so whatever acknowledges a change must wait for the return.
    ///
    /// Throws ``GroupError`` when the transaction itself fails, at its
    /// beginning or commit, or because SQLite rolled it back while a change
    /// failed; then no change of the group is stored, whatever its result
    /// said.
    package func group<T>(_ changes: [(ShardStore) throws -> T]) throws -> [Result<T, any Error>] {
        try requireWritable("write a group of changes")
        do {
            return try db.transaction(.immediate) { () throws -> [Result<T, any Error>] in
                var results: [Result<T, any Error>] = []
                results.reserveCapacity(changes.count)
                for change in changes {
                    do {
                        results.append(.success(try db.transaction { try change(self) }))
                    } catch {
                        // Names or identifiers the rolled-back change added
                        // to the caches are gone from the file: read them again.
                        dataVersion = -1
                        results.append(.failure(error))
                        if db.isAutocommit {
                            throw GroupError(
                                .transactionLost, "the shard's transaction ended while change \(results.count) of \(changes.count) failed: \(error)")
                        }
                    }
                }
                return results
            }
        } catch let e as GroupError {
            dataVersion = -1
            throw e
        } catch {
            dataVersion = -1
            throw GroupError(.commitFailed, "cannot commit \(changes.count) changes together: \(StoreError.wrap(error, "commit"))")
        }
    }
}
