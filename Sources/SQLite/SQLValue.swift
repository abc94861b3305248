import Foundation

/// A value as SQLite stores it: one of its five storage classes.
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    package var isNull: Bool { self == .null }

    /// The value as an integer, converting a real that is integral.
    package var int64: Int64? {
        switch self {
        case .integer(let i): i
        case .real(let d) where d.rounded() == d && abs(d) < 9.2e18: Int64(d)
        default: nil
        }
    }

    /// The value as a double, converting integers.
    package var double: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .real(let d): d
        default: nil
        }
    }

    package var string: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    package var data: Data? {
        if case .blob(let d) = self { return d }
        return nil
    }
}

extension SQLValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    package init(nilLiteral: ()) { self = .null }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(floatLiteral value: Double) { self = .real(value) }
    package init(stringLiteral value: String) { self = .text(value) }
    /// SQLite has no boolean class; booleans are the integers 0 and 1.
    package init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
