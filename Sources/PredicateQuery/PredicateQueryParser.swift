import Foundation
import Items
import QueryPlan

/// Parses Apple predicate format strings — CloudKit's `CKQuery` subset, or
/// the wider `NSPredicate` language — into the shared query plan, so the
/// store and the coordinator's merge need no second path. Foundation on Linux
/// has no `NSPredicate(format:)`; this is the parser.
///
/// ```
/// predicate  := or
/// or         := and (('OR' | '||') and)*         // nspredicate only
/// and        := unary (('AND' | '&&') unary)*
/// unary      := ('NOT' | '!') unary | primary    // '!' nspredicate only
/// primary    := '(' or ')' | TRUEPREDICATE | FALSEPREDICATE | comparison
/// comparison := [ANY | SOME | ALL | NONE] operand operator ['[' options ']'] operand
/// operator   := = == != <> < <= =< > >= => BETWEEN BEGINSWITH CONTAINS IN
///               ENDSWITH LIKE MATCHES TOKENMATCHES
/// operand    := key | #key | SELF | 'text' | "text" | number | {operand, …}
///             | nil | NULL | YES | NO | TRUE | FALSE | now | now()
///             | %@ | %K | distanceToLocation:fromLocation:(key, %@)
///             | tokenize(%@, 'cdl') | tokenize:using:(%@, 'cdl')
/// ```
/// Keywords are recognised in any case; `#name` uses a keyword as a key.
/// Strings take `\"`, `\'`, `\\`, `\n`, `\t`, `\r`, `\uXXXX` escapes.
///
/// ## Arguments
/// `%@` (and `%d`, `%f`, `%s`…) takes the next argument as a value; `%K` takes
/// it as a key name. Arguments are JSON: text, numbers, booleans, `null`
/// (nil), lists, `{"latitude", "longitude"}` (a `CLLocation`),
/// `{"recordName"}` (a `CKReference` or `CKRecord.ID`) and `{"date": ISO-8601}`.
/// Every argument must be used.
///
/// ## Semantics (both dialects unless said)
/// | predicate | matches |
/// | --- | --- |
/// | `k == 'text'` | a value of `k` equals the text: CloudKit ignores case; nspredicate as `[c]`/`[d]` say |
/// | `k == 5`, `k == YES`, `k == %@` (date) | a value of `k` is exactly that number (booleans 1/0, dates in seconds since 2001) |
/// | `k == %@` (reference) | a value of `k` is the record name, exactly |
/// | `k == nil` / `k != nil` | `k` is absent / present |
/// | `k != v` | not `k == v`: items without `k` match (as NSPredicate's `nil != v`) |
/// | `k < 5` … `k BETWEEN {lo, hi}` | numbers and dates, each with its own kind; `BETWEEN` is one inclusive comparison, under a quantifier too, with its bounds in either order |
/// | `k < 'm'`, `k <=[cd] 'm'`, `k BETWEEN {'a', 'm'}` | text values only, in `compare:` order (see below); nspredicate: `[c]`, `[d]` apply to `<`, `<=`, `>`, `>=`; CloudKit ignores case, as its `==` does; `BETWEEN {'a', 'm'}` is `>= 'a' AND <= 'm'` on each value, bounds in either order; an ISO-8601 text also orders dates as dates |
/// | `k BETWEEN {1, 'm'}` | refused: a value orders against bounds of its own kind, so none lies between a number and a text |
/// | `k BEGINSWITH 'Jo'` | case-sensitive prefix (nspredicate: `[c]`, `[d]` apply) |
/// | `k CONTAINS v` | CloudKit: `k`'s list holds `v`; nspredicate: for a text `v`, a substring of a value, else membership |
/// | `k IN {a, b}`, `ANY {a, b} = k` | a value of `k` equals one of them |
/// | `'a' IN k`, `ANY k = 'a'`, `SOME k = 'a'` | a value of `k` equals `'a'` (lists match when any element does) |
/// | `ANY k op v`, `SOME k op v` | some value of `k` satisfies `op v`, for every operator: `ANY k != 'red'` is "some value is not red" |
/// | `ALL k op v` (nspredicate) | every value of `k` satisfies `op v`, every operator; true when `k` is absent or empty |
/// | `NONE k op v` (nspredicate) | no value of `k` satisfies `op v`, every operator (`NONE k != 'red'`: every value is red) |
/// | `ANY k == nil`, `ALL k != nil` | a value is never nil: false, and true |
/// | `k == '42'` (nspredicate) | never a number: Foundation's `-isEqual:` tells text from numbers (`k == 42` finds it) |
/// | `self CONTAINS 'bob smith'`, `ANY tokenize(%@, 'cdl') IN allTokens` | any of the words, in any searchable text attribute |
/// | `allTokens TOKENMATCHES[cdl] 'bob smith'`, `ALL tokenize(%@, 'cdl') IN allTokens` | all of the words |
/// | `distanceToLocation:fromLocation:(k, %@) < 100` | a location of `k` within 100 km, great-circle (haversine, 6,371,008.8 m sphere), boundary included |
/// | `recordID == %@`, `recordID IN {…}` | the item's unique identifier |
/// | `k ENDSWITH`, `k LIKE 'a?c*'`, `k MATCHES 're'` (nspredicate) | suffix; `*` any run and `?` one character, whole value; an ICU regular expression, whole value |
///
/// Text orders as Foundation's `compare:` orders it (`TextRangeTest`):
/// canonically equivalent texts are equal, the rest by the code points of
/// their canonical decompositions, so every capital sorts before every small
/// letter ("Zoe" < "apple") and "Café" sorts before "Cafz". `[c]` ignores
/// case and `[d]` diacritics, and either one also character width, as
/// Apple's comparison predicate operators do (without a locale). Numbers stored as
/// text are text (`'12' < '5'`); a number is never ordered against a text,
/// nor a text against a number. Apple's `BETWEEN` ignores options (its
/// documentation: "comparison is performed using `compare(_:)`"), and the
/// parser, as GNUstep's, takes none after it.
///
/// A comparison without a quantifier reads a list element by element, as
/// `ANY` does: an item stores a one-element list as its one value, so it
/// cannot compare the list itself as Foundation does (`colors == 'red'` is
/// false there for `["red", "blue"]`). Where Foundation raises (an aggregate
/// over a value that is no list, `<` between a text and a number,
/// `BEGINSWITH` on a number) the plan answers as the table says.
///
/// ## Checked against Foundation
/// `OracleDifferentialTests` runs over 10,000 random predicates through the store
/// and through GNUstep Base's `NSPredicate` (`GNUstepOracle/oracle.m`). Where
/// GNUstep 1.28 departs from Apple's documentation, Apple's reading is the one
/// here, the oracle corrects GNUstep the same way, and `AppleReadingTests`
/// pins each:
/// - `==`, `!=` and `IN` take `[c]` and `[d]` (GNUstep compares with
///   `-isEqual:`): `equalityTakesItsOptions`, `inTakesOptionsAndLiteralLists`;
/// - `[d]` ignores diacritics (GNUstep only drops `NSLiteralSearch`):
///   `diacriticOptionFoldsAccents`;
/// - `<`, `<=`, `>`, `>=` and `BETWEEN` compare like with like through
///   `-compare:` (GNUstep compares `-doubleValue`, so the text "5" is 5):
///   `orderingComparesNumbersWithNumbersOnly`;
/// - text orders by `-compare:` under the `[c]` and `[d]` of `<`, `<=`,
///   `>`, `>=` (GNUstep orders every text as 0 and ignores the options):
///   `textOrdersByCompareWithItsOptions`;
/// - `BETWEEN` takes its bounds in either order (GNUstep's `> low AND <
///   high` is empty when they come high first): `betweenTakesItsBoundsInEitherOrder`;
/// - `-compare:` orders canonical decompositions by code point (GNUstep by
///   UTF-16 unit: they differ past U+FFFF, which the oracle's records never
///   hold): `textOrdersByCodePoint`;
/// - `LIKE`'s `?` is exactly one character and other characters are
///   themselves (GNUstep makes `?` "none or one" and leaves regular
///   expression characters live): `likeWildcardsAreApples`;
/// - a `{…}` list holds values (GNUstep keeps expressions, so `IN {…}` and
///   `BETWEEN {…}` match nothing): `inTakesOptionsAndLiteralLists`;
/// - `BETWEEN` is one inclusive comparison, and `NONE`/`SOME` before it keep
///   their meaning (GNUstep parses `> low AND < high`, each bound quantified
///   alone, and drops the quantifier's `NOT`): `betweenIsOneInclusiveComparison`;
/// - `SOME` is `ANY` (GNUstep reads `NOT ALL`): `quantifiersTestEachValue`;
/// - `ANY k CONTAINS v` tests each value (GNUstep swaps the operands first,
///   then raises): `containsUnderAQuantifierTestsEachValue`.
///
/// Tokenized searches are case- and diacritic-insensitive, split words as the
/// word index does, and drop CloudKit's stop words; a search left with no
/// words matches nothing. `now` is the parser's clock.
///
/// ## CloudKit's rules (dialect `cloudkit`)
/// `OR`, `||`, `!`, `ENDSWITH`, `LIKE`, `MATCHES`, `NONE` and options on
/// operators other than `TOKENMATCHES` are errors that name the operator and
/// point to the `nspredicate` dialect; `ALL` is an error except in
/// `ALL tokenize(…) IN allTokens`; `NOT` over `AND`, over a tokenized search,
/// over the distance function and over `BETWEEN` is an error; a key path
/// (`employee.name`) is an error. Every error names its offset.
package struct PredicateQueryParser: Sendable {
    package enum Dialect: String, Sendable, Hashable, CaseIterable {
        /// CloudKit's `CKQuery` rules.
        case cloudkit
        /// The rest of Apple's predicate format too.
        case nspredicate
    }

    package var dialect: Dialect
    package var now: Date

    package init(dialect: Dialect = .cloudkit, now: Date = Date()) {
        self.dialect = dialect
        self.now = now
    }

    /// The plan of a format string with its arguments.
    package func parse(_ format: String, arguments: [JSONValue] = []) throws(PredicateQueryError) -> QueryPlan.Predicate {
        var lexer = Lexer(format)
        let tokens = try lexer.tokens()
        var parser = Parser(tokens: tokens, dialect: dialect, arguments: arguments)
        let syntax = try parser.parse()
        return try Lowering(dialect: dialect, now: now).lower(syntax)
    }

    /// The plan of `CKQuery(recordType:predicate:)`: the predicate, over items
    /// whose `contentType` is the record type (exactly, case included).
    package func parse(recordType: String, _ format: String, arguments: [JSONValue] = []) throws(PredicateQueryError) -> QueryPlan.Predicate {
        let p = try parse(format, arguments: arguments)
        return .and([Self.recordType(recordType), p]).simplified()
    }

    package static func recordType(_ type: String) -> QueryPlan.Predicate {
        .text(TextTest(attribute: .named("contentType"), pattern: TextPattern(literal: type), options: []))
    }
}
