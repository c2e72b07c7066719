import Foundation

/// The waits between retries of one request, shared by the client's downloads and `publish`'s uploads: an
/// exponential backoff with jitter, capped, and a server's `Retry-After` honoured up to the same cap.
public struct Backoff: Sendable, Hashable {
    /// The first wait; each further one doubles, up to ``maximum``.
    public var base: Duration
    /// The longest wait, and the longest `Retry-After` honoured.
    public var maximum: Duration

    /// Creates a backoff.
    public init(base: Duration, maximum: Duration) {
        self.base = base
        self.maximum = maximum
    }

    /// The wait after the `failures`-th failure (1 for the first): `Retry-After` when the server sent one,
    /// else `base` × 2^(failures − 1), capped at ``maximum``, times a random 0.5 to 1 so that clients that
    /// failed together do not retry in step.
    public func delay(afterFailure failures: Int, retryAfter: Duration? = nil) -> Duration {
        if let retryAfter { return min(retryAfter, maximum) }
        let exponent = min(max(failures, 1) - 1, 30)
        return min(base * (1 << exponent), maximum) * Double.random(in: 0.5...1.0)
    }

    /// Reads a `Retry-After` value: seconds, or an HTTP date in any of its three forms.
    /// - Returns: The wait, or `nil` for an empty or unreadable value.
    public static func retryAfter(_ header: String?, now: Date = Date()) -> Duration? {
        guard let header = header?.trimmingCharacters(in: .whitespaces), !header.isEmpty else { return nil }
        if let seconds = Int(header), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(header, now: now) else { return nil }
        return .seconds(max(0, Int(date.timeIntervalSince(now).rounded(.up))))
    }
}
