import Foundation

/// A plain TCP connection to 127.0.0.1, for peers that misbehave on purpose: send a request and then read
/// nothing, or read slowly.
public final class RawConnection: @unchecked Sendable {
    private var fd: Int32

    /// Connects to 127.0.0.1:`port`, with a receive buffer of `receiveBuffer` bytes (small, so that a peer
    /// that does not read is felt at once) and, when given, segments of at most `maximumSegment` bytes.
    ///
    /// Loopback's segments are 64 KiB, and the server's kernel sizes its send buffer from them (megabytes);
    /// an Ethernet-sized segment (1400) keeps that buffer to what a real network gives, for tests of how much
    /// of a response the server's socket took.
    public init(port: Int, receiveBuffer: Int32 = 4096, maximumSegment: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        if var segment = maximumSegment {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_MAXSEG, &segment, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Closes the connection with a reset (RST), as a client that gives up does: `SO_LINGER` 0, then close.
    public func reset() {
        guard fd >= 0 else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
        fd = -1
    }

    /// Reads until at least `count` bytes arrived, the peer closed, or `timeout` passed; returns what arrived.
    public func read(atLeast count: Int, timeout: Double) -> Data {
        var data = Data()
        _ = read(timeout: timeout) { bytes in
            data.append(contentsOf: bytes)
            return data.count < count
        }
        return data
    }

    /// Sends `text` whole.
    public func send(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Sends `head` whole, then `text` one byte every 200 ms (a peer that drips its request), reading what
    /// comes back meanwhile, for up to `seconds`.
    /// - Returns: What the server answered, and the seconds after which it closed the connection (`nil` if it
    ///   did not within `seconds`).
    public func drip(_ text: String, after head: String = "", seconds: Double) -> (answer: Data, closedAfter: Double?) {
        send(head)
        var answer = Data()
        var pending = Array(text.utf8)[...]
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            if var byte = pending.popFirst(), Foundation.send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) < 0 {
                return (answer, Date().timeIntervalSince(start))
            }
            var probe = pollfd(fd: fd, events: Int16(POLLIN | POLLHUP), revents: 0)
            if poll(&probe, 1, 200) > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return (answer, Date().timeIntervalSince(start)) }
                answer += buffer[0..<count]
            }
        }
        return (answer, nil)
    }

    /// Reads until the peer closes or `timeout` passes; returns what arrived.
    public func readAll(timeout: Double) -> Data {
        var data = Data()
        _ = read(timeout: timeout) { bytes in
            data.append(contentsOf: bytes)
            return true
        }
        return data
    }

    /// Reads until `count` whole responses arrived (each with a `Content-Length`), the peer closed, or
    /// `timeout` passed; returns the whole ones, in the order they came.
    public func readResponses(_ count: Int, timeout: Double) -> [RawResponse] {
        var data = Data()
        var responses: [RawResponse] = []
        _ = read(timeout: timeout) { bytes in
            data.append(contentsOf: bytes)
            while let (response, length) = RawResponse.first(in: data) {
                responses.append(response)
                data = data.subdata(in: (data.startIndex + length)..<data.endIndex)
            }
            return responses.count < count
        }
        return responses
    }

    /// Reads until the peer closes or `timeout` passes; returns the bytes and whether the peer closed.
    public func readToEnd(timeout: Double) -> (bytes: Int, closed: Bool) {
        read(timeout: timeout) { _ in true }
    }

    /// Reads until the peer closes, `timeout` passes or `take` returns false (it wants no more).
    private func read(timeout: Double, _ take: (UnsafeRawBufferPointer) -> Bool) -> (bytes: Int, closed: Bool) {
        var timeval = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeval, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var total = 0
        while Date() < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return (total, true) }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return (total, true)  // reset by the peer
            }
            total += count
            guard buffer.withUnsafeBytes({ take(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) else {
                return (total, false)
            }
        }
        return (total, false)
    }
}

/// Runs `body` on a thread of its own and waits for it: a blocking socket call must not hold one of the few
/// threads of Swift's cooperative pool, which the server under test needs to answer it (two tests blocked at
/// once on a two-core machine each waited out their timeout for an answer that could not be made).
public func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// One HTTP/1.1 response as it came over the wire.
public struct RawResponse: Sendable {
    /// The status line and header lines, without the blank line that ends them.
    public var head: [String]
    public var body: Data

    /// The value of the first header named `name` (any case).
    public func header(_ name: String) -> String? {
        head.dropFirst().lazy.compactMap { line -> String? in
            guard let colon = line.firstIndex(of: ":"),
                line[..<colon].caseInsensitiveCompare(name) == .orderedSame
            else { return nil }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }.first
    }

    /// The first whole response of `data` (head and `Content-Length` bytes), and its length in `data`.
    static func first(in data: Data) -> (RawResponse, Int)? {
        guard let end = data.firstRange(of: Data("\r\n\r\n".utf8)) else { return nil }
        let lines = String(decoding: data[data.startIndex..<end.lowerBound], as: UTF8.self)
            .components(separatedBy: "\r\n")
        var response = RawResponse(head: lines, body: Data())
        let length = Int(response.header("Content-Length") ?? "0") ?? 0
        let bodyStart = end.upperBound
        guard data.endIndex - bodyStart >= length else { return nil }
        response.body = Data(data[bodyStart..<(bodyStart + length)])
        return (response, bodyStart + length - data.startIndex)
    }
}
