import AssetPackFormat
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The one HTTP date reader and writer, which the server's `Last-Modified`, `If-Modified-Since` and `If-Range`
/// and the client's `Retry-After` use.
@Suite("HTTP dates")
struct HTTPDateTests {
    static let date = Date(timeIntervalSince1970: 784_111_777)

    /// RFC 9110's own examples: a recipient reads all three forms as the same instant.
    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func theThreeFormsOfRFC9110(_ text: String) {
        #expect(HTTPDate.parse(text) == Self.date)
    }

    @Test func writesIMFFixdate() {
        #expect(HTTPDate.string(Self.date) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.string(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.string(Date(timeIntervalSince1970: 951_782_400.9)) == "Tue, 29 Feb 2000 00:00:00 GMT")
    }

    /// Written and read back, and written as the C library's `gmtime_r` has it, over dates from 1970 to 2106.
    @Test func agreesWithTheCLibrary() {
        var random = SystemRandomNumberGenerator()
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        for _ in 0..<2000 {
            var seconds = time_t(Int64.random(in: 0...(1 << 32), using: &random))
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let expected = String(
                format: "%@, %02d %@ %04d %02d:%02d:%02d GMT",
                days[Int(parts.tm_wday)],
                parts.tm_mday,
                months[Int(parts.tm_mon)],
                parts.tm_year + 1900,
                parts.tm_hour,
                parts.tm_min,
                parts.tm_sec
            )
            #expect(HTTPDate.string(date) == expected)
            #expect(HTTPDate.parse(expected) == date, "\(expected)")
        }
    }

    /// RFC 850's two-digit year is read in the century that puts it at most 50 years ahead of now.
    @Test func twoDigitYearsAreAtMostFiftyYearsAhead() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026
        #expect(
            HTTPDate.parse("Wednesday, 01-Jan-76 00:00:00 GMT", now: now).map(HTTPDate.string)
                == "Wed, 01 Jan 2076 00:00:00 GMT"
        )
        #expect(
            HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT", now: now).map(HTTPDate.string)
                == "Sat, 01 Jan 1977 00:00:00 GMT"
        )
    }

    @Test(arguments: [
        "", "soon", "Sun, 06 Nov 1994 08:49:37 +0000", "Sun, 06 Nov 1994 08:49:37", "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov +994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 6 08:49:37 94",
        "Sun Nov 123 08:49:37 1994", "Xyz, 06 Nov 1994 08:49:37 GMT",
    ])
    func anythingElseIsNotADate(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
