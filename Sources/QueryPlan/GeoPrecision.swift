import Foundation
import Items

/// Algolia's `aroundPrecision`: how coarsely the `geo` criterion of a
/// ranking formula compares distances from the search's point. Distances in
/// the same group tie on `geo`, so the criteria after it (a custom ranking
/// of ratings, say) decide between them.
///
/// Either one size, in metres (`aroundPrecision: 100`: 0–99 m tie, then
/// 100–199 m, …), or bands of sizes by distance
/// (`[{"from": 0, "value": 25}, {"from": 1000, "value": 2000}]`: 25 m groups
/// up to 999 m, 2,000 m groups from 1,000 m on). Algolia's documented rules:
/// a size below 10 m counts as 10 m, the default. Where Algolia's pages are
/// silent, this reads: a band's groups start at its `from` (1,000–2,999 m is
/// one group above), bands are taken in order of `from` whatever order they
/// are given in, and distances below the first `from` are grouped by 10 m.
public struct GeoPrecision: Sendable, Hashable {
    public struct Band: Sendable, Hashable {
        /// Metres from which the band applies.
        public var from: Double
        /// The size of its groups, in metres (10 at least).
        public var value: Double

        public init(from: Double, value: Double) {
            self.from = from
            self.value = value
        }
    }

    /// The bands, by ascending `from`; the first starts at 0.
    public let bands: [Band]

    /// Groups of 10 m: Algolia's default, and the smallest it takes.
    public static let minimum = 10.0
    public static let algoliaDefault = GeoPrecision(metres: minimum)

    /// Groups of `metres` at every distance.
    public init(metres: Double) {
        bands = [Band(from: 0, value: Swift.max(Self.minimum, metres))]
    }

    /// Bands by distance (see the type's comment for the reading of their edges).
    public init(bands given: [Band]) {
        var sorted = given.map { Band(from: Swift.max(0, $0.from), value: Swift.max(Self.minimum, $0.value)) }
            .sorted { $0.from < $1.from }
        if sorted.first.map({ $0.from > 0 }) ?? true { sorted.insert(Band(from: 0, value: Self.minimum), at: 0) }
        bands = sorted
    }

    /// The band `metres` falls in.
    func band(of metres: Double) -> Int {
        var i = 0
        while i + 1 < bands.count, bands[i + 1].from <= metres { i += 1 }
        return i
    }

    /// Orders as the groups do: -1 when `a` is in a nearer group than `b`,
    /// 1 when in a farther one, 0 when they tie.
    public func compare(_ a: Double, _ b: Double) -> Int {
        let (i, j) = (band(of: a), band(of: b))
        if i != j { return i < j ? -1 : 1 }
        let p = ((a - bands[i].from) / bands[i].value).rounded(.down)
        let q = ((b - bands[j].from) / bands[j].value).rounded(.down)
        return p < q ? -1 : p > q ? 1 : 0
    }

    /// The size of the groups at `metres`: what Algolia's `_rankingInfo`
    /// reports as `geoPrecision`, and divides `geoDistance` by.
    public func precision(at metres: Double) -> Double { bands[band(of: metres)].value }

    /// A number for one size from 0, else the bands.
    public var json: JSONValue {
        if bands.count == 1 { return .number(bands[0].value) }
        return .array(bands.map { .object(["from": .number($0.from), "value": .number($0.value)]) })
    }

    /// Reads Algolia's forms: a number (or its text, as a URL-encoded
    /// `params` string carries it), or a list of `{from, value}` (or its JSON
    /// text). Nil, with `problem` saying what was expected, otherwise.
    public static func parse(_ v: JSONValue) -> Result<GeoPrecision, Problem> {
        if let n = v.doubleValue ?? v.stringValue.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }) {
            guard n.isFinite, n >= 0 else { return .failure(Problem("expected metres (a number, 0 or more)")) }
            return .success(GeoPrecision(metres: n))
        }
        var list = v.arrayValue
        if list == nil, let s = v.stringValue, let parsed = try? JSONValue.parse(s) { list = parsed.arrayValue }
        guard let list, !list.isEmpty else {
            return .failure(Problem("expected metres, or a list of {\"from\": metres, \"value\": metres}"))
        }
        var bands: [Band] = []
        for (i, b) in list.enumerated() {
            guard let from = b["from"]?.doubleValue, let value = b["value"]?.doubleValue, from.isFinite, value.isFinite,
                from >= 0, value >= 0
            else { return .failure(Problem("item \(i): expected {\"from\": metres, \"value\": metres}")) }
            bands.append(Band(from: from, value: value))
        }
        return .success(GeoPrecision(bands: bands))
    }

    /// What was wrong with a value given for `aroundPrecision`.
    public struct Problem: Error, Sendable, Equatable {
        public let message: String
        init(_ message: String) { self.message = message }
    }
}
