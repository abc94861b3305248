import Foundation
import Items

/// A constant of a predicate: a literal or a substituted argument.
enum Value: Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([Value])
    case location(Location)
    /// A `CKReference` / `CKRecord.ID`: the record name it points to.
    case reference(String)
    /// Seconds since the reference date (`now()`, a `{"date": …}` argument).
    case date(Double)

    var kindName: String {
        switch self {
        case .string: "a text"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "nil"
        case .array: "a list"
        case .location: "a location"
        case .reference: "a reference"
        case .date: "a date"
        }
    }
}

/// One side of a comparison.
enum Operand: Equatable {
    case key(String, offset: Int)
    /// `SELF`: the record itself (CloudKit's tokenized search).
    case selfKey(offset: Int)
    case value(Value, offset: Int)
    case function(String, [Operand], offset: Int)

    var offset: Int {
        switch self {
        case .key(_, let o), .selfKey(let o), .value(_, let o), .function(_, _, let o): o
        }
    }
}

enum Quantifier: String { case any = "ANY", all = "ALL", none = "NONE" }

/// Comparison operators, with the spellings folded together (`=>` is `>=`).
enum Operator: String {
    case eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">="
    case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE"
    case matches = "MATCHES", `in` = "IN", tokenMatches = "TOKENMATCHES", between = "BETWEEN"

    /// The operator with its operands swapped: `5 < x` is `x > 5`.
    var mirrored: Operator? {
        switch self {
        case .eq, .ne: self
        case .lt: .gt
        case .le: .ge
        case .gt: .lt
        case .ge: .le
        default: nil
        }
    }

    var isOrdering: Bool { [.lt, .le, .gt, .ge].contains(self) }
}

struct Comparison: Equatable {
    var quantifier: (Quantifier, offset: Int)?
    var lhs: Operand
    var op: Operator
    var opOffset: Int
    var options: String
    var rhs: Operand

    static func == (a: Comparison, b: Comparison) -> Bool {
        a.quantifier?.0 == b.quantifier?.0 && a.lhs == b.lhs && a.op == b.op && a.options == b.options && a.rhs == b.rhs
    }
}

/// The parsed predicate, before the dialect's rules and the lowering to a plan.
indirect enum Syntax: Equatable {
    case constant(Bool)
    case and([Syntax])
    case or([Syntax])
    case not(Syntax, offset: Int)
    case comparison(Comparison)
}
