/// What ``DirectPackResponder`` makes of the bytes a connection sent and nothing read yet: the request head they
/// start with, read just far enough to know whether the server can answer it from memory without HTTP/1's
/// decoder, or where it ends so the decoder can be given exactly that request.
///
/// Strict on purpose: anything this does not recognise (a body, a folded line, a bare LF, a character HTTP
/// does not allow, a head of over 16 KiB) is `.undelimited`, and from there on the connection's bytes all go to
/// NIO's decoder, which accepts or refuses them as it always did.
enum DirectRequest: Equatable {
    /// The head has not ended yet.
    case incomplete
    /// `GET /assets/<id> HTTP/1.1` with no header beyond `Host`, `User-Agent`, `Accept`, `Accept-Encoding`,
    /// `Accept-Language` and `Connection: keep-alive`, in the first `length` bytes; `id` as the target spells it.
    case pack(id: String, length: Int)
    /// Another request without a body, in the first `length` bytes: the router answers it.
    case routed(length: Int)
    /// A request this does not delimit (it has a body, or is not plain HTTP/1.1 text).
    case undelimited

    /// The most bytes a head read here may have.
    static let maxHead = 16 << 10

    private static let prefix = Array("GET /assets/".utf8)
    private static let version = Array(" HTTP/1.1".utf8)
    /// Headers that do not change the router's answer for a pack (`Host` is checked apart: once at most).
    private static let ignored = ["user-agent", "accept", "accept-encoding", "accept-language"].map { Array($0.utf8) }
    private static let (host, connection, keepAlive, connect) = (
        Array("host".utf8), Array("connection".utf8), Array("keep-alive".utf8), Array("connect".utf8)
    )
    /// Headers that give a request a body, or a meaning the decoder has to handle itself.
    private static let undelimiting = ["content-length", "transfer-encoding", "expect", "upgrade"].map {
        Array($0.utf8)
    }

    /// Reads the head at the start of `bytes`.
    static func read(_ bytes: UnsafeRawBufferPointer) -> DirectRequest {
        var start = 0
        var requestLine: Range<Int>?
        var plain = true  // a pack request so far
        var hosts = 0
        while true {
            guard let end = lineEnd(in: bytes, from: start) else {
                return bytes.count >= maxHead ? .undelimited : .incomplete
            }
            guard end >= start + 1, bytes[end - 1] == UInt8(ascii: "\r") else { return .undelimited }  // a bare LF
            let line = start..<(end - 1)
            start = end + 1
            guard start <= maxHead else { return .undelimited }
            if requestLine == nil {
                guard isRequestLine(bytes, line) else { return .undelimited }
                requestLine = line
                plain = packID(bytes, line) != nil
                continue
            }
            if line.isEmpty { break }
            guard let colon = field(bytes, line) else { return .undelimited }
            let name = line.lowerBound..<colon
            if undelimiting.contains(where: { equalsLowercased(bytes, name, $0) }) { return .undelimited }
            guard plain else { continue }
            if equalsLowercased(bytes, name, host) {
                hosts += 1
                plain = hosts == 1
            } else if equalsLowercased(bytes, name, connection) {
                plain = equalsLowercased(bytes, trimmed(bytes, (colon + 1)..<line.upperBound), keepAlive)
            } else {
                plain = ignored.contains { equalsLowercased(bytes, name, $0) }
            }
        }
        guard plain, let request = requestLine, let id = packID(bytes, request) else { return .routed(length: start) }
        return .pack(id: id, length: start)
    }

    /// The index of the next LF at or after `start`, within the first ``maxHead`` bytes.
    private static func lineEnd(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        let limit = min(bytes.count, maxHead)
        guard start < limit else { return nil }
        return bytes[start..<limit].firstIndex(of: UInt8(ascii: "\n"))
    }

    /// `METHOD SP TARGET SP HTTP/1.x`, in visible ASCII: a method of letters (not `CONNECT`, whose target is
    /// not a path), one space each side of the target.
    private static func isRequestLine(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> Bool {
        let text = bytes[line]
        guard let firstSpace = text.firstIndex(of: UInt8(ascii: " ")),
            let lastSpace = text.lastIndex(of: UInt8(ascii: " ")), firstSpace < lastSpace,
            firstSpace > line.lowerBound
        else { return false }
        let method = line.lowerBound..<firstSpace
        guard bytes[method].allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }),
            !equalsLowercased(bytes, method, connect),
            bytes[(firstSpace + 1)..<lastSpace].allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            bytes[(lastSpace + 1)..<line.upperBound].elementsEqual("HTTP/1.1".utf8)
                || bytes[(lastSpace + 1)..<line.upperBound].elementsEqual("HTTP/1.0".utf8)
        else { return false }
        return true
    }

    /// The pack ID of a request line `GET /assets/<id> HTTP/1.1`, or `nil` for any other.
    private static func packID(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> String? {
        guard line.count > prefix.count + version.count,
            bytes[line.lowerBound..<(line.lowerBound + prefix.count)].elementsEqual(prefix),
            bytes[(line.upperBound - version.count)..<line.upperBound].elementsEqual(version)
        else { return nil }
        let id = (line.lowerBound + prefix.count)..<(line.upperBound - version.count)
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[id]), as: UTF8.self)
    }

    /// The colon's index of a header line `name: value`, whose name is an HTTP token and whose value holds no
    /// control character but tab; `nil` otherwise (a folded line starts with a space, and is refused here).
    private static func field(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>) -> Int? {
        guard let colon = bytes[line].firstIndex(of: UInt8(ascii: ":")), colon > line.lowerBound,
            bytes[line.lowerBound..<colon].allSatisfy(isTokenByte),
            bytes[(colon + 1)..<line.upperBound].allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) })
        else { return nil }
        return colon
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Range<Int> {
        var range = range
        while let first = range.first, bytes[first] == 0x20 || bytes[first] == 0x09 { range = range.dropFirst() }
        while let last = range.last, bytes[last] == 0x20 || bytes[last] == 0x09 { range = range.dropLast() }
        return range
    }

    /// Whether the bytes in `range`, lowercased (ASCII), are `lowercase`.
    private static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: [UInt8])
        -> Bool
    {
        guard range.count == lowercase.count else { return false }
        var index = range.lowerBound
        for expected in lowercase {
            let byte = bytes[index]
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            guard lower == expected else { return false }
            index += 1
        }
        return true
    }
}
