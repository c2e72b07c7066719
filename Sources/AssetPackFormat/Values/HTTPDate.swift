import Foundation

/// HTTP dates (RFC 9110, section 5.6.7), for the server's `Last-Modified`, `If-Modified-Since` and `If-Range`
/// and the client's `Retry-After`: one reader and one writer both sides use.
///
/// Written by hand because Foundation's `Date.HTTPFormatStyle` is not in this toolchain's Foundation on
/// Linux, and a `DateFormatter` reads only the one pattern it is given (and depends on the locale data). The
/// calendar arithmetic is the proleptic Gregorian calendar in UTC, with no table or time zone involved.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form a sender may use; a
    /// fraction of a second is dropped.
    public static func string(_ date: Date) -> String {
        let time = fields(date)
        return "\(days[time.weekday]), \(time.day) \(months[time.month - 1]) \(time.year) "
            + "\(time.hour):\(time.minute):\(time.second) GMT"
    }

    /// `date` as ISO 8601's basic form in UTC (`20130524T000000Z`), as AWS Signature Version 4 writes
    /// `x-amz-date`; a fraction of a second is dropped.
    public static func basicISO8601(_ date: Date) -> String {
        let time = fields(date)
        return "\(time.year)\(two(Int64(time.month)))\(time.day)T\(time.hour)\(time.minute)\(time.second)Z"
    }

    /// The fields of `date` in UTC, zero-padded (the year to four digits); `weekday` 0 is Sunday, `month` 1 is
    /// January.
    private static func fields(
        _ date: Date
    ) -> (weekday: Int, year: String, month: Int, day: String, hour: String, minute: String, second: String) {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (dayNumber, secondOfDay) = floorDivision(seconds, 86_400)
        let (year, month, day) = civil(fromDays: dayNumber)
        let weekday = Int((dayNumber % 7 + 11) % 7)  // day 0, 1970-01-01, was a Thursday
        let yearText = String(year)
        let paddedYear = String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText
        return (
            weekday, paddedYear, Int(month), two(day), two(secondOfDay / 3600), two(secondOfDay / 60 % 60),
            two(secondOfDay % 60)
        )
    }

    private static func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// Reads the three forms a recipient must accept: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
    /// obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`, a two-digit year more than 50 years ahead taken as
    /// the century before, as RFC 9110 says) and asctime (`Sun Nov  6 08:49:37 1994`).
    /// - Returns: The date, or `nil` for anything else (the day name is checked for form, not against the
    ///   date, and a field out of range, such as hour 24 or February 30, gives `nil`).
    public static func parse(_ text: String) -> Date? {
        parse(text, now: Date())
    }

    /// Reads an HTTP date as ``parse(_:)`` does, with `now` the time a two-digit year is read against.
    public static func parse(_ text: String, now: Date) -> Date? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        if words.count == 6, words[0].hasSuffix(","), days.contains(String(words[0].dropLast())), words[5] == "GMT",
            words[1].utf8.count == 2, words[3].utf8.count == 4
        {
            return date(year: words[3], month: words[2], day: words[1], clock: words[4])
        }
        if words.count == 4, words[0].hasSuffix(","), longDays.contains(String(words[0].dropLast())),
            words[3] == "GMT"
        {
            let parts = words[1].split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].utf8.count == 2, parts[2].utf8.count == 2,
                let twoDigits = digits(parts[2])
            else { return nil }
            // RFC 9110: a two-digit year that appears to be more than 50 years in the future is in the past.
            let thisYear = civil(fromDays: floorDivision(Int64(now.timeIntervalSince1970), 86_400).0).year
            var year = thisYear - thisYear % 100 + twoDigits
            if year > thisYear + 50 { year -= 100 }
            return date(year: Substring(String(year)), month: parts[1], day: parts[0], clock: words[2])
        }
        if words.count == 5, days.contains(String(words[0])), words[4].utf8.count == 4 {
            // asctime pads a one-digit day with a space, which the split above swallowed.
            let day = words[2]
            guard day.utf8.count == 1 || day.utf8.count == 2 else { return nil }
            return date(year: words[4], month: words[1], day: day, clock: words[3])
        }
        return nil
    }

    private static func date(year: Substring, month: Substring, day: Substring, clock: Substring) -> Date? {
        let time = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard let year = digits(year), let month = months.firstIndex(of: String(month)), let day = digits(day),
            time.count == 3, time.allSatisfy({ $0.utf8.count == 2 }), let hour = digits(time[0]),
            let minute = digits(time[1]), let second = digits(time[2]),
            hour < 24, minute < 60, second <= 60,  // 60: a leap second, read as the next second
            day >= 1, day <= daysIn(month: Int64(month + 1), year: year)
        else { return nil }
        let dayNumber = days(fromCivil: year, Int64(month + 1), day)
        return Date(timeIntervalSince1970: TimeInterval(dayNumber * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// The value of ASCII digits only (no sign, no spaces), at most 4 of them.
    private static func digits(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 4, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return text.utf8.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = (value % divisor + divisor) % divisor
        return ((value - remainder) / divisor, remainder)
    }

    /// Days since 1970-01-01 of a Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The Gregorian date of a day number since 1970-01-01 (Howard Hinnant's `civil_from_days`).
    private static func civil(fromDays dayNumber: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = dayNumber + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
