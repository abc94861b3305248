import Foundation
import Items

/// App entities (`IndexedEntity`, `CSSearchableIndex.indexAppEntities`):
/// donated, deleted, and associated with stored items.
extension Body {
    /// Donated app entities (`indexAppEntities(_:priority:)`): each is stored
    /// as an item (see `AppEntity`); the answer is a `publish_ack`, one result per entity.
    public struct EntityDonate: Sendable, Hashable, Codable {
        public var entities: [JSONValue]
        /// The batch's priority; overrides each entity's own.
        public var priority: Double?
        public var batch: String?
        public init(entities: [JSONValue], priority: Double? = nil, batch: String? = nil) {
            self.entities = entities; self.priority = priority; self.batch = batch
        }
    }
    /// `deleteAppEntities(identifiedBy:ofType:)` with `ids`, `deleteAppEntities(ofType:)` without.
    public struct EntityDelete: Sendable, Hashable, Codable {
        /// The entity type (not `type`, which every message uses for its own type).
        public var entityType: String
        public var ids: [String]?
        /// Coordinator → indexer: the shards to apply it to.
        public var shards: [Int]?
        public var sequence: Int?
        /// The coordinator epoch that numbered it (see `Body.Write.epoch`).
        public var epoch: Int?
        public init(entityType: String, ids: [String]? = nil, shards: [Int]? = nil) {
            self.entityType = entityType; self.ids = ids; self.shards = shards
        }
    }
    /// `CSSearchableItem.associateAppEntity(_:priority:)` on a stored item.
    public struct EntityAssociate: Sendable, Hashable, Codable {
        public var uniqueIdentifier: String
        public var entity: EntityAssociation
        public var shards: [Int]?
        public var sequence: Int?
        /// The coordinator epoch that numbered it (see `Body.Write.epoch`).
        public var epoch: Int?
        public init(uniqueIdentifier: String, entity: EntityAssociation, shards: [Int]? = nil) {
            self.uniqueIdentifier = uniqueIdentifier; self.entity = entity; self.shards = shards
        }
    }
    /// How many items an entity delete removed, or an association updated.
    public struct EntityAck: Sendable, Hashable, Codable {
        public var count: Int
        public init(count: Int) { self.count = count }
    }
}
