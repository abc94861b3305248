import Foundation
import Items
import QueryPlan
import WireProtocol

extension SearchResponseBuilder {
    /// Hits rendered as a search response renders them (`objectID`, the
    /// attributes, `domainIdentifier`, `entity`, highlights, `_geoDistance`),
    /// for Spotlight's groups.
    package func render(_ hits: [Body.RankedHit]) -> [JSONValue] {
        let plan = request.plan
        let highlighter = Highlighter(
            plan: plan, preTag: request.highlightPreTag, postTag: request.highlightPostTag,
            ellipsis: request.snippetEllipsisText)
        let retrieved = request.attributesToRetrieve.map(Set.init)
        return hits.map { h in hit(h.id, h.tree, h.rank, highlighter, retrieved: retrieved) }
    }

    /// Whether group `a`'s best hit ranks above group `b`'s (an empty group
    /// last); ties go to the larger total, then the domain's name.
    package func groupPrecedes(_ a: Body.ShardGroup, _ b: Body.ShardGroup) -> Bool {
        switch (a.hits.first, b.hits.first) {
        case (let x?, let y?):
            let rx = x.rank, ry = y.rank
            if SearchRanking.precedes(rx, x.id, ry, y.id, plan: request.plan) { return true }
            if SearchRanking.precedes(ry, y.id, rx, x.id, plan: request.plan) { return false }
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): break
        }
        return a.total != b.total ? a.total > b.total : a.domainIdentifier < b.domainIdentifier
    }
}

/// What a Spotlight group's continuation token holds: the text, the group's
/// domain and the other parameters of the search (a location, say), so that
/// `continue` resumes exactly that list. It is base64url (no padding) of
/// that JSON object — opaque to apps, readable when debugging.
package struct ContinuationToken: Sendable, Hashable {
    package var text: String
    package var domain: String
    package var params: [String: JSONValue]

    package init(text: String, domain: String, params: [String: JSONValue] = [:]) {
        self.text = text
        self.domain = domain
        self.params = params
    }

    package var encoded: String {
        let json = JSONWriter.string(.object(["text": .string(text), "domain": .string(domain), "params": .object(params)]))
        return Data(json.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package init(token: String) throws(SearchParametersError) {
        var b64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64), let json = try? JSONValue.parse(data),
            let text = json["text"]?.stringValue, let domain = json["domain"]?.stringValue
        else {
            throw SearchParametersError(.invalidParameter, "not a continuation token from a spotlight result", parameter: "token")
        }
        self.init(text: text, domain: domain, params: json["params"]?.objectValue ?? [:])
    }

    /// The search of one page of the group's list: the token's parameters
    /// with the text, page and page size, restricted to exactly the domain
    /// (a subdomain was a group of its own).
    package func request(page: Int, hitsPerPage: Int) throws(SearchParametersError) -> SearchRequest {
        var p = params
        p["query"] = .string(text)
        p["page"] = .number(Double(page))
        p["hitsPerPage"] = .number(Double(hitsPerPage))
        var request = try SearchRequest(params: .object(p))
        request.plan.filter = Predicate.and([request.plan.filter, .exactDomain([domain])]).simplified()
        return request
    }
}
