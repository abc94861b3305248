import Foundation
import Items
import QueryPlan
import WireProtocol

/// Merges the shards' answers to one search and shapes Algolia's response.
///
/// Shards each send their best `offset + length` hits, ranked by
/// ``SearchRanking``; the merge ranks their union by the same comparison and
/// keeps the page. Match counts, facet counts and facet sums add up exactly,
/// because every shard counts over its whole matching set.
package struct SearchResponseBuilder: Sendable {
    package let request: SearchRequest
    var hits: [(id: String, item: JSONValue, rank: SearchRank)] = []
    /// Per hit, its item as JSON text when the shard sent it so
    /// (``Body/RankedHit/rawItem``; its `item` is then `null`).
    var rawItems: [RawJSON?] = []
    var nbHits = 0
    var facets: [String: [String: Int]] = [:]
    var stats: [String: FacetStats] = [:]
    var exhaustiveFacets = true
    var exhaustiveHits = true

    /// Applied to each item of the page before it is written (an app's
    /// search: its names, `TenantScope.unqualify(item:)`); the hits of every
    /// shard are kept as they came, and only the page's are rewritten.
    package let itemTransform: (@Sendable (JSONValue) -> JSONValue)?

    package init(request: SearchRequest, itemTransform: (@Sendable (JSONValue) -> JSONValue)? = nil) {
        self.request = request
        self.itemTransform = itemTransform
    }

    /// Adds one shard's answer.
    package mutating func add(_ r: Body.ShardSearchResult) {
        nbHits += r.nbHits
        exhaustiveFacets = exhaustiveFacets && r.exhaustiveFacetsCount
        hits.reserveCapacity(hits.count + r.hits.count)
        rawItems.reserveCapacity(rawItems.count + r.hits.count)
        for h in r.hits {
            hits.append((h.id, h.item, h.rank))
            rawItems.append(h.rawItem)
        }
        for (facet, counts) in r.facets { facets[facet, default: [:]].merge(counts, uniquingKeysWith: +) }
        for (facet, s) in r.facetStats where s.count == 4 {
            let new = FacetStats(min: s[0], max: s[1], sum: s[2], count: Int(s[3]))
            if stats[facet] == nil { stats[facet] = new } else { stats[facet]!.merge(new) }
        }
    }

    /// A shard that did not answer: the counts are then not exhaustive.
    package mutating func shardFailed() { exhaustiveHits = false; exhaustiveFacets = false }

    /// The response object, with `processingTimeMS`, written directly as
    /// the bytes ``JSONWriter`` would give for its tree (sorted keys): the
    /// coordinator splices them into its frame (``Body/SearchResult/written(_:failedShards:)``,
    /// and a typed query's results, ``Body/SuggestResult/written(suggestions:response:failedShards:)``).
    ///
    /// Why: building the hits and their highlights as trees of small
    /// dictionaries, which the writer then walks and sorts again, cost an
    /// eighth of a two-word search through a one-shard cluster.
    package func responseBytes(processingTimeMS: Int) -> [UInt8] {
        let plan = request.plan
        // A local: the sort's closure then holds the hits, not a copy of
        // the whole builder (request, plan, facets) made for it.
        let hits = self.hits
        // Positions into `hits`, not the hits: a hit is three values, two of
        // them counted references, copied at every step of a sort and again
        // into the page.
        let ranked: [(index: Int, fusion: HybridRanking.Placement?)]
        if plan.semantic != nil {
            // Both rankings, numbered over every shard's hits, fused (see HybridRanking).
            ranked = HybridRanking.fuse(ranks: hits.map(\.rank), ids: hits.map(\.id), plan: plan).map { ($0.index, $0) }
        } else {
            // One integer per hit for the criteria that decide most
            // comparisons (``SearchRankKey``, which orders as `compare` does
            // on the criteria it packs when the query has words); ties go
            // to the rest of the plan's order.
            var keys: [UInt64] = []
            let rankKey = SearchRankKey(plan: plan)
            var keyed = !plan.words.isEmpty && !rankKey.packed.isEmpty
            if keyed {
                keys.reserveCapacity(hits.count)
                for i in hits.indices {
                    guard let k = rankKey.key(hits[i].rank) else { keyed = false; break }
                    keys.append(k)
                }
            }
            // A tie on the key goes to the identifiers alone when nothing
            // after the key tells the hits apart (see
            // ``SearchRanking/afterPrimaryMatters(_:)``), sparing the whole
            // comparison per tie, which copies each hit out for it.
            let ranks = hits.map(\.rank), ids = hits.map(\.id)
            let byID = keyed && !rankKey.restMatters(ranks)
            ranked = hits.indices.sorted { a, b in
                if keyed, keys[a] != keys[b] { return keys[a] < keys[b] }
                if byID { return ids[a] < ids[b] }
                if keyed {
                    let c = rankKey.compareRest(ranks[a], ranks[b], plan: plan)
                    return c != 0 ? c < 0 : ids[a] < ids[b]
                }
                return SearchRanking.precedes(ranks[a], ids[a], ranks[b], ids[b], plan: plan)
            }.map { ($0, nil) }
        }
        let limit = min(request.offset + request.length, request.paginationLimitedTo)
        var page = request.offset < limit ? ranked[min(ranked.count, request.offset)..<min(ranked.count, limit)] : []
        var nbHits = nbHits
        if let d = plan.distinct {
            // Groups, not hits, are paged and counted (Algolia's `hitsPerPage`
            // counts groups with distinct): the best `count` hits of each
            // value over every shard (a value may be on several), each
            // group's together in the order of its best.
            let groups = DistinctPlan.pick(
                Array(ranked.indices), keys: { hits[ranked[$0].index].rank.distinctValue }, perGroup: d.count, groups: limit)
            page = request.offset < groups.count ? ArraySlice(groups[request.offset...].joined().map { ranked[$0] }) : []
            nbHits = DistinctPlan.groups(facets[DistinctPlan.groupsFacet] ?? [:])
        }
        var hitBytes: [UInt8] = [UInt8(ascii: "[")]
        if !page.isEmpty {
            writeHits(Array(page), hits, rawItems, plan, into: &hitBytes)
        }
        hitBytes.append(UInt8(ascii: "]"))
        var o = JSONObjectWriter()
        o.set("hits", bytes: hitBytes)
        o.set("nbHits", .number(Double(nbHits)))
        o.set("hitsPerPage", .number(Double(request.hitsPerPage)))
        o.set("exhaustiveNbHits", .bool(exhaustiveHits))
        o.set("exhaustiveFacetsCount", .bool(exhaustiveFacets))
        o.set("query", .string(request.query))
        o.set("params", .string(Self.urlEncoded(request.params)))
        o.set("processingTimeMS", .number(Double(processingTimeMS)))
        let served = min(nbHits, request.paginationLimitedTo)
        if request.usesOffset {
            o.set("offset", .number(Double(request.offset)))
            o.set("length", .number(Double(request.length)))
        } else {
            o.set("page", .number(Double(request.page)))
            o.set("nbPages", .number(request.hitsPerPage == 0 ? 0 : Double((served + request.hitsPerPage - 1) / request.hitsPerPage)))
        }
        if !plan.facets.isEmpty {
            // `*`: every facet with a value on some shard, beside those named.
            let facetNames =
                plan.facets.contains("*")
                ? Array(
                    Set(plan.facets.filter { $0 != "*" }).union(facets.filter { !$0.value.isEmpty && $0.key != DistinctPlan.groupsFacet }.keys)
                ).sorted()
                : plan.facets
            var f: [String: JSONValue] = [:]
            for facet in facetNames {
                var values = (facets[facet] ?? [:]).map { ($0.key, $0.value) }
                values.sort { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
                f[facet] = .object(Dictionary(uniqueKeysWithValues: values.prefix(plan.maxValuesPerFacet).map { ($0.0, .number(Double($0.1))) }))
            }
            o.set("facets", .object(f))
            var fs: [String: JSONValue] = [:]
            for facet in facetNames {
                guard let s = stats[facet], s.count > 0 else { continue }
                fs[facet] = .object([
                    "min": .number(s.min), "max": .number(s.max), "sum": .number(s.sum),
                    "avg": .number(s.sum / Double(s.count)),
                ])
            }
            o.set("facets_stats", .object(fs))
        }
        if plan.around != nil {
            o.set("aroundLatLng", .string("\(plan.around!.latitude),\(plan.around!.longitude)"))
        }
        var out: [UInt8] = []
        out.reserveCapacity(hitBytes.count + 512)
        o.write(into: &out)
        return out
    }

    /// The page's hits, comma-separated, with one highlighter and its
    /// buffers for all of them (made only when there are hits to write).
    func writeHits(
        _ page: [(index: Int, fusion: HybridRanking.Placement?)],
        _ hits: [(id: String, item: JSONValue, rank: SearchRank)], _ rawItems: [RawJSON?], _ plan: SearchPlan,
        into out: inout [UInt8]
    ) {
        let highlighter = Highlighter(
            plan: plan, preTag: request.highlightPreTag, postTag: request.highlightPostTag,
            ellipsis: request.snippetEllipsisText)
        let retrieved = request.attributesToRetrieve.map(Set.init)
        let toHighlight = Self.highlighted(request)
        let scratch = HighlightScratch(highlighter)
        out.reserveCapacity(256 * page.count)
        for (i, p) in page.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            let h = hits[p.index]
            var item = h.item
            var raw = p.index < rawItems.count ? rawItems[p.index] : nil
            if let itemTransform {
                item = itemTransform(raw.flatMap { try? $0.decoded() } ?? item)
                raw = nil
            }
            writeHit(
                h.id, item, h.rank, highlighter, retrieved: retrieved, toHighlight: toHighlight, fusion: p.fusion,
                scratch: scratch, rawItem: raw, into: &out)
        }
    }

    /// `attributesToHighlight` sorted, each name once (so that the entries
    /// are written in JSONWriter's order straight into one buffer); nil
    /// when not given: each hit then highlights its retrieved text values.
    static func highlighted(_ request: SearchRequest) -> [String]? {
        request.attributesToHighlight.map { Array(Set($0)).sorted() }
    }

    /// One hit: `objectID`, the retrieved attributes at the top level (as
    /// Algolia's records have them), `domainIdentifier`, `entity`, and the
    /// `_highlightResult`, `_snippetResult`, `_rankingInfo`, `_geoDistance` asked for.
    /// `retrieved`: `attributesToRetrieve` as a set, and `named`:
    /// ``highlighted(_:)``, both made once per response.
    /// `scratch`: the response's highlight buffers (one is made when nil).
    /// `rawItem`: the item as JSON text (then `item` is not read), its
    /// values copied as they are (``ItemMembers``).
    func writeHit(
        _ id: String, _ item: JSONValue, _ rank: SearchRank, _ highlighter: Highlighter,
        retrieved: Set<String>?, toHighlight named: [String]?, fusion: HybridRanking.Placement? = nil,
        scratch: HighlightScratch? = nil, rawItem: RawJSON? = nil, into out: inout [UInt8]
    ) {
        let members = rawItem.flatMap(ItemMembers.init(raw:)) ?? ItemMembers(tree: rawItem.flatMap { try? $0.decoded() } ?? item)
        // Room for every member at once (the attributes, `objectID`, the
        // domain, the entity, the results): grown from empty, the list would
        // be reallocated three or four times a hit.
        var o = JSONObjectWriter(capacity: members.attributes.count + 8)
        var textNames: [String] = []
        for a in members.attributes where retrieved?.contains(a.key) ?? true {
            switch a.value {
            case .tree(let v): o.set(a.key, v)
            case .raw(let bytes): o.set(a.key, bytes: bytes)
            }
            if named == nil, a.value.isText { textNames.append(a.key) }
        }
        // Later members win, as in JSONWriter: an attribute called
        // `objectID` gives way to the identifier.
        func set(_ key: String, _ value: ItemMembers.Value?) {
            switch value {
            case .tree(let v)?: o.set(key, v)
            case .raw(let bytes)?: o.set(key, bytes: bytes)
            case nil: break
            }
        }
        if let prefix = request.recordPrefix {
            o.set("objectID", .string(id.hasPrefix(prefix) ? String(id.dropFirst(prefix.count)) : id))
        } else {
            o.set("objectID", .string(id))
            set("domainIdentifier", members.domain)
            set("entity", members.entity)
        }
        func attribute(_ name: String) -> JSONValue? { members.attributes.first { $0.key == name }?.value.tree }

        let toHighlight = named ?? textNames.sorted()
        if !toHighlight.isEmpty {
            let scratch = scratch ?? HighlightScratch(highlighter)
            // Each named value found once: text held as JSON with no
            // escapes is highlighted on its bytes, anything else read into a
            // tree first (a value that reads as neither is left out).
            enum Highlighted { case plain(ArraySlice<UInt8>), tree(JSONValue) }
            var size = 0
            let values: [(name: String, value: Highlighted)] = toHighlight.compactMap { name in
                guard let member = members.attributes.first(where: { $0.key == name })?.value else { return nil }
                size += 96 + 2 * member.textSize
                if let plain = member.plainText { return (name, .plain(plain)) }
                return member.tree.map { (name, .tree($0)) }
            }
            // Sized for the values once: grown from one byte, the buffer
            // would be reallocated about seven times a hit.
            var b: [UInt8] = []
            b.reserveCapacity(size)
            b.append(UInt8(ascii: "{"))
            for (i, (name, value)) in values.enumerated() {
                if i > 0 { b.append(UInt8(ascii: ",")) }
                JSONWriter.writeString(name, into: &b)
                b.append(UInt8(ascii: ":"))
                switch value {
                case .plain(let bytes): bytes.withUnsafeBufferPointer { highlighter.writeResult(utf8: $0, scratch, into: &b) }
                case .tree(let v): writeHighlight(v, highlighter, scratch, into: &b)
                }
            }
            b.append(UInt8(ascii: "}"))
            o.set("_highlightResult", bytes: b)
        }
        if !request.snippetNames.isEmpty {
            var s: [String: JSONValue] = [:]
            for (name, words) in request.attributesToSnippet {
                guard let value = attribute(name) else { continue }
                s[name] = snippet(value, words: words, highlighter)
            }
            o.set("_snippetResult", .object(s))
        }
        if let d = rank.geoDistance { o.set("_geoDistance", .number(d)) }
        if request.getRankingInfo {
            // Every field Algolia's clients require (their `RankingInfo`):
            // Limelight's figures for the criteria it computes; `filters`
            // and `userScore` constant 0 and `promoted` false (no
            // `optionalFilters` scores, no stored score, no rules);
            // `geoDistance` 0 without a point, as Algolia answers.
            var info: [String: JSONValue] = [
                "nbTypos": .number(Double(rank.typos)),
                "words": .number(Double(rank.words)),
                "proximityDistance": .number(Double(rank.proximity)),
                "firstMatchedWord": .number(Double(rank.attribute)),
                "nbExactWords": .number(Double(rank.exactWords)),
                "exactValue": .bool(rank.exactAttribute != SearchRank.noExactAttribute),
                "exactAttribute": .number(Double(rank.exactAttribute)),
                "customRanking": .array(rank.custom),
                "filters": .number(0),
                "userScore": .number(0),
                "promoted": .bool(false),
            ]
            // As Algolia reports them: `geoDistance` the distance divided by
            // the precision of its group (``GeoPrecision``), `geoPrecision`
            // that precision (`_geoDistance` on the hit stays in metres).
            info["geoDistance"] = .number(0)
            if let d = rank.geoDistance {
                let precision = (request.plan.aroundPrecision ?? .algoliaDefault).precision(at: d)
                info["geoDistance"] = .number((d / precision).rounded(.down))
                info["geoPrecision"] = .number(precision)
            }
            if let fusion {
                // Both parts of a hybrid rank: the positions in each ranking
                // (null past the window), the cosine score, the fused score.
                info["lexicalRank"] = fusion.lexicalRank.map { .number(Double($0)) } ?? .null
                info["semanticRank"] = fusion.semanticRank.map { .number(Double($0)) } ?? .null
                info["semanticScore"] = rank.semanticScore.map { .number($0) } ?? .null
                info["hybridScore"] = .number(fusion.score)
                info["navigational"] = .bool(fusion.navigational)
            }
            o.set("_rankingInfo", .object(info))
        }
        o.write(into: &out)
    }

    /// One hit as a tree (Spotlight's groups): ``writeHit`` read back.
    func hit(
        _ id: String, _ item: JSONValue, _ rank: SearchRank, _ highlighter: Highlighter,
        retrieved: Set<String>?
    ) -> JSONValue {
        var out: [UInt8] = []
        writeHit(id, item, rank, highlighter, retrieved: retrieved, toHighlight: Self.highlighted(request), into: &out)
        return try! JSONValue.parse(Data(out))
    }

    static func isText(_ v: JSONValue) -> Bool {
        switch v {
        case .string: true
        case .array(let a): a.contains { if case .string = $0 { true } else { false } }
        default: false
        }
    }

    /// A value's `_highlightResult` entry (an array's, per element), in
    /// ``JSONWriter``'s form: `fullyHighlighted`, `matchLevel`,
    /// `matchedWords`, `value`, in that (sorted) order.
    func writeHighlight(_ value: JSONValue, _ h: Highlighter, _ scratch: HighlightScratch, into out: inout [UInt8]) {
        switch value {
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeHighlight(v, h, scratch, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .string(let s):
            h.writeResult(s, scratch, into: &out)
        default:
            let text: String
            if case .number(let d) = value {
                text = canonicalText(d)
            } else if case .bool(let b) = value {
                text = b ? "true" : "false"
            } else {
                text = ""
            }
            Highlighter.writeEntry(fully: false, level: .none, words: [String](), into: &out) { out in
                var text = text
                text.withUTF8 { JSONWriter.writeEscaped($0, into: &out) }
            }
        }
    }

    func snippet(_ value: JSONValue, words: Int, _ h: Highlighter) -> JSONValue {
        switch value {
        case .array(let a): return .array(a.map { snippet($0, words: words, h) })
        case .string(let s):
            let r = h.snippet(s, words: words)
            return .object(["value": .string(r.value), "matchLevel": .string(r.matchLevel)])
        default:
            return .object(["value": .string(""), "matchLevel": .string("none")])
        }
    }

    /// The parameters as Algolia echoes them: URL-encoded, values that are not
    /// text written as JSON.
    private static let hex = Array("0123456789ABCDEF".utf8)

    package static func urlEncoded(_ params: JSONValue) -> String {
        guard case .object(let o) = params else { return "" }
        var out: [UInt8] = []
        for k in o.keys.sorted() {
            if !out.isEmpty { out.append(UInt8(ascii: "&")) }
            out.append(contentsOf: k.utf8)
            out.append(UInt8(ascii: "="))
            let v: String
            if case .string(let s) = o[k]! { v = s } else { v = JSONWriter.string(o[k]!) }
            percentEncode(v, into: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3986's unreserved characters as they are, every other byte of
    /// the UTF-8 as `%XX`: what `addingPercentEncoding` with letters,
    /// digits and `-._~` gives for ASCII, without Foundation's character
    /// sets, which made echoing the parameters 5% of an empty search's
    /// time in the coordinator. (Foundation's alphanumerics
    /// also pass letters past ASCII unencoded; Algolia's echo, and this,
    /// encode their bytes.)
    static func percentEncode(_ value: String, into out: inout [UInt8]) {
        for b in value.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 15)])
            }
        }
    }
}
