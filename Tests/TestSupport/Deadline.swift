import Foundation

/// Runs `body` on a thread of its own and waits up to `seconds` for it, so that a test of something that
/// once hung (an open that waits for a FIFO's writer) fails instead of hanging the run.
///
/// When time runs out, `release` is called to unblock the thread (open the FIFO's other end, say), so that
/// it does not outlive the test, and `nil` is returned.
/// - Returns: What `body` returned or threw, or `nil` when it did not finish in time.
public func finishing<T: Sendable>(
    within seconds: Double,
    release: () -> Void,
    _ body: @escaping @Sendable () throws -> T
) -> Result<T, any Error>? {
    let outcome = Outcome<T>()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        outcome.value = Result { try body() }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else {
        release()
        done.wait()
        return nil
    }
    return outcome.value
}

/// What a thread of ``finishing(within:release:_:)`` returned: written before the semaphore is signalled, read
/// after it is waited for, which orders the two.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    var value: Result<T, any Error>?
}

/// Opens and closes the writing end of the FIFO at `path` without waiting: a reader blocked in `open` wakes
/// and then reads the end of the file.
public func releaseFIFOReader(_ path: String) {
    let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    if fd >= 0 { close(fd) }
}
