import Foundation
import Items
import WireProtocol

/// App entities, typed queries and Spotlight's grouped results.
extension LimelightClient {
    /// Donates entities (`indexAppEntities(_:priority:)`); the answer has one result per entity.
    public func donateEntities(
        _ entities: [JSONValue], priority: Double? = nil, batch: String? = nil,
        timeout: Duration = .seconds(120)
    ) async throws -> Body.PublishAck {
        guard
            case .publishAck(let a) = try await request(
                .entityDonate(Body.EntityDonate(entities: entities, priority: priority, batch: batch)),
                timeout: timeout)
        else {
            throw ClientError(.unexpectedReply, "expected publish_ack")
        }
        return a
    }

    /// Deletes entities of a type: those ids, or all of the type; returns how many there were.
    public func deleteEntities(type: String, ids: [String]? = nil) async throws -> Int {
        guard case .entityAck(let a) = try await request(.entityDelete(Body.EntityDelete(entityType: type, ids: ids))) else {
            throw ClientError(.unexpectedReply, "expected entity_ack")
        }
        return a.count
    }

    /// Associates a stored item with an entity; a missing item is a `not_found` server error.
    public func associateEntity(item uniqueIdentifier: String, _ entity: EntityAssociation) async throws {
        guard case .entityAck = try await request(.entityAssociate(Body.EntityAssociate(uniqueIdentifier: uniqueIdentifier, entity: entity))) else {
            throw ClientError(.unexpectedReply, "expected entity_ack")
        }
    }

    /// A typed query: suggestions for the text, and `hitsPerPage` results beside them when asked for.
    public func suggest(
        _ text: String, limit: Int? = nil, hitsPerPage: Int? = nil, params: JSONValue? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> Body.SuggestResult {
        guard
            case .suggestResult(let r) = try await request(
                .suggest(Body.Suggest(text: text, limit: limit, hitsPerPage: hitsPerPage, params: params)),
                timeout: timeout)
        else {
            throw ClientError(.unexpectedReply, "expected suggest_result")
        }
        return r
    }

    /// Spotlight's grouped results for the text, best group first.
    public func spotlight(
        _ text: String, perDomain: Int? = nil, params: JSONValue? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> Body.SpotlightResult {
        guard
            case .spotlightResult(let r) = try await request(
                .spotlight(Body.Spotlight(text: text, perDomain: perDomain, params: params)),
                timeout: timeout)
        else {
            throw ClientError(.unexpectedReply, "expected spotlight_result")
        }
        return r
    }

    /// One page of a group's full list, from its continuation token.
    public func continueSearch(
        _ token: String, page: Int = 0, hitsPerPage: Int? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> Body.SearchResult {
        guard
            case .searchResult(let r) = try await request(
                .continueSearch(Body.Continue(token: token, page: page, hitsPerPage: hitsPerPage)),
                timeout: timeout)
        else {
            throw ClientError(.unexpectedReply, "expected search_result")
        }
        return r
    }
}
