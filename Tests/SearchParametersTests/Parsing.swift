import Foundation
import Items

@testable import SearchParameters

/// A search request read from parameters written as JSON, as the REST API
/// and the wire protocol hand them over.
func request(_ json: String) throws -> SearchRequest { try SearchRequest(params: try JSONValue.parse(json)) }

/// The error that reading `json` as search parameters gives, or nil when it is accepted.
func failure(_ json: String) throws -> SearchParametersError? {
    let params = try JSONValue.parse(json)
    do throws(SearchParametersError) { _ = try SearchRequest(params: params); return nil } catch { return error }
}
