import Foundation
import Synchronization
import Testing

@testable import AssetPackFormat

/// The one queue to a thread that blocks, through each way it ends and each choice a sender has when it is
/// full. Receivers run on threads of their own (`BlockingIO.longJob`), as everywhere it is used.
@Suite("BlockingQueue")
struct BlockingQueueTests {
    /// Everything `queue` gives until it ends, received on a thread of its own.
    func drain<T: Sendable>(_ queue: BlockingQueue<T>) async throws -> [T] {
        try await BlockingIO.longJob {
            var received: [T] = []
            while let item = try queue.receive() { received.append(item) }
            return received
        }
    }

    @Test func finishingHandsOverEverythingInOrderThenTheEnd() async throws {
        let queue = BlockingQueue<Int>()
        let receiving = Task { try await drain(queue) }
        for number in 0..<10_000 { #expect(queue.offer(number)) }
        queue.finish()
        #expect(try await receiving.value == Array(0..<10_000))
    }

    @Test func aFullQueueDropsOffersAndCountsThem() {
        let queue = BlockingQueue<[UInt8]>(capacity: 10, cost: { $0.count })
        #expect(queue.offer([1, 2, 3, 4, 5, 6]))
        #expect(!queue.offer([7, 8, 9, 10, 11]))  // 11 bytes would be over 10
        #expect(queue.offer([7, 8, 9, 10]))
        #expect(!queue.offer([0]))
        #expect(queue.droppedCount == 2)
    }

    /// A sender over capacity waits until the receiver has taken half, and no longer.
    @Test func aSenderOverCapacityWaitsUntilHalfIsTaken() async throws {
        let queue = BlockingQueue<[UInt8]>(capacity: 100, cost: { $0.count })
        try await queue.send(Array(repeating: 0, count: 60))  // under capacity: returns at once
        let sent = Flag()
        let sending = Task {
            try await queue.send(Array(repeating: 1, count: 60))  // 120 > 100: waits for 50 or less
            sent.set()
        }
        // Nothing taken: it waits (checked after the sender parked: the queue then holds 120).
        try await Task.sleep(for: .milliseconds(50))
        #expect(!sent.isSet)
        let first = try await BlockingIO.longJob { try queue.receive() }
        #expect(first?.first == 0)  // 60 left: under 100 but not yet half, so it still waits
        try await Task.sleep(for: .milliseconds(50))
        #expect(!sent.isSet)
        let second = try await BlockingIO.longJob { try queue.receive() }
        #expect(second?.first == 1)  // none left
        try await sending.value
        #expect(sent.isSet)
    }

    @Test func aSendersWaitEndsWithItsTasksCancellation() async throws {
        let queue = BlockingQueue<[UInt8]>(capacity: 10, cost: { $0.count })
        let sending = Task { try await queue.send(Array(repeating: 0, count: 20)) }
        sending.cancel()
        await #expect(throws: CancellationError.self) { try await sending.value }
    }

    @Test func aReceiverThatGivesUpStopsItsSendersAtOnce() async throws {
        let queue = BlockingQueue<[UInt8]>(capacity: 10, cost: { $0.count })
        let sending = Task { try await queue.send(Array(repeating: 0, count: 20)) }
        try await Task.sleep(for: .milliseconds(20))
        queue.abandon()
        await #expect(throws: QueueStopped.self) { try await sending.value }
        await #expect(throws: QueueStopped.self) { try await queue.send([1]) }
        #expect(!queue.offer([1]))
    }

    @Test func failingDropsWhatWaitsAndTheReceiverThrowsTheError() async throws {
        struct Broken: Error {}
        let queue = BlockingQueue<Int>()
        queue.offer(1)
        queue.fail(Broken())
        await #expect(throws: Broken.self) { try await drain(queue) }
    }

    @Test func cancellingStopsTheReceiverWithWhatWaitsUnread() async throws {
        let queue = BlockingQueue<Int>(holding: [1, 2, 3])
        queue.cancel()
        #expect(try await drain(queue).isEmpty)
        #expect(!queue.offer(4))
    }

    /// A pool starts holding its items and hands them out as any queue does.
    @Test func aPoolStartsFull() async throws {
        let queue = BlockingQueue<Int>(holding: [7, 8])
        queue.finish()
        #expect(try await drain(queue) == [7, 8])
    }

    /// Done means empty and the receiver back for more: the last item taken was dealt with.
    @Test func doneWaitsForTheReceiverToComeBack() async throws {
        let queue = BlockingQueue<Int>()
        queue.offer(1)
        let release = BlockingQueue<Int>()
        let receiving = Task {
            try await BlockingIO.longJob {
                _ = try queue.receive()  // taken, and held until released
                _ = try release.receive()
                _ = try queue.receive()  // back for more: done with the first
            }
        }
        let held = try await BlockingIO.longJob { queue.waitUntilDone(until: Date().addingTimeInterval(0.2)) }
        #expect(!held)
        release.offer(0)
        let done = try await BlockingIO.longJob { queue.waitUntilDone(until: Date().addingTimeInterval(10)) }
        #expect(done)
        queue.finish()
        try await receiving.value
    }
}

/// Set once, from any thread.
private final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
}
