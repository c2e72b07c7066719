import Synchronization

/// Request lines that come before the URL is printed, held until it is (at most `limit`; the rest are
/// counted and said).
public final class EarlyLines: Sendable {
    private let state = Mutex((lines: [String](), dropped: 0))
    /// Set (under the lock) once the lines are let through; read without it for each later line.
    private let released = Atomic(false)
    private let limit = 1000

    /// Creates an empty holder, closed.
    public init() {}

    /// Keeps `line` while the URL is not printed yet; `false` once it is (write it then).
    public func hold(_ line: String) -> Bool {
        if released.load(ordering: .acquiring) { return false }
        return state.withLock { state in
            guard !released.load(ordering: .relaxed) else { return false }
            if state.lines.count < limit { state.lines.append(line) } else { state.dropped += 1 }
            return true
        }
    }

    /// Hands the lines held to `write`, in order, and lets every later line through.
    public func release(_ write: (String) -> Void) {
        let (lines, dropped) = state.withLock { state in
            released.store(true, ordering: .releasing)
            defer { state.lines = [] }
            return (state.lines, state.dropped)
        }
        for line in lines { write(line) }
        if dropped > 0 { write("(\(dropped) more request lines before the URL were dropped)") }
    }
}
