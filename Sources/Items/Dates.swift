import Foundation

/// ISO-8601 dates, parsed by hand.
///
/// `ISO8601DateFormatter` is neither `Sendable` nor fast, and indexing parses
/// a date for every dated attribute of every item. This accepts what producers
/// actually send: `YYYY-MM-DD`, `YYYY-MM-DDThh:mm:ssZ`, fractional seconds, and
/// `+02:00` / `+0200` / `-05` offsets. A date-time without a zone is UTC.
public enum ISODate {
    public static func parse(_ s: String) -> Date? {
        var u = Array(s.utf8)
        guard u.count >= 10 else { return nil }
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= u.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = u[i + k]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < u.count, u[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(45), let month = digits(2), expect(45), let day = digits(2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        var hour = 0, minute = 0, second = 0.0, offset = 0
        if i < u.count {
            guard u[i] == 84 || u[i] == 116 || u[i] == 32 else { return nil }  // T, t or space
            i += 1
            guard let h = digits(2), expect(58), let m = digits(2), h < 24, m < 60 else { return nil }
            hour = h; minute = m
            if i < u.count, u[i] == 58 {
                i += 1
                guard let sec = digits(2), sec < 61 else { return nil }
                second = Double(sec)
                if i < u.count, u[i] == 46 || u[i] == 44 {
                    i += 1
                    var scale = 0.1
                    let start = i
                    while i < u.count, u[i] >= 48, u[i] <= 57 {
                        second += Double(u[i] - 48) * scale
                        scale /= 10
                        i += 1
                    }
                    guard i > start else { return nil }
                }
            }
            if i < u.count {
                if u[i] == 90 || u[i] == 122 {
                    i += 1
                }  // Z
                else if u[i] == 43 || u[i] == 45 {
                    let sign = u[i] == 45 ? -1 : 1
                    i += 1
                    guard let oh = digits(2), oh <= 18 else { return nil }
                    var om = 0
                    if i < u.count {
                        _ = expect(58)
                        guard let m = digits(2), m < 60 else { return nil }
                        om = m
                    }
                    offset = sign * (oh * 3600 + om * 60)
                } else {
                    return nil
                }
            }
        }
        guard i == u.count else { return nil }
        u.removeAll()
        let days = daysFromCivil(year: year, month: month, day: day)
        let unix = Double(days * 86400 + hour * 3600 + minute * 60 - offset) + second
        return Date(timeIntervalSince1970: unix)
    }

    /// Formats as `YYYY-MM-DDThh:mm:ssZ`, with milliseconds only when present.
    public static func format(_ date: Date) -> String {
        let t = date.timeIntervalSince1970
        let whole = t.rounded(.down)
        let millis = Int(((t - whole) * 1000).rounded())
        var secs = Int(whole)
        var extraMillis = millis
        if extraMillis >= 1000 { secs += 1; extraMillis -= 1000 }
        let days = Int((Double(secs) / 86400).rounded(.down))
        let rem = secs - days * 86400
        let (y, m, d) = civilFromDays(days)
        func pad(_ v: Int, _ n: Int) -> String {
            let s = String(v)
            return s.count >= n ? s : String(repeating: "0", count: n - s.count) + s
        }
        var out = "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rem / 3600, 2)):\(pad(rem % 3600 / 60, 2)):\(pad(rem % 60, 2))"
        if extraMillis != 0 { out += "." + pad(extraMillis, 3) }
        return out + "Z"
    }

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    public static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
