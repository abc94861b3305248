import Foundation
import Items

/// A facet value picked in a UI: `section:utils`, or its negation.
public struct FacetRefinement: Sendable, Hashable {
    public var name: String
    public var value: String
    /// False for an excluding refinement (`section:-utils`).
    public var inclusive: Bool
    public init(name: String, value: String, inclusive: Bool = true) {
        self.name = name
        self.value = value
        self.inclusive = inclusive
    }

    /// The `facetFilters` element: `name:value`, `name:-value`, and a value
    /// that itself starts with `-` escaped as `name:\-value`.
    var filter: String {
        let v = value.hasPrefix("-") ? "\\" + value : value
        return inclusive ? "\(name):\(v)" : "\(name):-\(v)"
    }
}

/// A numeric condition picked in a UI: `installedSize >= 1000`.
public struct NumericRefinement: Sendable, Hashable {
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case lessThan = "<", lessThanOrEqual = "<=", equal = "=", notEqual = "!=", greaterThanOrEqual = ">=", greaterThan = ">"
    }
    public var name: String
    public var op: Operator
    public var value: Double
    /// False to negate the condition.
    public var inclusive: Bool
    public init(name: String, op: Operator, value: Double, inclusive: Bool = true) {
        self.name = name
        self.op = op
        self.value = value
        self.inclusive = inclusive
    }

    /// The `numericFilters` element; a negated condition uses the opposite operator.
    var filter: String {
        var op = self.op
        if !inclusive {
            switch op {
            case .lessThan: op = .greaterThanOrEqual
            case .lessThanOrEqual: op = .greaterThan
            case .equal: op = .notEqual
            case .notEqual: op = .equal
            case .greaterThanOrEqual: op = .lessThan
            case .greaterThan: op = .lessThanOrEqual
            }
        }
        return "\(name) \(op.rawValue) \(canonical(value))"
    }

    func canonical(_ d: Double) -> String {
        d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}

/// Search parameters with refinements, as InstantSearch's `SearchParameters`
/// keeps them: facet and numeric refinements per attribute, each attribute
/// conjunctive (every value must hold) or disjunctive (any value may), turned
/// into Algolia's `facetFilters`, `numericFilters` and `disjunctiveFacets` when
/// the request is built. `filters` written by hand is kept and ANDed with them.
public struct SearchParams: Sendable, Hashable {
    public var query: String?
    public var page: Int?
    public var hitsPerPage: Int?
    public var filters: String?
    /// Facets whose counts the answer should carry.
    public var facets: [String] = []
    /// Any other parameter, by Algolia's name (`attributesToRetrieve`, `aroundLatLng`, …).
    public var other: [String: JSONValue] = [:]
    /// Ranking by meaning too; sent as `semantic`.
    public var semantic: Semantic?

    /// The `semantic` parameter: the text to embed (nil: the query) and its
    /// weight, 0 (words alone) to 1 (meaning alone; nil: the server's 0.5).
    public struct Semantic: Sendable, Hashable {
        public var query: String?
        public var ratio: Double?
        public init(query: String? = nil, ratio: Double? = nil) {
            self.query = query
            self.ratio = ratio
        }
    }

    public private(set) var facetRefinements: [String: [FacetRefinement]] = [:]
    public private(set) var disjunctiveFacets: Set<String> = []
    public private(set) var numericRefinements: [String: [NumericRefinement]] = [:]
    public private(set) var disjunctiveNumerics: Set<String> = []

    public init(query: String? = nil) { self.query = query }

    // MARK: Facet refinements

    public mutating func addFacetRefinement(name: String, value: String, inclusive: Bool = true) {
        let r = FacetRefinement(name: name, value: value, inclusive: inclusive)
        if facetRefinements[name]?.contains(r) == true { return }
        facetRefinements[name, default: []].append(r)
    }

    public mutating func removeFacetRefinement(name: String, value: String) {
        facetRefinements[name]?.removeAll { $0.value == value }
        if facetRefinements[name]?.isEmpty == true { facetRefinements.removeValue(forKey: name) }
    }

    public func hasFacetRefinement(name: String, value: String) -> Bool {
        facetRefinements[name]?.contains { $0.value == value } ?? false
    }

    /// Adds the refinement when absent, removes it when present.
    public mutating func toggleFacetRefinement(name: String, value: String) {
        if hasFacetRefinement(name: name, value: value) {
            removeFacetRefinement(name: name, value: value)
        } else {
            addFacetRefinement(name: name, value: value)
        }
    }

    public mutating func clearFacetRefinements(name: String? = nil) {
        if let name { facetRefinements.removeValue(forKey: name) } else { facetRefinements.removeAll() }
    }

    /// A disjunctive facet ORs its values, and the server counts it as if it
    /// had none picked (so a UI can offer the other values).
    public mutating func setFacet(withName name: String, disjunctive: Bool) {
        if disjunctive { disjunctiveFacets.insert(name) } else { disjunctiveFacets.remove(name) }
        if !facets.contains(name) { facets.append(name) }
    }

    // MARK: Numeric refinements

    public mutating func addNumericRefinement(_ r: NumericRefinement) {
        if numericRefinements[r.name]?.contains(r) == true { return }
        numericRefinements[r.name, default: []].append(r)
    }

    /// Removes the attribute's refinements with that operator (and value, when given).
    public mutating func removeNumericRefinement(name: String, op: NumericRefinement.Operator? = nil, value: Double? = nil) {
        numericRefinements[name]?.removeAll { (op == nil || $0.op == op) && (value == nil || $0.value == value) }
        if numericRefinements[name]?.isEmpty ?? false { numericRefinements.removeValue(forKey: name) }
    }

    public mutating func setNumeric(withName name: String, disjunctive: Bool) {
        if disjunctive { disjunctiveNumerics.insert(name) } else { disjunctiveNumerics.remove(name) }
    }

    // MARK: Building the request

    /// The Algolia parameter object sent to the server.
    public func build() -> JSONValue {
        var o = other
        if let query { o["query"] = .string(query) }
        if let page { o["page"] = .number(Double(page)) }
        if let hitsPerPage { o["hitsPerPage"] = .number(Double(hitsPerPage)) }
        if let filters, !filters.isEmpty { o["filters"] = .string(filters) }
        if !facets.isEmpty { o["facets"] = .array(facets.map { .string($0) }) }
        if let semantic {
            var s: [String: JSONValue] = [:]
            if let q = semantic.query { s["query"] = .string(q) }
            if let r = semantic.ratio { s["ratio"] = .number(r) }
            o["semantic"] = .object(s)
        }
        let disjunctive = facets.filter { disjunctiveFacets.contains($0) }
        if !disjunctive.isEmpty { o["disjunctiveFacets"] = .array(disjunctive.map { .string($0) }) }
        var facetFilters: [JSONValue] = []
        for name in facetRefinements.keys.sorted() {
            let rs = facetRefinements[name]!
            if disjunctiveFacets.contains(name) {
                // Exclusions still hold one by one; inclusions OR together.
                let included = rs.filter(\.inclusive).map { JSONValue.string($0.filter) }
                if !included.isEmpty { facetFilters.append(.array(included)) }
                facetFilters += rs.filter { !$0.inclusive }.map { .string($0.filter) }
            } else {
                facetFilters += rs.map { .string($0.filter) }
            }
        }
        if !facetFilters.isEmpty { o["facetFilters"] = .array(facetFilters) }
        var numericFilters: [JSONValue] = []
        for name in numericRefinements.keys.sorted() {
            let rs = numericRefinements[name]!
            if disjunctiveNumerics.contains(name) {
                numericFilters.append(.array(rs.map { .string($0.filter) }))
            } else {
                numericFilters += rs.map { .string($0.filter) }
            }
        }
        if !numericFilters.isEmpty { o["numericFilters"] = .array(numericFilters) }
        return .object(o)
    }
}
