import Foundation
import Items
import QueryPlan
import SpotlightQuery
import Testing

/// The `$time` variables, resolved against 2026-11-22T15:30:00Z (a Sunday) in UTC.
@Suite struct TimeTests {
    /// A calendar variable and the period `[start, end)` it denotes.
    static let periods: [(String, String, String)] = [
        ("$time.today", "2026-11-22", "2026-11-23"),
        ("$time.today(0)", "2026-11-22", "2026-11-23"),
        ("$time.today(-10)", "2026-11-12", "2026-11-13"),
        ("$time.today(1)", "2026-11-23", "2026-11-24"),
        ("$time.today(+2)", "2026-11-24", "2026-11-25"),
        ("$time.today(-22)", "2026-10-31", "2026-11-01"),
        ("$time.yesterday", "2026-11-21", "2026-11-22"),
        ("$time.yesterday(-1)", "2026-11-20", "2026-11-21"),
        ("$time.yesterday(1)", "2026-11-22", "2026-11-23"),
        ("$time.tomorrow", "2026-11-23", "2026-11-24"),
        ("$time.this_week", "2026-11-22", "2026-11-29"),
        ("$time.this_week(-1)", "2026-11-15", "2026-11-22"),
        ("$time.this_week(1)", "2026-11-29", "2026-12-06"),
        ("$time.last_week", "2026-11-15", "2026-11-22"),
        ("$time.last_week(-1)", "2026-11-08", "2026-11-15"),
        ("$time.next_week", "2026-11-29", "2026-12-06"),
        ("$time.this_month", "2026-11-01", "2026-12-01"),
        ("$time.this_month(-2)", "2026-09-01", "2026-10-01"),
        ("$time.this_month(2)", "2027-01-01", "2027-02-01"),
        ("$time.this_month(-11)", "2025-12-01", "2026-01-01"),
        ("$time.last_month", "2026-10-01", "2026-11-01"),
        ("$time.last_month(-1)", "2026-09-01", "2026-10-01"),
        ("$time.next_month", "2026-12-01", "2027-01-01"),
        ("$time.this_year", "2026-01-01", "2027-01-01"),
        ("$time.this_year(-1)", "2025-01-01", "2026-01-01"),
        ("$time.this_year(3)", "2029-01-01", "2030-01-01"),
        ("$time.last_year", "2025-01-01", "2026-01-01"),
        ("$time.next_year", "2027-01-01", "2028-01-01"),
        ("$time.this_month( -1 )", "2026-10-01", "2026-11-01"),
        ("$Time.Today", "2026-11-22", "2026-11-23"),
    ]

    @Test(arguments: periods)
    func periodBounds(_ expression: String, _ start: String, _ end: String) {
        #expect(
            plan("completionDate == \(expression)")
                == range(
                    "completionDate",
                    Bound(seconds(start), inclusive: true), Bound(seconds(end), inclusive: false)))
    }

    /// Instants: `now` with seconds, and ISO-8601 dates quoted or not.
    static let instants: [(String, String)] = [
        ("$time.now", "2026-11-22T15:30:00Z"),
        ("$time.now(0)", "2026-11-22T15:30:00Z"),
        ("$time.now(-3600)", "2026-11-22T14:30:00Z"),
        ("$time.now(90)", "2026-11-22T15:31:30Z"),
        ("$time.now(-86400)", "2026-11-21T15:30:00Z"),
        ("$time.iso(2026-11-01T12:00:00Z)", "2026-11-01T12:00:00Z"),
        ("$time.iso( 2026-11-01T12:00:00Z )", "2026-11-01T12:00:00Z"),
        (#"$time.iso("2026-11-01T12:00:00+02:00")"#, "2026-11-01T10:00:00Z"),
        ("$time.iso('2026-11-01')", "2026-11-01T00:00:00Z"),
        ("$time.iso(2026-11-01T12:00:00.500Z)", "2026-11-01T12:00:00.500Z"),
        ("$time.iso( 2026-11-01 12:00:00 )", "2026-11-01T12:00:00Z"),
        ("2026-11-01T12:00:00Z", "2026-11-01T12:00:00Z"),
    ]

    @Test(arguments: instants)
    func instantBounds(_ expression: String, _ instant: String) {
        let x = seconds(instant)
        #expect(
            plan("completionDate == \(expression)")
                == range(
                    "completionDate",
                    Bound(x, inclusive: true), Bound(x, inclusive: true)))
        #expect(plan("completionDate > \(expression)") == range("completionDate", Bound(x, inclusive: false), nil))
    }

    @Test func plainNumbersAreSecondsSinceTheReferenceDate() {
        // 2001-01-01T00:00:00Z is 0; 2026-11-22T15:30:00Z is 817_054_200.
        #expect(seconds("2026-11-22T15:30:00Z") == 817_054_200)
        let items = [
            TestItem("before", ["completionDate": .date("2026-11-22T15:29:59Z")]),
            TestItem("at", ["completionDate": .date("2026-11-22T15:30:00Z")]),
            TestItem("after", ["completionDate": .date("2026-11-22T15:30:01Z")]),
        ]
        #expect(matching("completionDate == 817054200", items) == ["at"])
        #expect(matching("completionDate >= 817054200", items) == ["at", "after"])
        #expect(matching("completionDate < $time.now", items) == ["before"])
        #expect(matching("completionDate <= $time.now", items) == ["before", "at"])
        #expect(matching(#"completionDate > "2026-11-22T15:30:00Z""#, items) == ["after"])
        #expect(matching(#"InRange(completionDate, 0, $time.iso(2026-11-22T15:30:00Z))"#, items) == ["before", "at"])
    }

    @Test func operatorsOnPeriods() {
        let items = [
            TestItem("yesterday-late", ["d": .date("2026-11-21T23:59:59Z")]),
            TestItem("today-first", ["d": .date("2026-11-22T00:00:00Z")]),
            TestItem("today-noon", ["d": .date("2026-11-22T12:00:00Z")]),
            TestItem("today-last", ["d": .date("2026-11-22T23:59:59.5Z")]),
            TestItem("tomorrow-first", ["d": .date("2026-11-23T00:00:00Z")]),
            TestItem("undated", ["title": "x"]),
        ]
        let all: Set = ["yesterday-late", "today-first", "today-noon", "today-last", "tomorrow-first"]
        let today: Set = ["today-first", "today-noon", "today-last"]
        #expect(matching("d == $time.today", items) == today)
        #expect(matching("d = $time.today", items) == today)
        #expect(matching("d != $time.today", items) == all.subtracting(today))
        #expect(matching("!(d == $time.today)", items) == all.subtracting(today).union(["undated"]))
        #expect(matching("d < $time.today", items) == ["yesterday-late"])
        #expect(matching("d <= $time.today", items) == today.union(["yesterday-late"]))
        #expect(matching("d > $time.today", items) == ["tomorrow-first"])
        #expect(matching("d >= $time.today", items) == today.union(["tomorrow-first"]))
        #expect(matching("InRange(d, $time.today, $time.today)", items) == today)
        #expect(matching("InRange(d, $time.yesterday, $time.today)", items) == today.union(["yesterday-late"]))
        #expect(matching("InRange(d, $time.today, $time.now)", items) == ["today-first", "today-noon"])
        #expect(matching("d == $time.this_week && d < $time.now", items) == ["today-first", "today-noon"])
    }

    @Test func periodPlans() {
        let s = seconds("2026-11-22T00:00:00Z"), e = seconds("2026-11-23T00:00:00Z")
        #expect(plan("d < $time.today") == range("d", nil, Bound(s, inclusive: false)))
        #expect(plan("d <= $time.today") == range("d", nil, Bound(e, inclusive: false)))
        #expect(plan("d > $time.today") == range("d", Bound(e, inclusive: true), nil))
        #expect(plan("d >= $time.today") == range("d", Bound(s, inclusive: true), nil))
        #expect(
            plan("d != $time.today")
                == .and([
                    .exists(.named("d")),
                    .not(range("d", Bound(s, inclusive: true), Bound(e, inclusive: false))),
                ]))
    }

    @Test func mondayFirstWeeks() {
        let p = SpotlightQueryParser(now: fixedNow, firstWeekday: 2)
        #expect(
            plan("d == $time.this_week", using: p)
                == range(
                    "d",
                    Bound(seconds("2026-11-16"), inclusive: true), Bound(seconds("2026-11-23"), inclusive: false)))
        #expect(
            plan("d == $time.last_week", using: p)
                == range(
                    "d",
                    Bound(seconds("2026-11-09"), inclusive: true), Bound(seconds("2026-11-16"), inclusive: false)))
        // The design sketch's spelling of the same initialiser.
        let q = SpotlightQueryParser(now: fixedNow, timeZone: .gmt, calendar: 2)
        #expect(plan("d == $time.this_week", using: q) == plan("d == $time.this_week", using: p))
        #expect(SpotlightQueryParser(firstWeekday: 9).firstWeekday == 2)
    }

    @Test func timeZoneDecidesWhereDaysBegin() throws {
        // 15:30 UTC is 10:30 in UTC−5, still 2026-11-22 there.
        let p = SpotlightQueryParser(now: fixedNow, timeZone: try #require(TimeZone(secondsFromGMT: -5 * 3600)))
        #expect(
            plan("d == $time.today", using: p)
                == range(
                    "d",
                    Bound(seconds("2026-11-22T05:00:00Z"), inclusive: true), Bound(seconds("2026-11-23T05:00:00Z"), inclusive: false)))
        #expect(
            plan("d == $time.this_month", using: p)
                == range(
                    "d",
                    Bound(seconds("2026-11-01T05:00:00Z"), inclusive: true), Bound(seconds("2026-12-01T05:00:00Z"), inclusive: false)))
        // 02:00 UTC on the 22nd is still the 21st in UTC−5.
        let early = SpotlightQueryParser(
            now: ISODate.parse("2026-11-22T02:00:00Z")!,
            timeZone: try #require(TimeZone(secondsFromGMT: -5 * 3600)))
        #expect(
            plan("d == $time.today", using: early)
                == range(
                    "d",
                    Bound(seconds("2026-11-21T05:00:00Z"), inclusive: true), Bound(seconds("2026-11-22T05:00:00Z"), inclusive: false)))
    }

    @Test func daylightSavingDayIsTwentyFiveHours() throws {
        // New York leaves daylight saving time on Sunday 2026-11-01.
        guard let ny = TimeZone(identifier: "America/New_York") else { return }
        let p = SpotlightQueryParser(now: ISODate.parse("2026-11-01T12:00:00Z")!, timeZone: ny)
        #expect(
            plan("d == $time.today", using: p)
                == range(
                    "d",
                    Bound(seconds("2026-11-01T04:00:00Z"), inclusive: true), Bound(seconds("2026-11-02T05:00:00Z"), inclusive: false)))
    }
}
