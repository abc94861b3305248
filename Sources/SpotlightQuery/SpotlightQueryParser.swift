import Foundation
import Items
import QueryPlan

/// Parses Core Spotlight query strings (`CSSearchQuery`) into the shared
/// query plan, so that the store evaluates one plan whatever language the
/// client wrote.
///
/// The grammar is Apple's, with the older `mdfind` spellings accepted too,
/// because developers copy queries from both generations of documentation:
///
/// ```
/// query      := or
/// or         := and ('||' and)*             // && binds tighter than ||
/// and        := unary ('&&' unary)*
/// unary      := '!' unary | primary
/// primary    := '(' or ')'
///             | 'InRange' '(' attribute ',' value ',' value ')'
///             | attribute operator ['[' modifiers ']'] value [modifiers]
/// operator   := '==' | '=' | '!=' | '<' | '>' | '<=' | '>='
/// attribute  := name | '*' | '**'           // kMDItemTitle is title
/// value      := "text" | 'text' | word | number | true | false | $time…
/// modifiers  := one or more of c d w t      // right after the value or the operator
/// ```
///
/// ## Values
/// - Quoted strings take `\` escapes (`\"`, `\'`, `\\`, and `\*`, a literal
///   star); an unescaped `*` is a wildcard. A quoted string is text: with `==`
///   and `!=` it is always a text test, even when it looks like a number (the
///   store compares a number's canonical text); only an ordering or `InRange`
///   reads a quoted number or ISO-8601 date as one.
/// - Unquoted values are typed: a number (`42`, `-1.5`, `2e3`, `0x1F`) or
///   `true`/`false` (1 and 0) is numeric; an ISO-8601 date (`YYYY-MM-DD`) is an
///   instant; anything else is a plain word, compared as text. Modifiers cannot
///   follow an unquoted word (they would read as part of it): write them in
///   brackets, `title ==[c] window`.
/// - Plain numbers compared with dates are seconds since Apple's reference
///   date (`timeIntervalSinceReferenceDate`), which is how the plan stores dates.
///
/// ## Dates: instants and periods
/// `$time.now`, `$time.now(N)` (N seconds from now), `$time.iso(…)` and plain
/// numbers are instants and compare exactly. The calendar variables
/// (`$time.today`, `$time.yesterday`, `$time.this_week`, `$time.last_week`,
/// `$time.this_month`, `$time.this_year`, and `tomorrow`, `next_week`,
/// `last_month`, `next_month`, `last_year`, `next_year`), each with an
/// optional `(N)` offset in its own unit (days, weeks, months, years), stand
/// for a whole period `[start, end)` in the parser's time zone, weeks starting
/// on its first weekday. An operator compares with the end that a person means:
///
/// | query | matches |
/// | --- | --- |
/// | `attr == period` | `start <= attr < end` |
/// | `attr != period` | the attribute is present and not in the period |
/// | `attr < period` | before the period: `attr < start` |
/// | `attr <= period` | up to the end of the period: `attr < end` |
/// | `attr > period` | after the period: `attr >= end` |
/// | `attr >= period` | from the start of the period: `attr >= start` |
/// | `InRange(attr, p1, p2)` | `start(p1) <= attr < end(p2)` |
///
/// So Apple's `InRange(completionDate, $time.today(-10), $time.today)` keeps
/// items completed earlier today, which reading `$time.today` as midnight
/// would drop. `InRange` is otherwise inclusive at both ends.
///
/// ## Negation and missing attributes
/// `attr != value` requires the attribute to be present: an item without a
/// `title` does not match `title != "x"` (as in Spotlight, where a comparison
/// with an absent attribute is false). `!(title == "x")` is the whole
/// complement, items without a title included. With a multi-valued attribute
/// `keywords != "a"` matches items that have keywords, none of them "a".
///
/// ## Attribute names
/// Names are ASCII identifiers: a letter or `_`, then letters, digits, `_`,
/// `.` or `-`. Spotlight's metadata keys name the attribute-set properties:
/// the `kMDItem` prefix is dropped and the next letter lowercased
/// (`kMDItemTitle` → `title`, `kMDItemTextContent` → `textContent`), a
/// leading acronym is kept (`kMDItemGPSStatus` → `GPSStatus`), and the keys
/// whose property has another name are mapped by a small table:
/// `kMDItemAuthors` → `authorNames`, `kMDItemRecipients` → `recipientNames`,
/// `kMDItemDescription` → `contentDescription`, `kMDItemURL` → `url`,
/// `kMDItemFNumber` → `fNumber`, `kMDItemFSName` → `fileName`,
/// `kMDItemFSSize` → `fileSize`, `kMDItemFSCreationDate` → `contentCreationDate`,
/// `kMDItemFSContentChangeDate` → `contentModificationDate`,
/// `kMDItemAttributeChangeDate` → `metadataModificationDate`,
/// `kMDItemDateAdded` → `addedDate`, `kMDItemDurationSeconds` → `duration`,
/// `kMDItemNumberOfPages` → `pageCount`, `kMDItemWhereFroms` → `contentSources`.
///
/// ## Every attribute
/// `*` and `**` name every text attribute searchable by default. They take
/// text only: an unquoted number or date is then read as its text
/// (`** == 2026` finds "2026" in any text attribute), and an ordering,
/// `InRange` or `$time` value with them is an error.
///
/// ## Special values
/// `attr == "*"` means the attribute exists; `attr != "*"` that it does not.
package struct SpotlightQueryParser: Sendable {
    /// The moment `$time` expressions are resolved against.
    package let now: Date
    /// The time zone in which days, weeks, months and years begin.
    package let timeZone: TimeZone
    /// The first day of the week, 1 = Sunday … 7 = Saturday (`Calendar`'s numbering).
    package let firstWeekday: Int

    /// - Parameters:
    ///   - now: fixed in tests so that `$time` periods are predictable.
    ///   - timeZone: where "today" begins and ends; UTC unless the caller knows the user's zone.
    ///   - firstWeekday: 1 = Sunday (the default, as in the US), 2 = Monday, …;
    ///     values outside 1…7 wrap around.
    package init(now: Date = Date(), timeZone: TimeZone = .gmt, firstWeekday: Int = 1) {
        self.now = now
        self.timeZone = timeZone
        self.firstWeekday = ((firstWeekday - 1) % 7 + 7) % 7 + 1
    }

    /// The same, with the first weekday labelled `calendar:` as in the
    /// original design sketch.
    package init(now: Date = Date(), timeZone: TimeZone = .gmt, calendar firstWeekday: Int) {
        self.init(now: now, timeZone: timeZone, firstWeekday: firstWeekday)
    }

    /// Parses one query string into a simplified predicate.
    ///
    /// Never traps: any input either parses or throws an error whose
    /// `offset` lies within `0...text.count`.
    package func parse(_ text: String) throws(SpotlightQueryError) -> QueryPlan.Predicate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        calendar.firstWeekday = firstWeekday
        var parser = QueryStringParser(text: text, time: TimeResolver(now: now, calendar: calendar))
        return try parser.parseQuery().simplified()
    }
}

/// Foundation has a `Predicate` of its own; inside this module the name means the plan's.
typealias Predicate = QueryPlan.Predicate
