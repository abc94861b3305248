import Foundation

/// A date a `$time` expression stands for.
///
/// Spotlight's calendar variables name spans of time ("today", "this week"),
/// not instants, so they are kept as half-open periods and each operator
/// decides which end it compares with (see ``SpotlightQueryParser``).
enum TimeValue: Equatable {
    /// An exact moment, in seconds since the reference date.
    case instant(Double)
    /// `[start, end)`, in seconds since the reference date.
    case period(start: Double, end: Double)
}

/// The `$time` variables, resolved against one clock and calendar.
struct TimeResolver {
    let now: Date
    let calendar: Calendar

    /// Offsets further than this are refused: Foundation's calendar
    /// arithmetic is not specified for dates hundreds of millennia away, and
    /// no query means them.
    static let maximumOffset = 100_000

    enum Unit { case day, week, month, year }

    /// A calendar variable: its unit and its fixed shift in that unit
    /// (`yesterday` is `today(-1)`, `last_week` is `this_week(-1)`).
    struct Variable {
        var unit: Unit
        var shift: Int
    }

    /// Every calendar variable by name. `tomorrow` and the `next_`/`last_`
    /// forms are conveniences beyond Apple's table; they cost nothing and
    /// read better than `(1)` and `(-1)` offsets.
    static let variables: [String: Variable] = [
        "today": Variable(unit: .day, shift: 0),
        "yesterday": Variable(unit: .day, shift: -1),
        "tomorrow": Variable(unit: .day, shift: 1),
        "this_week": Variable(unit: .week, shift: 0),
        "last_week": Variable(unit: .week, shift: -1),
        "next_week": Variable(unit: .week, shift: 1),
        "this_month": Variable(unit: .month, shift: 0),
        "last_month": Variable(unit: .month, shift: -1),
        "next_month": Variable(unit: .month, shift: 1),
        "this_year": Variable(unit: .year, shift: 0),
        "last_year": Variable(unit: .year, shift: -1),
        "next_year": Variable(unit: .year, shift: 1),
    ]

    /// The names the parser accepts after `$time.`, for error messages.
    static let allNames = ["now", "iso"] + variables.keys.sorted()

    /// `$time.now(seconds)`.
    func now(offset seconds: Double) -> TimeValue {
        .instant(now.timeIntervalSinceReferenceDate + seconds)
    }

    /// The period of a calendar variable shifted by `offset` units, or nil
    /// when the calendar cannot compute it.
    func period(_ variable: Variable, offset: Int) -> TimeValue? {
        let component: Calendar.Component
        let addUnit: Calendar.Component
        switch variable.unit {
        case .day: component = .day; addUnit = .day
        case .week: component = .weekOfYear; addUnit = .weekOfYear
        case .month: component = .month; addUnit = .month
        case .year: component = .year; addUnit = .year
        }
        let n = variable.shift + offset
        guard let current = calendar.dateInterval(of: component, for: now),
            let start = calendar.date(byAdding: addUnit, value: n, to: current.start),
            let end = calendar.date(byAdding: addUnit, value: n + 1, to: current.start)
        else { return nil }
        return .period(start: start.timeIntervalSinceReferenceDate, end: end.timeIntervalSinceReferenceDate)
    }
}
