// The reference the nspredicate dialect is checked against: GNUstep Base's
// NSPredicate, an implementation of Apple's predicate format written apart
// from Limelight's.
//
// Reads JSON lines on standard input. The first is the records,
// [{"id": "r1", "attributes": {...}}, ...]; every line after it is one
// predicate, {"format": "...", "arguments": [...]}, answered by one line on
// standard output:
//   {"ids": ["r1", ...]}                            the records it matches, in input order
//   {"ids": [...], "raised": {"r7": "reason", ...}} some records raised an exception
//   {"error": "reason"}                             the format string is refused
// In records and arguments, {"$date": seconds} is an NSDate (seconds since
// 2001-01-01 UTC), JSON null is NSNull in a record and nil as an argument.
//
// Built by GNUstepOracle.swift (the tests) with gcc and gnustep-config.
#import <Foundation/Foundation.h>
#include <objc/runtime.h>

// MARK: Where GNUstep Base 1.28 differs from Apple's documented behaviour
//
// Each correction below is listed, with the test that pins Apple's reading
// in Limelight, in the doc comment of PredicateQueryParser's semantics table.
// Everything else (parsing, argument substitution, key-value lookup, nil and
// NSNull, ANY/ALL iteration, IN and CONTAINS over collections, MATCHES with
// ICU) is GNUstep's own.

// [d] ignores diacritics (GNUstep has no NSDiacriticInsensitiveSearch: it
// only drops NSLiteralSearch) and [c] ignores case; compared after folding.
static NSString *folded(NSString *s, NSUInteger options) {
    if (options & NSDiacriticInsensitivePredicateOption) {
        NSString *d = [s decomposedStringWithCanonicalMapping];
        NSMutableString *out = [NSMutableString string];
        for (NSUInteger i = 0; i < [d length]; i++) {
            unichar c = [d characterAtIndex:i];
            if (c >= 0x0300 && c <= 0x036F) continue;
            [out appendString:[NSString stringWithCharacters:&c length:1]];
        }
        s = [out precomposedStringWithCanonicalMapping];
    }
    if (options & NSCaseInsensitivePredicateOption) s = [s lowercaseString];
    return s;
}

static void raiseNotString(id value, NSString *operator) {
    [NSException raise:NSInvalidArgumentException format:@"%@ needs text, found %@", operator, [value class]];
}

// Apple's ordering operators and BETWEEN call -compare:, which takes an
// object of the receiver's kind (text with text, number with number, date
// with date) and raises otherwise; GNUstep compares -doubleValue, so text
// orders as 0 and a date against a number compares. Apple's <, <=, > and >=
// compare text under their [c] and [d] options (folded here as for the
// other operators); its BETWEEN uses plain -compare: whatever the options.
// GNUstep's -compare: on text orders canonical decompositions by UTF-16
// unit where Apple's orders them by code point: the two differ only past
// U+FFFF, which no record or predicate of the test holds.
static NSComparisonResult ordered(id a, id b, NSUInteger options) {
    BOOL texts = [a isKindOfClass:[NSString class]] && [b isKindOfClass:[NSString class]];
    BOOL sameKind = texts
        || ([a isKindOfClass:[NSNumber class]] && [b isKindOfClass:[NSNumber class]])
        || ([a isKindOfClass:[NSDate class]] && [b isKindOfClass:[NSDate class]]);
    if (!sameKind) [NSException raise:NSInvalidArgumentException format:@"compare: of %@ with %@", [a class], [b class]];
    if (texts) return [folded(a, options) compare:folded(b, options)];
    return [a compare:b];
}

// Apple's LIKE: `*` any run, `?` exactly one character, `\` escapes, every
// other character itself. GNUstep turns `?` into `.?` (none or one) and
// leaves regular-expression characters unescaped.
static BOOL like(NSString *value, NSString *pattern) {
    NSMutableString *regex = [NSMutableString stringWithString:@"^"];
    for (NSUInteger i = 0; i < [pattern length]; i++) {
        unichar c = [pattern characterAtIndex:i];
        if (c == '*') { [regex appendString:@".*"]; continue; }
        if (c == '?') { [regex appendString:@"."]; continue; }
        if (c == '\\' && i + 1 < [pattern length]) c = [pattern characterAtIndex:++i];
        // ICU reads a backslash before any ASCII character that is not a
        // letter or digit as that character itself.
        BOOL plain = c > 127 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!plain) [regex appendString:@"\\"];
        [regex appendString:[NSString stringWithCharacters:&c length:1]];
    }
    [regex appendString:@"$"];
    NSRegularExpression *re = [NSRegularExpression regularExpressionWithPattern:regex
                                                                        options:NSRegularExpressionDotMatchesLineSeparators error:NULL];
    return [re numberOfMatchesInString:value options:0 range:NSMakeRange(0, [value length])] > 0;
}

static BOOL (*gnustepEvaluate)(id, SEL, id, id, id);

static BOOL appleEvaluate(NSComparisonPredicate *self, SEL _cmd, id left, id right, id object) {
    BOOL leftIsNil = left == nil || left == [NSNull null], rightIsNil = right == nil || right == [NSNull null];
    NSPredicateOperatorType type = [self predicateOperatorType];
    NSUInteger options = [self options];
    if (leftIsNil || rightIsNil) return gnustepEvaluate(self, _cmd, left, right, object);
    switch (type) {
    case NSEqualToPredicateOperatorType:
    case NSNotEqualToPredicateOperatorType: {
        // GNUstep's == and != ignore [c] and [d] (-isEqual:).
        BOOL same = [left isKindOfClass:[NSString class]] && [right isKindOfClass:[NSString class]]
            ? [folded(left, options) isEqualToString:folded(right, options)] : [left isEqual:right];
        return type == NSEqualToPredicateOperatorType ? same : !same;
    }
    case NSLessThanPredicateOperatorType: return ordered(left, right, options) == NSOrderedAscending;
    case NSLessThanOrEqualToPredicateOperatorType: return ordered(left, right, options) != NSOrderedDescending;
    case NSGreaterThanPredicateOperatorType: return ordered(left, right, options) == NSOrderedDescending;
    case NSGreaterThanOrEqualToPredicateOperatorType: return ordered(left, right, options) != NSOrderedAscending;
    case NSBetweenPredicateOperatorType: {
        // GNUstep never evaluates BETWEEN (see `corrected` below). Apple's
        // takes its bounds in either order and includes them.
        id low = [right objectAtIndex:0], high = [right objectAtIndex:1];
        if (ordered(low, high, 0) == NSOrderedDescending) { id t = low; low = high; high = t; }
        return ordered(left, low, 0) != NSOrderedAscending && ordered(left, high, 0) != NSOrderedDescending;
    }
    case NSBeginsWithPredicateOperatorType:
    case NSEndsWithPredicateOperatorType:
    case NSLikePredicateOperatorType: {
        if (![left isKindOfClass:[NSString class]]) raiseNotString(left, @"BEGINSWITH, ENDSWITH and LIKE");
        if (![right isKindOfClass:[NSString class]]) raiseNotString(right, @"BEGINSWITH, ENDSWITH and LIKE");
        NSString *l = folded(left, options), *r = folded(right, options);
        if (type == NSBeginsWithPredicateOperatorType) return [l hasPrefix:r];
        if (type == NSEndsWithPredicateOperatorType) return [l hasSuffix:r];
        return like(l, r);
    }
    case NSInPredicateOperatorType:
        if ([right isKindOfClass:[NSString class]]) {
            // `x CONTAINS 'text'` (parsed as 'text' IN x) on text: a substring.
            if (![left isKindOfClass:[NSString class]]) raiseNotString(left, @"CONTAINS");
            NSString *r = folded(right, options), *l = folded(left, options);
            return [l length] == 0 || [r rangeOfString:l options:NSLiteralSearch].location != NSNotFound;
        }
        if ([right respondsToSelector:@selector(objectEnumerator)]) {
            // GNUstep's IN ignores [c] and [d].
            for (id element in right) {
                if ([element isKindOfClass:[NSString class]] && [left isKindOfClass:[NSString class]]
                    ? [folded(element, options) isEqualToString:folded(left, options)] : [element isEqual:left]) return YES;
            }
            return NO;
        }
        return gnustepEvaluate(self, _cmd, left, right, object);
    case NSContainsPredicateOperatorType:
        // Only from `ANY k CONTAINS v` (see `corrected`): one value of k.
        if (![left isKindOfClass:[NSString class]] || ![right isKindOfClass:[NSString class]]) raiseNotString(left, @"CONTAINS");
        return [folded(right, options) length] == 0
            || [folded(left, options) rangeOfString:folded(right, options) options:NSLiteralSearch].location != NSNotFound;
    case NSMatchesPredicateOperatorType:
        if (![left isKindOfClass:[NSString class]]) raiseNotString(left, @"MATCHES");
        return gnustepEvaluate(self, _cmd, left, right, object);
    default:
        return gnustepEvaluate(self, _cmd, left, right, object);
    }
}

// A constant aggregate `{a, b}`: GNUstep keeps the elements as expressions
// (so IN and BETWEEN compare against NSExpression objects); Apple evaluates
// them to their values.
static id constantValues(id value) {
    if (![value isKindOfClass:[NSArray class]]) return value;
    NSMutableArray *out = [NSMutableArray array];
    for (id e in value) [out addObject:[e isKindOfClass:[NSExpression class]] ? [e expressionValueWithObject:nil context:nil] : e];
    return out;
}

static NSExpression *unwrapped(NSExpression *e) {
    if ([e expressionType] != NSConstantValueExpressionType) return e;
    return [NSExpression expressionForConstantValue:constantValues([e constantValue])];
}

// GNUstep parses `L BETWEEN {lo, hi}` as `L > lo AND L < hi` (exclusive, and
// under ANY or ALL each bound quantified on its own), with one left
// expression object shared by both halves, which no written predicate has;
// Apple keeps one inclusive BETWEEN comparison. Rebuilt here.
static BOOL isBetweenHalf(id p, NSPredicateOperatorType type) {
    return [p isKindOfClass:[NSComparisonPredicate class]] && [p predicateOperatorType] == type;
}

static NSPredicate *corrected(NSPredicate *p) {
    if ([p isKindOfClass:[NSCompoundPredicate class]]) {
        NSCompoundPredicate *c = (NSCompoundPredicate *)p;
        NSArray *subs = [c subpredicates];
        if ([c compoundPredicateType] == NSAndPredicateType) {
            // An AND flattens the halves into its own list: found side by side.
            NSMutableArray *merged = [NSMutableArray array];
            for (NSUInteger i = 0; i < [subs count]; i++) {
                id lo = [subs objectAtIndex:i], hi = i + 1 < [subs count] ? [subs objectAtIndex:i + 1] : nil;
                if (hi != nil && isBetweenHalf(lo, NSGreaterThanPredicateOperatorType) && isBetweenHalf(hi, NSLessThanPredicateOperatorType)
                    && [lo leftExpression] == [hi leftExpression]) {
                    id bounds = [NSArray arrayWithObjects:constantValues([[lo rightExpression] constantValue]) ?: [NSNull null],
                                 constantValues([[hi rightExpression] constantValue]) ?: [NSNull null], nil];
                    [merged addObject:[NSComparisonPredicate predicateWithLeftExpression:[lo leftExpression]
                                                                        rightExpression:[NSExpression expressionForConstantValue:constantValues(bounds)]
                                                                               modifier:[lo comparisonPredicateModifier]
                                                                                   type:NSBetweenPredicateOperatorType options:0]];
                    i++;
                } else {
                    [merged addObject:lo];
                }
            }
            if ([merged count] == 1) return corrected([merged objectAtIndex:0]);
            subs = merged;
        }
        NSMutableArray *out = [NSMutableArray array];
        for (NSPredicate *s in subs) [out addObject:corrected(s)];
        switch ([c compoundPredicateType]) {
        case NSAndPredicateType: return [NSCompoundPredicate andPredicateWithSubpredicates:out];
        case NSOrPredicateType: return [NSCompoundPredicate orPredicateWithSubpredicates:out];
        default: return [NSCompoundPredicate notPredicateWithSubpredicate:[out objectAtIndex:0]];
        }
    }
    if ([p isKindOfClass:[NSComparisonPredicate class]]) {
        NSComparisonPredicate *c = (NSComparisonPredicate *)p;
        // GNUstep parses `ANY k CONTAINS v` as `ANY v IN k`, swapping the
        // operands before the quantifier takes the left one (and raises, as v
        // is no collection); Apple tests each value of k.
        if ([c comparisonPredicateModifier] != NSDirectPredicateModifier && [c predicateOperatorType] == NSInPredicateOperatorType
            && [[c leftExpression] expressionType] == NSConstantValueExpressionType
            && [[c rightExpression] expressionType] == NSKeyPathExpressionType) {
            return [NSComparisonPredicate predicateWithLeftExpression:[c rightExpression]
                                                      rightExpression:unwrapped([c leftExpression])
                                                             modifier:[c comparisonPredicateModifier]
                                                                 type:NSContainsPredicateOperatorType options:[c options]];
        }
        return [NSComparisonPredicate predicateWithLeftExpression:unwrapped([c leftExpression])
                                                  rightExpression:unwrapped([c rightExpression])
                                                         modifier:[c comparisonPredicateModifier]
                                                             type:[c predicateOperatorType] options:[c options]];
    }
    return p;
}

static id convert(id value, BOOL argument) {
    if ([value isKindOfClass:[NSDictionary class]]) {
        NSNumber *seconds = [value objectForKey:@"$date"];
        if (seconds != nil) return [NSDate dateWithTimeIntervalSinceReferenceDate:[seconds doubleValue]];
        NSMutableDictionary *out = [NSMutableDictionary dictionary];
        for (id key in value) [out setObject:convert([value objectForKey:key], NO) forKey:key];
        return out;
    }
    if ([value isKindOfClass:[NSArray class]]) {
        NSMutableArray *out = [NSMutableArray array];
        for (id element in value) [out addObject:convert(element, NO)];
        return out;
    }
    if (argument && value == [NSNull null]) return nil;
    return value;
}

static void answer(id object) {
    NSData *data = [NSJSONSerialization dataWithJSONObject:object options:0 error:NULL];
    fwrite([data bytes], 1, [data length], stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

static NSData *readLine(void) {
    NSMutableData *line = [NSMutableData data];
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
        char ch = (char)c;
        [line appendBytes:&ch length:1];
    }
    if (c == EOF && [line length] == 0) return nil;
    return line;
}

int main(void) {
    NSAutoreleasePool *outer = [NSAutoreleasePool new];
    Method evaluate = class_getInstanceMethod([NSComparisonPredicate class], @selector(_evaluateLeftValue:rightValue:object:));
    if (evaluate == NULL) {
        fprintf(stderr, "oracle: this GNUstep Base has no -[NSComparisonPredicate _evaluateLeftValue:rightValue:object:] to correct\n");
        return 1;
    }
    gnustepEvaluate = (BOOL (*)(id, SEL, id, id, id))method_getImplementation(evaluate);
    method_setImplementation(evaluate, (IMP)appleEvaluate);
    NSData *first = readLine();
    if (first == nil) return 1;
    NSArray *records = convert([NSJSONSerialization JSONObjectWithData:first options:0 error:NULL], NO);
    if (![records isKindOfClass:[NSArray class]]) {
        fprintf(stderr, "oracle: the first line must be a JSON list of records\n");
        return 1;
    }
    NSData *line;
    while ((line = readLine()) != nil) {
        NSAutoreleasePool *pool = [NSAutoreleasePool new];
        NSDictionary *request = [NSJSONSerialization JSONObjectWithData:line options:0 error:NULL];
        NSString *format = [request objectForKey:@"format"];
        NSArray *raw = [request objectForKey:@"arguments"];
        // argumentArray: cannot hold nil, so a nil argument goes through a
        // placeholder array that predicateWithFormat:argumentArray: reads by index.
        NSMutableArray *arguments = [NSMutableArray array];
        for (id a in raw) {
            id converted = convert(a, YES);
            [arguments addObject:converted != nil ? converted : [NSNull null]];
        }
        NSPredicate *predicate = nil;
        @try {
            predicate = corrected([NSPredicate predicateWithFormat:format argumentArray:arguments]);
        } @catch (NSException *e) {
            answer([NSDictionary dictionaryWithObject:[NSString stringWithFormat:@"%@: %@", [e name], [e reason]] forKey:@"error"]);
            [pool release];
            continue;
        }
        NSMutableArray *ids = [NSMutableArray array];
        NSMutableDictionary *raised = [NSMutableDictionary dictionary];
        for (NSDictionary *record in records) {
            @try {
                if ([predicate evaluateWithObject:[record objectForKey:@"attributes"]]) [ids addObject:[record objectForKey:@"id"]];
            } @catch (NSException *e) {
                [raised setObject:[NSString stringWithFormat:@"%@: %@", [e name], [e reason]] forKey:[record objectForKey:@"id"]];
            }
        }
        NSMutableDictionary *result = [NSMutableDictionary dictionaryWithObject:ids forKey:@"ids"];
        if ([raised count] > 0) [result setObject:raised forKey:@"raised"];
        answer(result);
        [pool release];
    }
    [outer release];
    return 0;
}
