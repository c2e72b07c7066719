import AssetPackFormat
import Foundation

/// How a download is retried: transient failures (connection errors, stalls past the timeout, 5xx, 429) back
/// off exponentially with jitter and honour `Retry-After`; a size or digest mismatch discards the bytes and
/// fetches again a bounded number of times; anything else fails at once.
public struct RetryPolicy: Sendable, Hashable {
    /// Retries after transient failures, per download.
    public var retries: Int
    /// Fetches again after a size or digest mismatch, per download.
    public var integrityRetries: Int
    /// The first backoff; each further one doubles, up to ``maximumDelay``.
    public var baseDelay: Duration
    /// The longest backoff, and the longest `Retry-After` honoured.
    public var maximumDelay: Duration

    /// Creates a policy; the defaults suit a flaky network: 5 retries from 0.5 s up to 30 s, 2 refetches.
    public init(
        retries: Int = ClientSettings.defaultRetries,
        integrityRetries: Int = 2,
        baseDelay: Duration = .milliseconds(500),
        maximumDelay: Duration = .seconds(30)
    ) {
        self.retries = max(0, retries)
        self.integrityRetries = max(0, integrityRetries)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// What to do after a failure.
    enum Decision: Equatable {
        case retry(after: Duration)
        case refetch
        case fail
    }

    /// Classifies `error`, the `failures`-th transient failure (or `mismatches`-th mismatch) of a download.
    func decide(_ error: AssetPackClientError, failures: Int, mismatches: Int) -> Decision {
        switch error.code {
        case .sizeMismatch, .digestMismatch, .corruptPack:
            return error.retryable && mismatches <= integrityRetries ? .refetch : .fail
        case .network:
            guard error.retryable else { return .fail }
        case .httpStatus:
            guard let status = error.httpStatus, status == 429 || status >= 500 else { return .fail }
        default:
            return .fail
        }
        guard failures <= retries else { return .fail }
        let backoff = Backoff(base: baseDelay, maximum: maximumDelay)
        return .retry(after: backoff.delay(afterFailure: failures, retryAfter: error.retryAfter))
    }

    /// Runs `attempt` until it succeeds or the policy gives up: the one retry loop of the client (the
    /// manifest fetch and every download use it).
    ///
    /// After a transient failure the loop waits (backoff with jitter, or `Retry-After`) and calls `attempt`
    /// again, which resumes from what it kept; after a size or digest mismatch it calls `attempt` again at
    /// once, which must start over (the attempt itself discards what it had, as it knows what that is).
    /// - Parameters:
    ///   - attempt: One try.
    ///   - onRetry: Told about each failure that will be retried (why, the attempt to come, and the wait),
    ///     before the wait.
    /// - Returns: What the successful attempt returned.
    /// - Throws: The last ``AssetPackClientError`` (its message says how many attempts were made), any other
    ///   error at once, or `CancellationError` when cancelled during a wait.
    func run<T: Sendable>(
        _ attempt: () async throws -> T,
        onRetry: (RetryNotice) -> Void = { _ in }
    ) async throws -> T {
        var failures = 0
        var mismatches = 0
        while true {
            do {
                return try await attempt()
            } catch let error as AssetPackClientError {
                if error.isIntegrityFailure { mismatches += 1 } else { failures += 1 }
                let decision = decide(error, failures: failures, mismatches: mismatches)
                switch decision {
                case .fail:
                    var final = error
                    let attempts = failures + mismatches
                    if attempts > 1 { final.message += " (after \(attempts) attempts)" }
                    throw final
                case .refetch:
                    onRetry(
                        RetryNotice(
                            reason: error.reason,
                            attempt: mismatches + 1,
                            of: integrityRetries + 1,
                            delay: .zero
                        )
                    )
                case .retry(let delay):
                    onRetry(RetryNotice(reason: error.reason, attempt: failures + 1, of: retries + 1, delay: delay))
                    try await Task.sleep(for: delay)
                }
            }
        }
    }
}
